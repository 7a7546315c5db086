#include "engine/tokenizer/post_processors.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/tokenizer/byte_level_alphabet.h"
#include "engine/tokenizer/json_fields.h"
#include "engine/tokenizer/unicode_text.h"

namespace ember::engine {
namespace {

using json_fields::Json;

// A special token the processor adds: its text(s) and id(s) (a template's may be several).
struct Special {
  std::vector<std::int32_t> ids;
  std::vector<std::string> texts;
};

void AppendSpecial(TokenSequence& seq, const Special& s, std::uint32_t type) {
  for (std::size_t i = 0; i < s.ids.size(); ++i) {
    seq.ids.push_back(s.ids[i]);
    seq.type_ids.push_back(type);
    if (seq.with_offsets) {
      seq.offsets.emplace_back(0, 0);
      seq.texts.emplace_back(s.texts[i]);
    }
  }
}

Special ParseIdPair(const Json& spec, const char* key, const std::string& where) {
  const Json& j = json_fields::Required(spec, key, where);
  if (!j.is_array() || j.size() != 2 || !j[0].is_string() || !j[1].is_number_unsigned()) {
    BadConfig(where + ": \"" + key + "\" must be [token, id]");
  }
  return Special{{static_cast<std::int32_t>(j[1].get<std::uint64_t>())}, {j[0].get<std::string>()}};
}

// HF's process_offsets: a token's leading / trailing spaces (' ', or the byte-level alphabet's
// space 'Ġ') taken off its offsets, one character of the text for each. (HF's Python offsets,
// which the parity tests hold ember to, count characters here; its byte offsets would move
// by bytes and could end inside a character.)
void TrimOffsets(TokenSequence& seq, bool add_prefix_space) {
  if (!seq.with_offsets) return;
  // The start of each character of the original, and its end: character <-> byte.
  std::vector<std::size_t> starts;
  for (std::size_t b = 0; b < seq.original.size(); ++b) {
    if ((static_cast<unsigned char>(seq.original[b]) & 0xC0) != 0x80) starts.push_back(b);
  }
  starts.push_back(seq.original.size());
  const auto char_of = [&](std::size_t byte) {  // the character holding `byte`
    const auto it = std::upper_bound(starts.begin(), starts.end(), byte);
    return static_cast<std::size_t>(it - starts.begin()) - 1;
  };
  const auto is_space = [](char32_t c) { return c == kByteLevelChar[' '] || hf::IsWhitespace(c); };
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const std::string_view text = seq.texts[i];
    std::vector<char32_t> chars;
    for (std::size_t k = 0; k < text.size();) chars.push_back(unicode::DecodeValid(text, k));
    std::size_t leading = 0, trailing = 0;
    while (leading < chars.size() && is_space(chars[leading])) ++leading;
    while (trailing < chars.size() && is_space(chars[chars.size() - 1 - trailing])) ++trailing;
    if (leading == 0 && trailing == 0) continue;
    auto& [start_byte, stop_byte] = seq.offsets[i];
    std::size_t start = char_of(start_byte), stop = char_of(stop_byte);
    if (leading > 0) {
      const bool first = i == 0 || start == 0;
      if (first && add_prefix_space && leading == 1) leading = 0;
      start = std::min(start + leading, stop);
    }
    if (trailing > 0 && stop >= trailing) stop = std::max(stop - trailing, start);
    start_byte = starts[std::min(start, starts.size() - 1)];
    stop_byte = starts[std::min(stop, starts.size() - 1)];
  }
}

class BertProcessing final : public PostProcessor {
 public:
  explicit BertProcessing(const Json& spec)
      : sep_(ParseIdPair(spec, "sep", "BertProcessing")),
        cls_(ParseIdPair(spec, "cls", "BertProcessing")) {}
  std::size_t AddedTokens(bool pair) const override { return pair ? 3 : 2; }
  void Process(std::vector<TokenSequence>& seqs) const override {
    TokenSequence a;
    a.with_offsets = seqs[0].with_offsets;
    a.original = seqs[0].original;
    AppendSpecial(a, cls_, 0);
    seqs[0].SetTypes(0);
    a.Append(seqs[0]);
    AppendSpecial(a, sep_, 0);
    seqs[0] = std::move(a);
    if (seqs.size() > 1) {
      seqs[1].SetTypes(1);
      AppendSpecial(seqs[1], sep_, 1);
    }
  }

