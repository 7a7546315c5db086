#include "engine/tokenizer/wordpiece_tokenizer.h"

#include <tsl/hopscotch_map.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "engine/tokenizer/unicode_text.h"
#include "engine/tokenizer/wordpiece_spec.h"

namespace ember::engine {
namespace {

TokenSpan Span(size_t start, size_t stop) {
  return TokenSpan{static_cast<uint32_t>(start), static_cast<uint32_t>(stop)};
}

// The span of text `n` bytes (n >= 1) with these sources cover: sources ascend.
TokenSpan Cover(const TokenSpan* src, size_t n) { return TokenSpan{src[0].start, src[n - 1].stop}; }

using namespace unicode;  // NOLINT: this file is the one user of the internal helpers

// ---------------------------------------------------------------------------------------------
// Vocabulary lookup: heterogeneous lookup on string_view, so no key strings are built, in an
// open-addressing map whose buckets hold the keys (short tokens inline): a lookup is about one
// cache line, where std::unordered_map chased a node per lookup (57% of Encode's time on the
// gpu-bench passages; Encode is 1.2x faster with this map, bench/tokenizer.sh).

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenMap = tsl::hopscotch_map<std::string, int32_t, StringHash, std::equal_to<>>;

}  // namespace

// ---------------------------------------------------------------------------------------------

struct WordPieceTokenizer::Impl {
  explicit Impl(WordPieceSpec spec);

  class Sink;  // Per-call output and scratch buffers (Impl itself is immutable).
  void EncodeText(std::string_view text, Sink& sink) const;
  // `base`: the fragment's byte offset in the text (for the sink's spans).
  void EncodeFragment(std::string_view fragment, size_t base, Sink& sink) const;
  void EncodeWord(std::string_view word, bool ascii, Sink& sink) const;
  // `src`: where each byte of `token` came from in the text (null when the sink keeps no spans).
  void EncodeWordPiece(std::string_view token, const TokenSpan* src, Sink& sink) const;
  std::optional<int32_t> MatchSpecial(std::string_view text, size_t pos, size_t* len) const;
  // A call's max_length: as asked (0: the options'), never above the options'.
  size_t Limit(size_t max_length) const {
    return max_length == 0 ? options.max_length : std::min(max_length, options.max_length);
  }
  // Encode, and with `spans` EncodeWithOffsets: [CLS] pieces... [SEP] within max_length.
  Encoding EncodeSingle(std::string_view text, bool truncate, size_t max_length,
                        std::vector<TokenSpan>* spans) const;

  TokenizerOptions options;
  bool strip_accents;
  std::vector<std::string> tokens;
  std::string continuing_prefix;  // "##": a piece that continues a word (Decode glues it on)
  TokenMap word_start;    // Every token, as written (a word's first piece is looked up here).
  TokenMap continuation;  // Tokens with the continuation prefix, stored without it.
  size_t max_word_start_bytes = 0;
  size_t max_continuation_bytes = 0;
  size_t max_input_chars_per_word;
  int32_t unk_id, cls_id, sep_id, pad_id;
  // Special tokens: matched verbatim in the raw text, and kept whole when a whitespace-delimited
  // word equals one after normalization (HF never_split).
  std::vector<std::pair<std::string, int32_t>> specials;
  std::array<bool, 256> special_first_byte{};
};

// Collects ids and enforces max_length. Word pieces are buffered per word because a word that
// fails to segment turns into a single [UNK].
class WordPieceTokenizer::Impl::Sink {
 public:
  Sink(size_t budget, bool truncate, size_t max_length)
      : budget_(budget), truncate_(truncate), max_length_(max_length) {}

  bool full() const { return full_; }

  void Push(int32_t id) {
    if (full_) return;
    if (pushed_ >= budget_) {
      if (!truncate_) {
        throw TokenizerError(TokenizerErrorCode::kTooLong,
                             "text needs more than max_length=" + std::to_string(max_length_) +
                                 " tokens and truncation is off");
      }
      full_ = true;
      truncated = true;
      return;
    }
    ids.push_back(id);
    if (spans != nullptr) spans->push_back(at);
    ++pushed_;
  }
  size_t pushed() const { return pushed_; }  // word pieces pushed (ids beyond any [CLS])

