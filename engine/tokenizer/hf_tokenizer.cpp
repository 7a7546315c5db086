#include "engine/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "engine/tokenizer/added_vocabulary.h"
#include "engine/tokenizer/decoders.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/normalizers.h"
#include "engine/tokenizer/post_processors.h"
#include "engine/tokenizer/pre_tokenizers.h"
#include "engine/tokenizer/token_model.h"
#include "engine/tokenizer/unicode_text.h"

namespace ember::engine {
namespace {

using json_fields::Json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TokenizerError(TokenizerErrorCode::kIo, "cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw TokenizerError(TokenizerErrorCode::kIo, "cannot read " + path.string());
  return std::move(ss).str();
}

Json ParseJson(std::string_view text, const std::string& where) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    BadConfig(where + ": invalid JSON: " + e.what());
  }
}

// The tokenizer.json transformers' BertConverter makes of a vocab.txt and its options.
Json BertTokenizerJson(const std::filesystem::path& vocab_txt, const Json& config) {
  const std::string data = ReadFile(vocab_txt);
  Json vocab = Json::object();
  // One token per line; "\n", "\r\n" and "\r" all end a line (Python's universal newlines); a
  // token listed twice keeps its last line.
  std::int64_t id = 0;
  for (std::size_t i = 0; i < data.size(); ++id) {
    std::size_t end = data.find_first_of("\r\n", i);
    if (end == std::string::npos) end = data.size();
    vocab[data.substr(i, end - i)] = id;
    i = end + 1;
    if (end + 1 < data.size() && data[end] == '\r' && data[end + 1] == '\n') ++i;
  }
  const auto option = [&](const char* key) -> Json {
    return config.is_object() && config.contains(key) ? config[key] : Json();
  };
  Json normalizer = {{"type", "BertNormalizer"},
                     {"clean_text", true},
                     {"handle_chinese_chars", true},
                     {"strip_accents", nullptr},
                     {"lowercase", true}};
  if (const Json v = option("do_lower_case"); v.is_boolean()) normalizer["lowercase"] = v;
  if (const Json v = option("tokenize_chinese_chars"); v.is_boolean()) {
    normalizer["handle_chinese_chars"] = v;
  }
  if (const Json v = option("strip_accents"); v.is_boolean()) normalizer["strip_accents"] = v;
  Json added = Json::array();
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    if (vocab.contains(special)) {
      added.push_back({{"id", vocab[special]},
                       {"content", special},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", true}});
    }
  }
  for (const char* needed : {"[CLS]", "[SEP]", "[UNK]"}) {
    if (!vocab.contains(needed)) {
      BadConfig(vocab_txt.string() + " has no " + needed + " token");
    }
  }
  const auto special = [&](const char* name) {
    return Json{{"id", name}, {"ids", {vocab[name]}}, {"tokens", {name}}};
  };
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", normalizer},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", "[CLS]:0 $A:0 [SEP]:0"},
            {"pair", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1"},
            {"special_tokens", {{"[CLS]", special("[CLS]")}, {"[SEP]", special("[SEP]")}}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}}};
}

// Only plausible limits count: transformers writes a huge sentinel (1e30) when it knows none.
std::optional<std::size_t> ModelMaxLength(const Json& config) {
  if (!config.is_object()) return std::nullopt;
  const auto it = config.find("model_max_length");
  if (it == config.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (v < 2 || v > 1'000'000) return std::nullopt;
  return static_cast<std::size_t>(v);
}

// The calling thread's sequences for one call (their buffers reused from call to call).
std::vector<TokenSequence>& Sequences(std::size_t n) {
  thread_local std::vector<TokenSequence> sequences;
  sequences.resize(n);
  return sequences;
}

std::size_t CheckedBudget(std::size_t limit, std::size_t added) {
  if (limit != 0 && limit < added) {
    throw TokenizerError(TokenizerErrorCode::kBadConfig, "max_length " + std::to_string(limit) +
                                                             " leaves no room for text beside " +
                                                             std::to_string(added) +
                                                             " special tokens");
  }
  return limit == 0 ? 0 : limit - added;
}

// Marks the BertNormalizers of `normalizer` (and of its Sequences) that lowercase to do so per
// word (their "final_sigma", which only ember reads); returns whether there was one.
bool MarkFinalSigma(Json& normalizer) {
  if (!normalizer.is_object()) return false;
  const std::string type = normalizer.value("type", "");
  if (type == "BertNormalizer" && normalizer.value("lowercase", true)) {
    normalizer["final_sigma"] = true;
    return true;
  }
  bool any = false;
  if (type == "Sequence" && normalizer.contains("normalizers")) {
    for (Json& n : normalizer["normalizers"]) any = MarkFinalSigma(n) || any;
  }
  return any;
}

}  // namespace