 private:
  Special sep_, cls_;
};

class RobertaProcessing final : public PostProcessor {
 public:
  explicit RobertaProcessing(const Json& spec)
      : sep_(ParseIdPair(spec, "sep", "RobertaProcessing")),
        cls_(ParseIdPair(spec, "cls", "RobertaProcessing")),
        trim_offsets_(json_fields::Bool(spec, "trim_offsets", true, "RobertaProcessing")),
        add_prefix_space_(json_fields::Bool(spec, "add_prefix_space", true, "RobertaProcessing")) {}
  std::size_t AddedTokens(bool pair) const override { return pair ? 4 : 2; }
  void Process(std::vector<TokenSequence>& seqs) const override {
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      if (trim_offsets_) TrimOffsets(seqs[i], add_prefix_space_);
      seqs[i].SetTypes(0);  // RoBERTa has one token type
      TokenSequence framed;
      framed.with_offsets = seqs[i].with_offsets;
      framed.original = seqs[i].original;
      AppendSpecial(framed, i == 0 ? cls_ : sep_, 0);
      framed.Append(seqs[i]);
      AppendSpecial(framed, sep_, 0);
      seqs[i] = std::move(framed);
    }
  }

 private:
  Special sep_, cls_;
  bool trim_offsets_, add_prefix_space_;
};

// Offsets without their spaces; no tokens added.
class ByteLevelProcessing final : public PostProcessor {
 public:
  explicit ByteLevelProcessing(const Json& spec)
      : trim_offsets_(json_fields::Bool(spec, "trim_offsets", true, "ByteLevel")),
        add_prefix_space_(json_fields::Bool(spec, "add_prefix_space", true, "ByteLevel")) {}
  std::size_t AddedTokens(bool) const override { return 0; }
  void Process(std::vector<TokenSequence>& seqs) const override {
    if (!trim_offsets_) return;
    for (TokenSequence& s : seqs) TrimOffsets(s, add_prefix_space_);
  }

 private:
  bool trim_offsets_, add_prefix_space_;
};

class TemplateProcessing final : public PostProcessor {
 public:
  TemplateProcessing(const Json& spec,
                     const std::function<std::optional<std::int32_t>(std::string_view)>& token_id) {
    if (const Json* specials = json_fields::Find(spec, "special_tokens")) {
      if (!specials->is_object()) BadConfig("TemplateProcessing: special_tokens must be an object");
      for (const auto& [name, s] : specials->items()) {
        const std::string where = "TemplateProcessing: special token '" + name + "'";
        const Json& ids = json_fields::Required(s, "ids", where);
        const Json& tokens = json_fields::Required(s, "tokens", where);
        if (!ids.is_array() || !tokens.is_array() || ids.size() != tokens.size()) {
          BadConfig(where + ": ids and tokens must be lists of one length");
        }
        Special special;
        for (std::size_t i = 0; i < ids.size(); ++i) {
          if (!ids[i].is_number_unsigned() || !tokens[i].is_string())
            BadConfig(where + " is malformed");
          special.ids.push_back(static_cast<std::int32_t>(ids[i].get<std::uint64_t>()));
          special.texts.push_back(tokens[i].get<std::string>());
        }
        specials_.emplace(name, std::move(special));
      }
    }
    single_ = ParseTemplate(json_fields::Required(spec, "single", "TemplateProcessing"), token_id);
    pair_ = ParseTemplate(json_fields::Required(spec, "pair", "TemplateProcessing"), token_id);
    added_single_ = Count(single_);
    added_pair_ = Count(pair_);
  }
  std::size_t AddedTokens(bool pair) const override { return pair ? added_pair_ : added_single_; }
  void Process(std::vector<TokenSequence>& seqs) const override {
    thread_local TokenSequence out;
    out.Clear();
    out.with_offsets = seqs[0].with_offsets;
    out.original = seqs[0].original;
    for (const Piece& p : seqs.size() > 1 ? pair_ : single_) {
      if (p.sequence >= 0) {
        if (static_cast<std::size_t>(p.sequence) >= seqs.size()) continue;
        TokenSequence& s = seqs[static_cast<std::size_t>(p.sequence)];
        s.SetTypes(p.type_id);
        out.Append(s);
      } else {
        AppendSpecial(out, specials_.at(p.special), p.type_id);
      }
    }
    seqs.resize(1);
    std::swap(seqs[0], out);  // both keep their buffers for the next call
  }

 private:
  struct Piece {
    int sequence = -1;  // 0: $A, 1: $B; -1: the special token `special`
    std::string special;
    std::uint32_t type_id = 0;
  };