  std::vector<int32_t> ids;
  bool truncated = false;
  // EncodeWithOffsets: each pushed id's span of the text, `at` when it was pushed.
  std::vector<TokenSpan>* spans = nullptr;
  TokenSpan at{};
  // With spans: where each byte of the word being built, and of its normalized form, came from.
  std::vector<TokenSpan> word_src, norm_src;
  std::vector<std::pair<uint32_t, uint32_t>> piece_bytes;  // a token's pieces, in its bytes
  std::string joined, one;
  std::vector<std::int32_t> one_cps;
  // Scratch buffers, reused across words.
  std::string word, raw, normalized;
  std::vector<std::int32_t> cps;
  std::vector<uint32_t> offsets;
  std::vector<int32_t> pieces;

 private:
  size_t budget_;
  bool truncate_;
  size_t max_length_;
  size_t pushed_ = 0;
  bool full_ = false;
};

WordPieceTokenizer::Impl::Impl(WordPieceSpec spec)
    : options(spec.options),
      strip_accents(spec.options.strip_accents.value_or(spec.options.lowercase)),
      tokens(std::move(spec.tokens)),
      continuing_prefix(spec.continuing_prefix),
      max_input_chars_per_word(spec.max_input_chars_per_word) {
  if (options.max_length < 2) BadConfig("max_length must be at least 2 ([CLS] and [SEP])");
  if (tokens.empty()) BadConfig("empty vocabulary");
  if (tokens.size() > static_cast<size_t>(INT32_MAX)) BadConfig("vocabulary too large");
  if (spec.continuing_prefix.empty()) BadConfig("empty continuing_subword_prefix");

  for (size_t id = 0; id < tokens.size(); ++id) {
    const std::string& tok = tokens[id];
    if (tok.empty()) continue;
    try {
      ValidateUtf8(tok);
    } catch (const TokenizerError&) {
      BadConfig("vocabulary token " + std::to_string(id) + " is not valid UTF-8");
    }
    // Like HF (a dict built in file order), a repeated token maps to its last id.
    word_start.insert_or_assign(tok, static_cast<int32_t>(id));
  }
  for (const auto& [tok, id] : word_start) {
    max_word_start_bytes = std::max(max_word_start_bytes, tok.size());
    std::string_view t = tok;
    if (t.starts_with(spec.continuing_prefix) && t.size() > spec.continuing_prefix.size()) {
      t.remove_prefix(spec.continuing_prefix.size());
      continuation.emplace(std::string(t), id);
      max_continuation_bytes = std::max(max_continuation_bytes, t.size());
    }
  }
  auto require = [&](const std::string& name, const char* role) {
    auto it = word_start.find(name);
    if (it == word_start.end())
      BadConfig(std::string(role) + " token '" + name + "' not in vocabulary");
    return it->second;
  };
  unk_id = require(spec.unk, "unknown");
  cls_id = require(spec.cls, "classifier");
  sep_id = require(spec.sep, "separator");
  pad_id = require(spec.pad, "padding");

  if (!options.split_special_tokens) {
    for (const std::string& s : spec.specials) {
      auto it = word_start.find(s);
      if (s.empty() || it == word_start.end()) continue;  // HF only knows specials in the vocab.
      specials.emplace_back(s, it->second);
      special_first_byte[static_cast<unsigned char>(s[0])] = true;
    }
  }
}

std::optional<int32_t> WordPieceTokenizer::Impl::MatchSpecial(std::string_view text, size_t pos,
                                                              size_t* len) const {
  std::optional<int32_t> best;
  size_t best_len = 0;
  for (const auto& [s, id] : specials) {
    if (s.size() > best_len && text.substr(pos, s.size()) == s) {
      best = id;
      best_len = s.size();
    }
  }
  *len = best_len;
  return best;
}

// BasicTokenizer on one fragment of text without special tokens: clean, split CJK, lowercase,
// split on whitespace; every word then goes to EncodeWord().
void WordPieceTokenizer::Impl::EncodeFragment(std::string_view text, size_t base,
                                              Sink& sink) const {
  std::string& word = sink.word;
  word.clear();
  const bool track = sink.spans != nullptr;
  std::vector<TokenSpan>& src = sink.word_src;
  src.clear();
  bool ascii = true;
  // Per word, lowercasing is Python's str.lower() of the whole word, which HF's BasicTokenizer
  // applies only to words that are not special tokens as written: `raw` keeps the word as
  // written to check that.
  const bool per_word = options.lowercase && options.lowercase_rule == LowercaseRule::kPerWord;
  FinalSigma sigma;
  std::string& raw = sink.raw;
  raw.clear();
  auto flush = [&] {
    if (per_word) {
      sigma.End(word);
      // As written means after cleaning and NFC (U+212A KELVIN SIGN is K by then).
      std::string_view as_written = raw;
      if (!ascii) {
        Nfc(raw, sink.cps, sink.normalized);
        as_written = sink.normalized;
      }
      for (const auto& [s, id] : specials) {
        if (as_written == s) {
          if (track) sink.at = Cover(src.data(), src.size());
          sink.Push(id);
          word.clear();
          break;
        }
      }
      raw.clear();
    }
    if (!word.empty()) EncodeWord(word, ascii, sink);
    word.clear();
    src.clear();
    ascii = true;
  };
  for (size_t i = 0; i < text.size() && !sink.full();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      switch (kAsciiClass[b]) {
        case CharClass::kDrop:
          break;
        case CharClass::kSpace:
          flush();
          break;
        default:
          if (per_word) {
            raw.push_back(static_cast<char>(b));
            sigma.See(b, word);
          }
          word.push_back(options.lowercase && b >= 'A' && b <= 'Z' ? static_cast<char>(b + 32)
                                                                   : static_cast<char>(b));
          if (track) src.push_back(Span(base + i - 1, base + i));
          break;
      }
      continue;
    }
    const size_t start = i;
    const char32_t cp = DecodeValid(text, i);
    switch (ClassifyNonAscii(cp, options.tokenize_chinese_chars)) {
      case CharClass::kDrop:
        break;
      case CharClass::kSpace:
        flush();
        break;
      case CharClass::kCjk:
        flush();
        word.assign(text.substr(start, i - start));
        if (track) src.assign(word.size(), Span(base + start, base + i));
        ascii = false;
        flush();
        break;
      case CharClass::kOther:
        if (per_word) {
          raw.append(text.substr(start, i - start));
          const bool candidate = sigma.See(cp, word);
          AppendLower(word, cp);
          if (candidate) sigma.Candidate(word.size() - 2);
        } else if (options.lowercase) {
          AppendLower(word, cp);
        } else {
          word.append(text.substr(start, i - start));
        }
        // Each byte of what the character became comes from the whole character.
        if (track) src.resize(word.size(), Span(base + start, base + i));
        ascii = false;
        break;
    }
  }
  flush();
}