HfTokenizer::HfTokenizer() = default;
HfTokenizer::~HfTokenizer() = default;

std::unique_ptr<HfTokenizer> HfTokenizer::FromJsonText(std::string_view json,
                                                       const std::string& where,
                                                       const Options& options) {
  Json j = ParseJson(json, where);
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  try {
    if (!j.is_object()) BadConfig("not a JSON object");
    if (const Json* v = json_fields::Find(j, "version"); v != nullptr && *v != "1.0") {
      BadConfig("tokenizer.json version " + v->dump() + " (ember reads 1.0)");
    }
    t->model_ = MakeTokenModel(json_fields::Required(j, "model", "tokenizer.json"));
    if (options.final_sigma_per_word &&
        (!j.contains("normalizer") || !MarkFinalSigma(j["normalizer"]))) {
      BadConfig("lowercase = \"per-word\" needs a BertNormalizer that lowercases");
    }
    t->normalizer_ = MakeNormalizer(j.value("normalizer", Json()));
    t->pre_tokenizer_ = MakePreTokenizer(j.value("pre_tokenizer", Json()));
    t->added_ = std::make_unique<AddedVocabulary>(j.value("added_tokens", Json()), *t->model_,
                                                  t->normalizer_.get());
    const HfTokenizer* self = t.get();
    t->post_processor_ =
        MakePostProcessor(j.value("post_processor", Json()),
                          [self](std::string_view token) { return self->TokenToId(token); });
    t->decoder_ = MakeDecoder(j.value("decoder", Json()));
    // (The file's own "truncation" is a default of HF's encode() that transformers and
    // sentence-transformers replace with the model's limit on every call: not a limit here.)
    t->max_length_ = options.max_length;
    t->needs_alignments_ = t->pre_tokenizer_ && t->pre_tokenizer_->NeedsOriginalOffsets();
  } catch (const TokenizerError& e) {
    if (e.code() != TokenizerErrorCode::kBadConfig) throw;
    BadConfig(where + ": " + e.what());
  } catch (const Json::exception& e) {
    BadConfig(where + ": " + e.what());
  }
  return t;
}

std::unique_ptr<HfTokenizer> HfTokenizer::FromFile(const std::filesystem::path& path,
                                                   const Options& options) {
  return FromJsonText(ReadFile(path), path.string(), options);
}

std::unique_ptr<HfTokenizer> HfTokenizer::FromDirectory(const std::filesystem::path& dir,
                                                        Options options) {
  Json config;
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    config = ParseJson(ReadFile(config_path), config_path.string());
  }
  if (options.max_length == 0) options.max_length = ModelMaxLength(config).value_or(0);
  if (std::filesystem::exists(dir / "tokenizer.json")) {
    return FromFile(dir / "tokenizer.json", options);
  }
  const auto vocab = dir / "vocab.txt";
  if (!std::filesystem::exists(vocab)) {
    throw TokenizerError(TokenizerErrorCode::kIo,
                         dir.string() + " has neither tokenizer.json nor vocab.txt");
  }
  return FromJsonText(BertTokenizerJson(vocab, config).dump(), vocab.string(), options);
}

std::size_t HfTokenizer::Limit(std::size_t asked) const {
  if (asked == 0) return max_length_;
  return max_length_ == 0 ? asked : std::min(asked, max_length_);
}