  std::vector<Piece> ParseTemplate(
      const Json& list,
      const std::function<std::optional<std::int32_t>(std::string_view)>& token_id) {
    // A list of {"Sequence": {...}} / {"SpecialToken": {...}}, or HF's string form "[CLS]:0 $A:0".
    std::vector<Piece> out;
    if (list.is_string()) {
      const std::string text = list.get<std::string>();
      std::size_t at = 0;
      while (at < text.size()) {
        std::size_t end = text.find(' ', at);
        if (end == std::string::npos) end = text.size();
        out.push_back(ParseStringPiece(text.substr(at, end - at), token_id));
        at = end + 1;
      }
      return out;
    }
    if (!list.is_array()) BadConfig("TemplateProcessing: a template must be a list");
    for (const Json& item : list) {
      Piece p;
      if (const auto it = item.find("Sequence"); it != item.end()) {
        const std::string id = json_fields::String(*it, "id", "TemplateProcessing");
        if (id != "A" && id != "B") BadConfig("TemplateProcessing: sequence \"" + id + "\"");
        p.sequence = id == "A" ? 0 : 1;
        p.type_id = static_cast<std::uint32_t>(
            json_fields::Unsigned(*it, "type_id", 0, "TemplateProcessing"));
      } else if (const auto st = item.find("SpecialToken"); st != item.end()) {
        p.special = json_fields::String(*st, "id", "TemplateProcessing");
        p.type_id = static_cast<std::uint32_t>(
            json_fields::Unsigned(*st, "type_id", 0, "TemplateProcessing"));
        Resolve(p.special, token_id);
      } else {
        BadConfig("TemplateProcessing: template piece " + item.dump());
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  Piece ParseStringPiece(
      const std::string& s,
      const std::function<std::optional<std::int32_t>(std::string_view)>& token_id) {
    Piece p;
    std::string name = s;
    if (const std::size_t colon = s.rfind(':'); colon != std::string::npos && colon > 0) {
      name = s.substr(0, colon);
      try {
        p.type_id = static_cast<std::uint32_t>(std::stoul(s.substr(colon + 1)));
      } catch (const std::exception&) {
        BadConfig("TemplateProcessing: template piece \"" + s + "\"");
      }
    }
    if (name == "$A" || name == "$B") {
      p.sequence = name == "$A" ? 0 : 1;
    } else if (name.size() > 1 && name[0] == '$') {  // $0, $1: sequence A with that type
      p.sequence = 0;
      p.type_id = static_cast<std::uint32_t>(std::stoul(name.substr(1)));
    } else {
      p.special = name;
      Resolve(p.special, token_id);
    }
    return p;
  }

  // A special token the template names must be defined (or, failing that, a token).
  void Resolve(const std::string& name,
               const std::function<std::optional<std::int32_t>(std::string_view)>& token_id) {
    if (specials_.contains(name)) return;
    const auto id = token_id(name);
    if (!id) BadConfig("TemplateProcessing: special token '" + name + "' is not defined");
    specials_.emplace(name, Special{{*id}, {name}});
  }

  std::size_t Count(const std::vector<Piece>& pieces) const {
    std::size_t n = 0;
    for (const Piece& p : pieces) n += p.sequence < 0 ? specials_.at(p.special).ids.size() : 0;
    return n;
  }

  std::map<std::string, Special> specials_;
  std::vector<Piece> single_, pair_;
  std::size_t added_single_ = 0, added_pair_ = 0;
};

class SequenceProcessing final : public PostProcessor {
 public:
  SequenceProcessing(const Json& spec,
                     const std::function<std::optional<std::int32_t>(std::string_view)>& token_id) {
    const Json& list = json_fields::Required(spec, "processors", "Sequence post-processor");
    if (!list.is_array()) BadConfig("Sequence post-processor: \"processors\" must be a list");
    for (const Json& item : list) {
      if (auto p = MakePostProcessor(item, token_id)) parts_.push_back(std::move(p));
    }
  }
  std::size_t AddedTokens(bool pair) const override {
    std::size_t n = 0;
    for (const auto& p : parts_) n += p->AddedTokens(pair);
    return n;
  }
  void Process(std::vector<TokenSequence>& seqs) const override {
    for (const auto& p : parts_) p->Process(seqs);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

}  // namespace

void TokenSequence::Truncate(std::size_t n) {
  if (n >= ids.size()) return;
  ids.resize(n);
  type_ids.resize(n);
  if (with_offsets) {
    offsets.resize(n);
    texts.resize(n);
  }
}

void TokenSequence::Append(const TokenSequence& other) {
  ids.insert(ids.end(), other.ids.begin(), other.ids.end());
  type_ids.insert(type_ids.end(), other.type_ids.begin(), other.type_ids.end());
  if (with_offsets) {
    offsets.insert(offsets.end(), other.offsets.begin(), other.offsets.end());
    texts.insert(texts.end(), other.texts.begin(), other.texts.end());
  }
}

std::unique_ptr<PostProcessor> MakePostProcessor(
    const Json& spec,
    const std::function<std::optional<std::int32_t>(std::string_view)>& token_id) {
  if (spec.is_null()) return nullptr;
  const std::string type = json_fields::TypeOf(spec, "post_processor");
  if (type == "BertProcessing") return std::make_unique<BertProcessing>(spec);
  if (type == "RobertaProcessing") return std::make_unique<RobertaProcessing>(spec);
  if (type == "ByteLevel") return std::make_unique<ByteLevelProcessing>(spec);
  if (type == "TemplateProcessing") return std::make_unique<TemplateProcessing>(spec, token_id);
  if (type == "Sequence") return std::make_unique<SequenceProcessing>(spec, token_id);
  BadConfig("post_processor type \"" + type +
            "\" is not supported (ember reads BertProcessing, RobertaProcessing, "
            "TemplateProcessing, ByteLevel, Sequence)");
}

}  // namespace ember::engine