// One whitespace-delimited word, already lowercased if requested: normalize, keep special
// tokens whole, split on punctuation, WordPiece each part.
void WordPieceTokenizer::Impl::EncodeWord(std::string_view word, bool ascii, Sink& sink) const {
  std::string_view norm = word;
  if (!ascii) {
    if (strip_accents) {
      StripAccents(word, sink.cps, sink.normalized);
    } else {
      Nfc(word, sink.cps, sink.normalized);
    }
    norm = sink.normalized;
  }
  const TokenSpan* src = nullptr;
  if (sink.spans != nullptr) {
    src = sink.word_src.data();
    if (!ascii) {
      // Normalized one character at a time, each output byte from its character. Where that
      // is not the word's normal form (NFC composing across characters), every byte is the
      // whole word's.
      sink.joined.clear();
      sink.norm_src.clear();
      for (size_t k = 0; k < word.size();) {
        size_t end = k + 1;
        while (end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) ++end;
        if (strip_accents) {
          StripAccents(word.substr(k, end - k), sink.one_cps, sink.one);
        } else {
          Nfc(word.substr(k, end - k), sink.one_cps, sink.one);
        }
        sink.joined += sink.one;
        sink.norm_src.resize(sink.joined.size(), sink.word_src[k]);
        k = end;
      }
      if (sink.joined != norm) {
        sink.norm_src.assign(norm.size(), Cover(sink.word_src.data(), word.size()));
      }
      src = sink.norm_src.data();
    }
    sink.at = Cover(sink.word_src.data(), word.size());
  }

  // HF never_split: a word that equals a special token after normalization stays whole. (HF
  // checks before and after lowercasing/accent stripping; since `word` is already lowercased
  // and specials contain no marks, the check after normalization covers both.)
  for (const auto& [s, id] : specials) {
    if (norm == s) {
      sink.Push(id);  // at: the whole word
      return;
    }
  }

  // Split on punctuation: every punctuation character is a token of its own.
  size_t run_start = 0;
  for (size_t i = 0; i < norm.size();) {
    const size_t start = i;
    const auto b = static_cast<unsigned char>(norm[i]);
    const bool punct = b < 0x80 ? (++i, IsAsciiPunct(b)) : IsPunctuation(DecodeValid(norm, i));
    if (!punct) continue;
    if (start > run_start) {
      EncodeWordPiece(norm.substr(run_start, start - run_start), src ? src + run_start : nullptr,
                      sink);
    }
    EncodeWordPiece(norm.substr(start, i - start), src ? src + start : nullptr, sink);
    run_start = i;
  }
  if (run_start < norm.size()) {
    EncodeWordPiece(norm.substr(run_start), src ? src + run_start : nullptr, sink);
  }
}