void HfTokenizer::EncodeText(std::string_view text, std::uint32_t type_id, bool offsets,
                             std::size_t limit, TokenSequence& out) const {
  thread_local PreTokenizedString pre;
  const bool track = offsets || needs_alignments_;
  added_->ExtractAndNormalize(text, normalizer_.get(), track, pre);
  out.Clear();
  out.with_offsets = offsets;
  out.original = text;
  std::vector<Split>& splits = pre.splits();
  std::vector<Token>& pool = pre.tokens();
  if (!track) {
    // The serving path: ids only, the pre-tokenizer's pieces given to the model as plain
    // strings (pre_tokenizers.h). The same ids as below.
    thread_local std::vector<Token> word;
    std::size_t total = 0;
    auto tokenize = [&](std::string_view piece) {
      word.clear();
      model_->Tokenize(piece, word);
      for (const Token& t : word) out.ids.push_back(t.id);
      total += word.size();
      return limit == 0 || total < limit;
    };
    for (const Split& s : splits) {
      if (s.tokenized) {
        out.ids.push_back(pool[s.first].id);
        total += s.count;
        continue;
      }
      const bool go_on = pre_tokenizer_
                             ? pre_tokenizer_->EachPiece(s.text.get(), PieceSink(tokenize))
                             : tokenize(s.text.get());
      if (!go_on) break;
    }
    out.type_ids.assign(out.ids.size(), type_id);
    return;
  }
  if (pre_tokenizer_) pre_tokenizer_->PreTokenize(pre);
  // The model tokenizes split after split until `limit` tokens are reached (HF's
  // tokenize_with_limit); the splits after that are dropped.
  std::size_t total = 0, last = 0;
  for (std::size_t i = 0; i < splits.size(); ++i) {
    Split& s = splits[i];
    if (!s.tokenized) {
      s.first = static_cast<std::uint32_t>(pool.size());
      model_->Tokenize(s.text.get(), pool);
      s.count = static_cast<std::uint32_t>(pool.size() - s.first);
      s.tokenized = true;
    }
    total += s.count;
    last = i + 1;
    if (limit != 0 && total >= limit) break;
  }
  splits.resize(last);
  out.ids.reserve(total);
  for (const Split& s : splits) {
    for (std::uint32_t k = s.first; k < s.first + s.count; ++k) {
      const Token& t = pool[k];
      out.ids.push_back(t.id);
      out.type_ids.push_back(type_id);
      if (!offsets) continue;
      if (const auto original = s.text.ToOriginal(t.begin, t.end)) {
        out.offsets.emplace_back(s.text.shift() + original->first,
                                 s.text.shift() + original->second);
      } else {
        out.offsets.emplace_back(t.begin, t.end);
      }
      out.texts.push_back(t.literal
                              ? std::string_view(s.text.get()).substr(t.begin, t.end - t.begin)
                              : IdToToken(t.id));
    }
  }
}

Encoding HfTokenizer::Finish(std::vector<TokenSequence>& sequences, bool truncated) const {
  if (post_processor_) post_processor_->Process(sequences);
  TokenSequence& all = sequences[0];
  for (std::size_t i = 1; i < sequences.size(); ++i) all.Append(sequences[i]);
  Encoding out;
  out.truncated = truncated;
  out.ids.assign(all.ids.begin(), all.ids.end());  // the scratch keeps its capacity
  if (all.with_offsets) {
    out.spans.reserve(all.offsets.size());
    for (const auto& [start, stop] : all.offsets) {
      out.spans.push_back({static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(stop)});
    }
  }
  // A second segment: where type 1 starts, all before it type 0 and all after it type 1.
  const auto first_one = std::find(all.type_ids.begin(), all.type_ids.end(), 1u);
  if (first_one != all.type_ids.end()) {
    if (std::any_of(first_one, all.type_ids.end(), [](std::uint32_t t) { return t != 1; }) ||
        std::any_of(all.type_ids.begin(), first_one, [](std::uint32_t t) { return t != 0; })) {
      BadConfig("the pair's token types are not one segment of 0s and one of 1s");
    }
    out.second_start = static_cast<std::size_t>(first_one - all.type_ids.begin());
  }
  return out;
}