// Greedy longest-match-first WordPiece on one punctuation-free token.
void WordPieceTokenizer::Impl::EncodeWordPiece(std::string_view token, const TokenSpan* src,
                                               Sink& sink) const {
  if (sink.full()) return;
  if (src != nullptr) sink.at = Cover(src, token.size());  // an [UNK]: the whole token
  // Code point boundaries: offsets[k] is the byte offset of the k-th code point.
  std::vector<uint32_t>& off = sink.offsets;
  off.clear();
  for (size_t i = 0; i < token.size(); ++i) {
    if ((static_cast<unsigned char>(token[i]) & 0xC0) != 0x80)
      off.push_back(static_cast<uint32_t>(i));
  }
  const size_t n = off.size();
  if (n > max_input_chars_per_word) {
    sink.Push(unk_id);
    return;
  }
  off.push_back(static_cast<uint32_t>(token.size()));

  std::vector<int32_t>& pieces = sink.pieces;
  pieces.clear();
  sink.piece_bytes.clear();
  size_t start = 0;
  while (start < n) {
    const TokenMap& map = start == 0 ? word_start : continuation;
    const size_t max_bytes = start == 0 ? max_word_start_bytes : max_continuation_bytes;
    size_t end = n;
    while (end > start && off[end] - off[start] > max_bytes) --end;
    int32_t found = -1;
    for (; end > start; --end) {
      auto it = map.find(token.substr(off[start], off[end] - off[start]));
      if (it != map.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      sink.Push(unk_id);
      return;
    }
    pieces.push_back(found);
    if (src != nullptr) sink.piece_bytes.emplace_back(off[start], off[end]);
    start = end;
  }
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (src != nullptr) {
      const auto [from, to] = sink.piece_bytes[k];
      sink.at = Cover(src + from, to - from);
    }
    sink.Push(pieces[k]);
  }
}

// ---------------------------------------------------------------------------------------------

WordPieceTokenizer::WordPieceTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

// The word pieces of `text` (special tokens written in it included; no [CLS] or [SEP]) into
// `sink`, until it is full.
void WordPieceTokenizer::Impl::EncodeText(std::string_view text, Sink& sink) const {
  size_t fragment_start = 0;
  if (!specials.empty()) {
    for (size_t i = 0; i < text.size() && !sink.full();) {
      size_t len = 0;
      std::optional<int32_t> special;
      if (special_first_byte[static_cast<unsigned char>(text[i])]) {
        special = MatchSpecial(text, i, &len);
      }
      if (!special) {
        ++i;
        continue;
      }
      EncodeFragment(text.substr(fragment_start, i - fragment_start), fragment_start, sink);
      sink.at = Span(i, i + len);
      sink.Push(*special);
      i += len;
      fragment_start = i;
    }
  }
  if (!sink.full()) EncodeFragment(text.substr(fragment_start), fragment_start, sink);
}

Encoding WordPieceTokenizer::Impl::EncodeSingle(std::string_view text, bool truncate,
                                                size_t max_length,
                                                std::vector<TokenSpan>* spans) const {
  ValidateUtf8(text);
  max_length = Limit(max_length);
  if (max_length < 2) BadConfig("max_length must be at least 2 ([CLS] and [SEP])");
  Sink sink(max_length - 2, truncate, max_length);
  sink.spans = spans;
  sink.ids.reserve(std::min(max_length, text.size() / 4 + 16));
  sink.ids.push_back(cls_id);
  if (spans != nullptr) spans->push_back({});  // [CLS] and [SEP] come from nowhere
  EncodeText(text, sink);
  sink.ids.push_back(sep_id);
  if (spans != nullptr) spans->push_back({});
  Encoding out;
  out.ids = std::move(sink.ids);
  out.truncated = sink.truncated;
  return out;
}

Encoding WordPieceTokenizer::Encode(std::string_view text, bool truncate, size_t max_length) const {
  return impl_->EncodeSingle(text, truncate, max_length, nullptr);
}

PairEncoding WordPieceTokenizer::EncodePair(std::string_view first, std::string_view second,
                                            bool truncate, size_t max_length) const {
  const Impl& impl = *impl_;
  ValidateUtf8(first);
  ValidateUtf8(second);
  max_length = impl.Limit(max_length);
  if (max_length < 3) BadConfig("max_length must be at least 3 for a pair ([CLS], 2 x [SEP])");
  // Both texts whole: which one is longer decides the cut.
  const size_t unlimited = std::numeric_limits<size_t>::max();
  Impl::Sink a(unlimited, true, max_length);
  Impl::Sink b(unlimited, true, max_length);
  impl.EncodeText(first, a);
  impl.EncodeText(second, b);
  size_t n1 = a.pushed(), n2 = b.pushed();
  const size_t budget = max_length - 3;
  const bool over = n1 + n2 > budget;
  if (over) {
    if (!truncate) {
      throw TokenizerError(TokenizerErrorCode::kTooLong,
                           "the pair needs " + std::to_string(n1 + n2 + 3) + " tokens, more than " +
                               "max_length=" + std::to_string(max_length) +
                               ", and truncation is off");
    }
    // HF tokenizers' "longest_first": the shorter text keeps up to half the budget (the first
    // text when both are as long), the longer one the rest.
    if (n1 <= n2) {
      n1 = std::min(n1, budget / 2);
      n2 = budget - n1;
    } else {
      n2 = std::min(n2, budget / 2);
      n1 = budget - n2;
    }
  }
  PairEncoding out;
  out.ids.reserve(n1 + n2 + 3);
  out.ids.push_back(impl.cls_id);
  out.ids.insert(out.ids.end(), a.ids.begin(), a.ids.begin() + static_cast<std::ptrdiff_t>(n1));
  out.ids.push_back(impl.sep_id);
  out.second_start = out.ids.size();
  out.ids.insert(out.ids.end(), b.ids.begin(), b.ids.begin() + static_cast<std::ptrdiff_t>(n2));
  out.ids.push_back(impl.sep_id);
  out.truncated = over;
  return out;
}