Encoding HfTokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  unicode::ValidateUtf8(text);
  const std::size_t limit = Limit(options.max_length);
  const std::size_t budget =
      CheckedBudget(limit, post_processor_ ? post_processor_->AddedTokens(false) : 0);
  std::vector<TokenSequence>& sequences = Sequences(1);
  // The model stops once it has more than the limit (HF's stops at the limit itself: the same
  // ids once truncated); one more, so that a text of exactly `budget` ids with nothing left
  // over is told from a longer one when truncation is off.
  EncodeText(text, 0, options.offsets, limit == 0 ? 0 : limit + 1, sequences[0]);
  bool truncated = false;
  if (limit != 0 && sequences[0].size() > budget) {
    if (!options.truncate) {
      throw TokenizerError(TokenizerErrorCode::kTooLong,
                           "text needs more than max_length=" + std::to_string(limit) +
                               " tokens and truncation is off");
    }
    sequences[0].Truncate(budget);
    truncated = true;
  }
  return Finish(sequences, truncated);
}

Encoding HfTokenizer::EncodePair(std::string_view first, std::string_view second,
                                 const EncodeOptions& options) const {
  unicode::ValidateUtf8(first);
  unicode::ValidateUtf8(second);
  const std::size_t limit = Limit(options.max_length);
  const std::size_t budget =
      CheckedBudget(limit, post_processor_ ? post_processor_->AddedTokens(true) : 0);
  // Both texts whole: HF cuts a pair by their full lengths.
  std::vector<TokenSequence>& sequences = Sequences(2);
  EncodeText(first, 0, options.offsets, 0, sequences[0]);
  EncodeText(second, 1, options.offsets, 0, sequences[1]);
  std::size_t n1 = sequences[0].size(), n2 = sequences[1].size();
  bool truncated = false;
  if (limit != 0 && n1 + n2 > budget) {
    if (!options.truncate) {
      throw TokenizerError(TokenizerErrorCode::kTooLong,
                           "the pair needs more than max_length=" + std::to_string(limit) +
                               " tokens and truncation is off");
    }
    // HF's "longest_first": the shorter keeps what it can up to half, the longer the rest.
    const bool swap = n1 > n2;
    if (swap) std::swap(n1, n2);
    n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
    if (n1 + n2 > budget) {
      n1 = budget / 2;
      n2 = n1 + budget % 2;
    }
    if (swap) std::swap(n1, n2);
    sequences[0].Truncate(n1);
    sequences[1].Truncate(n2);
    truncated = true;
  }
  return Finish(sequences, truncated);
}

std::string HfTokenizer::Decode(std::span<const std::int32_t> ids, bool skip_special) const {
  const std::size_t limit = vocab_size();
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const std::int32_t id : ids) {
    if (id < 0 || static_cast<std::size_t>(id) >= limit) {
      BadConfig("token id " + std::to_string(id) + " is not in the vocabulary (0.." +
                std::to_string(limit - 1) + ")");
    }
    const std::string_view token = IdToToken(id);
    if (token.empty()) continue;  // a hole in the vocabulary
    if (skip_special && added_->IsSpecialContent(token)) continue;
    tokens.emplace_back(token);
  }
  std::string out;
  if (decoder_) {
    decoder_->DecodeChain(tokens);
    for (const std::string& t : tokens) out += t;
    return out;
  }
  for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
  return out;
}

std::size_t HfTokenizer::vocab_size() const {
  return std::max(model_->id_limit(), added_->id_limit());
}

std::string_view HfTokenizer::IdToToken(std::int32_t id) const {
  if (const auto added = added_->IdToToken(id)) return *added;
  return model_->IdToToken(id);
}

std::optional<std::int32_t> HfTokenizer::TokenToId(std::string_view token) const {
  if (const auto added = added_->TokenToId(token)) return added;
  return model_->TokenToId(token);
}

bool HfTokenizer::IsSpecial(std::int32_t id) const {
  const std::string_view token = IdToToken(id);
  return !token.empty() && added_->IsSpecialContent(token);
}

}  // namespace ember::engine