OffsetEncoding WordPieceTokenizer::EncodeWithOffsets(std::string_view text, bool truncate,
                                                     size_t max_length) const {
  OffsetEncoding out;
  Encoding e = impl_->EncodeSingle(text, truncate, max_length, &out.spans);
  out.ids = std::move(e.ids);
  out.truncated = e.truncated;
  return out;
}

std::string WordPieceTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  const Impl& impl = *impl_;
  std::string out;
  bool first = true;
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= impl.tokens.size()) {
      throw TokenizerError(TokenizerErrorCode::kBadConfig,
                           "token id " + std::to_string(id) + " is not in the vocabulary (0.." +
                               std::to_string(impl.tokens.size() - 1) + ")");
    }
    if (skip_special &&
        std::ranges::any_of(impl.specials, [&](const auto& s) { return s.second == id; })) {
      continue;
    }
    std::string_view token = impl.tokens[static_cast<size_t>(id)];
    // HF's WordPiece decoder: a continuation joins the piece before it, any other piece gets a
    // space before it; then each piece is cleaned up on its own (" ." -> ".", " ," -> ",", ...).
    std::string piece;
    if (!first && token.starts_with(impl.continuing_prefix)) {
      piece = token.substr(impl.continuing_prefix.size());
    } else {
      piece = (first ? "" : " ") + std::string(token);
    }
    first = false;
    for (const auto& [from, to] : {std::pair<std::string_view, std::string_view>{" .", "."},
                                   {" ?", "?"},
                                   {" !", "!"},
                                   {" ,", ","},
                                   {" ' ", "'"},
                                   {" n't", "n't"},
                                   {" 'm", "'m"},
                                   {" do not", " don't"},
                                   {" 's", "'s"},
                                   {" 've", "'ve"},
                                   {" 're", "'re"}}) {
      for (size_t at = piece.find(from); at != std::string::npos; at = piece.find(from, at)) {
        piece.replace(at, from.size(), to);
        at += to.size();
      }
    }
    out += piece;
  }
  return out;
}

size_t WordPieceTokenizer::vocab_size() const { return impl_->tokens.size(); }
int32_t WordPieceTokenizer::pad_id() const { return impl_->pad_id; }
int32_t WordPieceTokenizer::unk_id() const { return impl_->unk_id; }
int32_t WordPieceTokenizer::cls_id() const { return impl_->cls_id; }
int32_t WordPieceTokenizer::sep_id() const { return impl_->sep_id; }
const TokenizerOptions& WordPieceTokenizer::options() const { return impl_->options; }

std::optional<int32_t> WordPieceTokenizer::TokenToId(std::string_view token) const {
  auto it = impl_->word_start.find(token);
  if (it == impl_->word_start.end()) return std::nullopt;
  return it->second;
}

std::string_view WordPieceTokenizer::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->tokens.size()) return {};
  return impl_->tokens[static_cast<size_t>(id)];
}

// ---------------------------------------------------------------------------------------------
// Loaders.

WordPieceTokenizer WordPieceTokenizer::FromTokens(std::vector<std::string> tokens,
                                                  const TokenizerOptions& options) {
  WordPieceSpec spec;
  spec.tokens = std::move(tokens);
  spec.options = options;
  return FromSpec(std::move(spec));
}

WordPieceTokenizer WordPieceTokenizer::FromSpec(WordPieceSpec spec) {
  return WordPieceTokenizer(std::make_shared<const Impl>(std::move(spec)));
}

WordPieceTokenizer WordPieceTokenizer::WithMaxLength(size_t max_length) const {
  auto impl = std::make_shared<Impl>(*impl_);
  impl->options.max_length = max_length;
  return WordPieceTokenizer(std::move(impl));
}

WordPieceTokenizer WordPieceTokenizer::WithLowercaseRule(LowercaseRule rule) const {
  if (impl_->options.lowercase_rule == rule) return *this;
  auto impl = std::make_shared<Impl>(*impl_);
  impl->options.lowercase_rule = rule;
  return WordPieceTokenizer(std::move(impl));
}

}  // namespace ember::engine
