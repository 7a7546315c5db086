#include "worker/wordpiece_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace ember::worker {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxInputCharsPerWord = 100;  // HF WordpieceTokenizer default.

// ---------------------------------------------------------------------------------------------
// UTF-8

// Strict RFC 3629 validation: rejects stray continuation bytes, truncated sequences, overlong
// forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF. Throws kBadUtf8 with the
// byte offset of the first offending sequence. After this, decoding can skip all checks.
void ValidateUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII fast path, eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t chunk;
      std::memcpy(&chunk, p + i, 8);
      if (chunk & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned char b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // Allowed range of the second byte.
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;  // Overlong.
      if (b == 0xED) hi = 0x9F;  // Surrogates.
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;  // Overlong.
      if (b == 0xF4) hi = 0x8F;  // Above U+10FFFF.
    } else {
      throw TokenizerError(TokenizerErrorCode::kBadUtf8,
                           "invalid UTF-8 lead byte at offset " + std::to_string(i));
    }
    if (i + len > n) {
      throw TokenizerError(TokenizerErrorCode::kBadUtf8,
                           "truncated UTF-8 sequence at offset " + std::to_string(i));
    }
    if (p[i + 1] < lo || p[i + 1] > hi) {
      throw TokenizerError(TokenizerErrorCode::kBadUtf8,
                           "invalid UTF-8 sequence at offset " + std::to_string(i));
    }
    for (size_t k = 2; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) {
        throw TokenizerError(TokenizerErrorCode::kBadUtf8,
                             "invalid UTF-8 sequence at offset " + std::to_string(i));
      }
    }
    i += len;
  }
}

// Decodes one code point from validated UTF-8 and advances `i`.
inline char32_t DecodeValid(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const unsigned char b = p[0];
  if (b < 0x80) {
    i += 1;
    return b;
  }
  if (b < 0xE0) {
    i += 2;
    return (char32_t{b & 0x1Fu} << 6) | (p[1] & 0x3Fu);
  }
  if (b < 0xF0) {
    i += 3;
    return (char32_t{b & 0x0Fu} << 12) | (char32_t{p[1] & 0x3Fu} << 6) | (p[2] & 0x3Fu);
  }
  i += 4;
  return (char32_t{b & 0x07u} << 18) | (char32_t{p[1] & 0x3Fu} << 12) |
         (char32_t{p[2] & 0x3Fu} << 6) | (p[3] & 0x3Fu);
}

inline void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

inline bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Character classes (HF BasicTokenizer's _is_control, _is_whitespace, _is_punctuation,
// _is_chinese_char, plus the extra separators of Python's str.split()).

enum class CharClass : uint8_t {
  kDrop,   // Removed by clean-text: U+0000, U+FFFD, categories Cc Cf Cs Co Cn (not \t\n\r).
  kSpace,  // Word separator.
  kCjk,    // CJK ideograph: a word of its own (when tokenize_chinese_chars).
  kOther,  // Part of a word.
};

constexpr std::array<CharClass, 128> MakeAsciiClasses() {
  std::array<CharClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      t[c] = CharClass::kSpace;
    } else if (c < 0x20 || c == 0x7F) {
      t[c] = CharClass::kDrop;  // Cc.
    } else {
      t[c] = CharClass::kOther;
    }
  }
  return t;
}
constexpr std::array<CharClass, 128> kAsciiClass = MakeAsciiClasses();

constexpr bool IsAsciiPunct(unsigned c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
         (c >= 123 && c <= 126);
}

inline bool IsChineseChar(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

inline utf8proc_category_t Category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

CharClass ClassifyNonAscii(char32_t cp, bool split_cjk) {
  if (cp == 0xFFFD) return CharClass::kDrop;
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return CharClass::kDrop;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:  // U+2028: kept by clean-text but split on by str.split().
    case UTF8PROC_CATEGORY_ZP:  // U+2029: same.
      return CharClass::kSpace;
    default:
      break;
  }
  if (split_cjk && IsChineseChar(cp)) return CharClass::kCjk;
  return CharClass::kOther;
}

inline bool IsPunctuation(char32_t cp) {
  if (cp < 0x80) return IsAsciiPunct(cp);
  switch (Category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// Python's str.lower() per character: the Unicode full lowercase mapping. The only
// unconditional multi-character lowercase mapping is U+0130 -> "i\u0307"; the one conditional
// rule of the default locale, Final_Sigma, is FinalSigma's below (LowercaseRule::kPerWord).
inline void AppendLower(std::string& out, char32_t cp) {
  if (cp == 0x130) {
    out.push_back('i');
    AppendUtf8(out, 0x307);
    return;
  }
  AppendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

// Unicode's Final_Sigma context, as Python's str.lower() applies it to a word: U+03A3 becomes
// "ς" when a cased letter precedes it and none follows, skipping case-ignorable characters
// both ways (\p{cased} \p{case-ignorable}* U+03A3 !(\p{case-ignorable}* \p{cased})). Fed
// one character at a time; a capital sigma is written as "σ" and turned into "ς" in place (both
// are two bytes) once the characters after it show it ended its word.
class FinalSigma {
 public:
  // Before `cp` is appended to `word`. Returns whether `cp` is a capital sigma that may end
  // the word: then call Candidate() once its "σ" is appended.
  bool See(char32_t cp, std::string& word) {
    if (CaseIgnorable(cp)) return false;
    const bool cased = Cased(cp);
    if (pending_) Settle(word, /*final=*/!cased);
    const bool candidate = cp == 0x3A3 && after_cased_;
    after_cased_ = cased;
    return candidate;
  }
  // The "σ" of a candidate sigma starts at byte `at` of the word.
  void Candidate(std::size_t at) { pending_ = at + 2; }  // its second byte, +1 (0: none)
  // The word ends.
  void End(std::string& word) {
    if (pending_) Settle(word, /*final=*/true);
    after_cased_ = false;
  }

 private:
  void Settle(std::string& word, bool final) {
    if (final) word[pending_ - 1] = static_cast<char>(0x82);  // U+03C2 is CF 82, U+03C3 CF 83
    pending_ = 0;
  }
  // Unicode's Cased: Lowercase, Uppercase or Lt. Letters with a case mapping, plus the
  // Other_Lowercase / Other_Uppercase characters that have none (modifier letters, ...).
  static bool Cased(char32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    const auto c = static_cast<utf8proc_int32_t>(cp);
    switch (utf8proc_category(c)) {
      case UTF8PROC_CATEGORY_LU:
      case UTF8PROC_CATEGORY_LL:
      case UTF8PROC_CATEGORY_LT:
        return true;
      default:
        break;
    }
    if (utf8proc_tolower(c) != c || utf8proc_toupper(c) != c) return true;
    // Other_Lowercase and Other_Uppercase without case mappings (PropList.txt, Unicode 15).
    static constexpr std::pair<char32_t, char32_t> kOther[] = {
        {0xAA, 0xAA},       {0xBA, 0xBA},       {0x2B0, 0x2B8},     {0x2C0, 0x2C1},
        {0x2E0, 0x2E4},     {0x345, 0x345},     {0x37A, 0x37A},     {0x10FC, 0x10FC},
        {0x1D2C, 0x1D6A},   {0x1D78, 0x1D78},   {0x1D9B, 0x1DBF},   {0x2071, 0x2071},
        {0x207F, 0x207F},   {0x2090, 0x209C},   {0x2170, 0x217F},   {0x24D0, 0x24E9},
        {0x2C7C, 0x2C7D},   {0xA69C, 0xA69D},   {0xA770, 0xA770},   {0xA7F2, 0xA7F4},
        {0xA7F8, 0xA7F9},   {0xAB5C, 0xAB5F},   {0xAB69, 0xAB69},   {0x10780, 0x10780},
        {0x10783, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x1E030, 0x1E06D},
        {0x2160, 0x216F},   {0x24B6, 0x24CF},   {0x1F130, 0x1F149}, {0x1F150, 0x1F169},
        {0x1F170, 0x1F189},
    };
    for (const auto& [lo, hi] : kOther) {
      if (cp >= lo && cp <= hi) return true;
    }
    return false;
  }
  // Unicode's Case_Ignorable: Mn, Me, Cf, Lm, Sk, and Word_Break MidLetter, MidNumLet and
  // Single_Quote (the apostrophe, period, colon and their look-alikes).
  static bool CaseIgnorable(char32_t cp) {
    switch (cp) {
      case 0x27:
      case 0x2E:
      case 0x3A:
      case 0x5E:
      case 0x60:
      case 0xA8:
      case 0xAD:
      case 0xAF:
      case 0xB4:
      case 0xB7:
      case 0xB8:
      case 0x387:
      case 0x55F:
      case 0x5F4:
      case 0x2018:
      case 0x2019:
      case 0x2024:
      case 0x2027:
      case 0xFE13:
      case 0xFE52:
      case 0xFE55:
      case 0xFF07:
      case 0xFF0E:
      case 0xFF1A:
        return true;
      default:
        break;
    }
    if (cp < 0x80) return false;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
      case UTF8PROC_CATEGORY_MN:
      case UTF8PROC_CATEGORY_ME:
      case UTF8PROC_CATEGORY_CF:
      case UTF8PROC_CATEGORY_LM:
      case UTF8PROC_CATEGORY_SK:
        return true;
      default:
        return false;
    }
  }

  bool after_cased_ = false;
  std::size_t pending_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Normalization of one (non-ASCII) word, with caller-owned buffers so the hot path does not
// allocate once they have grown.

// Canonical decomposition (NFD) of UTF-8 `word` into `cps`, canonically ordered.
void Decompose(std::string_view word, std::vector<utf8proc_int32_t>& cps) {
  cps.clear();
  utf8proc_int32_t buf[16];
  for (size_t i = 0; i < word.size();) {
    const char32_t cp = DecodeValid(word, i);
    if (cp < 0x80) {
      cps.push_back(static_cast<utf8proc_int32_t>(cp));
      continue;
    }
    int boundclass = 0;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 16,
                                                       UTF8PROC_DECOMPOSE, &boundclass);
    if (n < 0 || n > 16) {  // Cannot happen for valid scalar values; keep the character.
      cps.push_back(static_cast<utf8proc_int32_t>(cp));
      continue;
    }
    cps.insert(cps.end(), buf, buf + n);
  }
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  auto ccc = [](utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; };
  for (size_t i = 0; i < cps.size();) {
    if (ccc(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && ccc(cps[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(cps.begin() + i, cps.begin() + j,
                       [&](utf8proc_int32_t a, utf8proc_int32_t b) { return ccc(a) < ccc(b); });
    }
    i = j;
  }
}

// HF _run_strip_accents: NFD, then drop nonspacing marks (Mn).
void StripAccents(std::string_view word, std::vector<utf8proc_int32_t>& cps, std::string& out) {
  Decompose(word, cps);
  out.clear();
  for (utf8proc_int32_t c : cps) {
    if (c >= 0x80 && Category(static_cast<char32_t>(c)) == UTF8PROC_CATEGORY_MN) continue;
    AppendUtf8(out, static_cast<char32_t>(c));
  }
}

void Nfc(std::string_view word, std::vector<utf8proc_int32_t>& cps, std::string& out) {
  Decompose(word, cps);
  const utf8proc_ssize_t n =
      utf8proc_normalize_utf32(cps.data(), static_cast<utf8proc_ssize_t>(cps.size()),
                               static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE));
  out.clear();
  for (utf8proc_ssize_t i = 0; i < n; ++i) AppendUtf8(out, static_cast<char32_t>(cps[i]));
}

// ---------------------------------------------------------------------------------------------
// Vocabulary lookup: heterogeneous lookup on string_view, so no key strings are built.

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Everything needed to build a tokenizer, independent of where it came from.
struct Spec {
  std::vector<std::string> tokens;  // index = id; empty strings are holes.
  TokenizerOptions options;
  std::string unk = "[UNK]", cls = "[CLS]", sep = "[SEP]", pad = "[PAD]";
  std::string continuing_prefix = "##";
  size_t max_input_chars_per_word = kMaxInputCharsPerWord;
  // Tokens recognised verbatim in the input text (HF's special tokens).
  std::vector<std::string> specials = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
};

[[noreturn]] void BadConfig(const std::string& message) {
  throw TokenizerError(TokenizerErrorCode::kBadConfig, message);
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw TokenizerError(TokenizerErrorCode::kIo, "cannot open " + path.string());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw TokenizerError(TokenizerErrorCode::kIo, "cannot read " + path.string());
  return std::move(ss).str();
}

Json ReadJson(const std::filesystem::path& path) {
  try {
    return Json::parse(ReadFile(path));
  } catch (const Json::exception& e) {
    BadConfig(path.string() + ": invalid JSON: " + e.what());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const char* TokenizerErrorCodeName(TokenizerErrorCode code) {
  switch (code) {
    case TokenizerErrorCode::kBadUtf8:
      return "kBadUtf8";
    case TokenizerErrorCode::kTooLong:
      return "kTooLong";
    case TokenizerErrorCode::kIo:
      return "kIo";
    case TokenizerErrorCode::kBadConfig:
      return "kBadConfig";
  }
  return "unknown";
}

TokenizerError::TokenizerError(TokenizerErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

struct WordPieceTokenizer::Impl {
  explicit Impl(Spec spec);

  class Sink;  // Per-call output and scratch buffers (Impl itself is immutable).
  void EncodeFragment(std::string_view fragment, Sink& sink) const;
  void EncodeWord(std::string_view word, bool ascii, Sink& sink) const;
  void EncodeWordPiece(std::string_view token, Sink& sink) const;
  std::optional<int32_t> MatchSpecial(std::string_view text, size_t pos, size_t* len) const;

  TokenizerOptions options;
  bool strip_accents;
  std::vector<std::string> tokens;
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
    if (ids.size() - 1 >= budget_) {  // ids[0] is [CLS].
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
  }

  std::vector<int32_t> ids;
  bool truncated = false;
  // Scratch buffers, reused across words.
  std::string word, raw, normalized;
  std::vector<utf8proc_int32_t> cps;
  std::vector<uint32_t> offsets;
  std::vector<int32_t> pieces;

 private:
  size_t budget_;
  bool truncate_;
  size_t max_length_;
  bool full_ = false;
};

WordPieceTokenizer::Impl::Impl(Spec spec)
    : options(spec.options),
      strip_accents(spec.options.strip_accents.value_or(spec.options.lowercase)),
      tokens(std::move(spec.tokens)),
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
void WordPieceTokenizer::Impl::EncodeFragment(std::string_view text, Sink& sink) const {
  std::string& word = sink.word;
  word.clear();
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
          sink.Push(id);
          word.clear();
          break;
        }
      }
      raw.clear();
    }
    if (!word.empty()) EncodeWord(word, ascii, sink);
    word.clear();
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

  // HF never_split: a word that equals a special token after normalization stays whole. (HF
  // checks before and after lowercasing/accent stripping; since `word` is already lowercased
  // and specials contain no marks, the check after normalization covers both.)
  for (const auto& [s, id] : specials) {
    if (norm == s) {
      sink.Push(id);
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
    if (start > run_start) EncodeWordPiece(norm.substr(run_start, start - run_start), sink);
    EncodeWordPiece(norm.substr(start, i - start), sink);
    run_start = i;
  }
  if (run_start < norm.size()) EncodeWordPiece(norm.substr(run_start), sink);
}

// Greedy longest-match-first WordPiece on one punctuation-free token.
void WordPieceTokenizer::Impl::EncodeWordPiece(std::string_view token, Sink& sink) const {
  if (sink.full()) return;
  // Code point boundaries: offsets[k] is the byte offset of the k-th code point.
  std::vector<uint32_t>& off = sink.offsets;
  off.clear();
  for (size_t i = 0; i < token.size(); ++i) {
    if ((static_cast<unsigned char>(token[i]) & 0xC0) != 0x80) off.push_back(i);
  }
  const size_t n = off.size();
  if (n > max_input_chars_per_word) {
    sink.Push(unk_id);
    return;
  }
  off.push_back(token.size());

  std::vector<int32_t>& pieces = sink.pieces;
  pieces.clear();
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
    start = end;
  }
  for (int32_t id : pieces) sink.Push(id);
}

// ---------------------------------------------------------------------------------------------

WordPieceTokenizer::WordPieceTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Encoding WordPieceTokenizer::Encode(std::string_view text, bool truncate) const {
  const Impl& impl = *impl_;
  ValidateUtf8(text);

  Impl::Sink sink(impl.options.max_length - 2, truncate, impl.options.max_length);
  sink.ids.reserve(std::min(impl.options.max_length, text.size() / 4 + 16));
  sink.ids.push_back(impl.cls_id);

  size_t fragment_start = 0;
  if (!impl.specials.empty()) {
    for (size_t i = 0; i < text.size() && !sink.full();) {
      size_t len = 0;
      std::optional<int32_t> special;
      if (impl.special_first_byte[static_cast<unsigned char>(text[i])]) {
        special = impl.MatchSpecial(text, i, &len);
      }
      if (!special) {
        ++i;
        continue;
      }
      impl.EncodeFragment(text.substr(fragment_start, i - fragment_start), sink);
      sink.Push(*special);
      i += len;
      fragment_start = i;
    }
  }
  if (!sink.full()) impl.EncodeFragment(text.substr(fragment_start), sink);

  sink.ids.push_back(impl.sep_id);
  return Encoding{std::move(sink.ids), sink.truncated};
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
  Spec spec;
  spec.tokens = std::move(tokens);
  spec.options = options;
  return WordPieceTokenizer(std::make_shared<const Impl>(std::move(spec)));
}

WordPieceTokenizer WordPieceTokenizer::FromVocabFile(const std::filesystem::path& vocab_txt,
                                                     const TokenizerOptions& options) {
  const std::string data = ReadFile(vocab_txt);
  std::vector<std::string> tokens;
  tokens.reserve(data.size() / 8);
  // One token per line; "\n", "\r\n" and "\r" all end a line (Python's universal newlines).
  for (size_t i = 0; i < data.size();) {
    size_t end = data.find_first_of("\r\n", i);
    if (end == std::string::npos) end = data.size();
    tokens.emplace_back(data, i, end - i);
    i = end + 1;
    if (end + 1 < data.size() && data[end] == '\r' && data[end + 1] == '\n') ++i;
  }
  return FromTokens(std::move(tokens), options);
}

WordPieceTokenizer WordPieceTokenizer::FromTokenizerJson(const std::filesystem::path& path) {
  const Json j = ReadJson(path);
  const std::string where = path.string() + ": ";
  Spec spec;
  try {
    const Json& model = j.at("model");
    if (model.value("type", "") != "WordPiece") BadConfig(where + "model.type is not WordPiece");
    spec.unk = model.value("unk_token", "[UNK]");
    spec.continuing_prefix = model.value("continuing_subword_prefix", "##");
    spec.max_input_chars_per_word =
        model.value("max_input_chars_per_word", size_t{kMaxInputCharsPerWord});
    const Json& vocab = model.at("vocab");
    if (!vocab.is_object() || vocab.empty()) BadConfig(where + "model.vocab must be an object");
    for (const auto& [tok, id_json] : vocab.items()) {
      const int64_t id = id_json.get<int64_t>();
      if (id < 0 || id > INT32_MAX) BadConfig(where + "bad id for token '" + tok + "'");
      if (static_cast<size_t>(id) >= spec.tokens.size()) spec.tokens.resize(id + 1);
      if (!spec.tokens[id].empty()) BadConfig(where + "id " + std::to_string(id) + " used twice");
      spec.tokens[id] = tok;
    }

    const Json& norm = j.at("normalizer");
    if (!norm.is_object() || norm.value("type", "") != "BertNormalizer") {
      BadConfig(where + "normalizer must be BertNormalizer");
    }
    if (!norm.value("clean_text", true)) BadConfig(where + "clean_text=false is not supported");
    spec.options.lowercase = norm.value("lowercase", true);
    spec.options.tokenize_chinese_chars = norm.value("handle_chinese_chars", true);
    if (norm.contains("strip_accents") && !norm["strip_accents"].is_null()) {
      spec.options.strip_accents = norm["strip_accents"].get<bool>();
    }

    const Json& pre = j.at("pre_tokenizer");
    if (!pre.is_object() || pre.value("type", "") != "BertPreTokenizer") {
      BadConfig(where + "pre_tokenizer must be BertPreTokenizer");
    }

    const Json& post = j.at("post_processor");
    const std::string post_type = post.is_object() ? post.value("type", "") : "";
    if (post_type == "BertProcessing") {
      spec.cls = post.at("cls").at(0).get<std::string>();
      spec.sep = post.at("sep").at(0).get<std::string>();
    } else if (post_type == "TemplateProcessing") {
      // Only "$A" framed by one special token on each side: [CLS] $A [SEP].
      const Json& single = post.at("single");
      if (single.size() != 3 || !single[0].contains("SpecialToken") ||
          !single[1].contains("Sequence") || !single[2].contains("SpecialToken")) {
        BadConfig(where + "post_processor template must be <special> $A <special>");
      }
      spec.cls = single[0]["SpecialToken"].at("id").get<std::string>();
      spec.sep = single[2]["SpecialToken"].at("id").get<std::string>();
    } else {
      BadConfig(where + "post_processor must be BertProcessing or TemplateProcessing");
    }

    if (j.contains("padding") && j["padding"].is_object()) {
      spec.pad = j["padding"].value("pad_token", spec.pad);
    }
    if (j.contains("truncation") && j["truncation"].is_object()) {
      const Json& t = j["truncation"];
      if (t.value("direction", "Right") != "Right") {
        BadConfig(where + "only right truncation is supported");
      }
      spec.options.max_length = t.at("max_length").get<size_t>();
    }

    spec.specials.clear();
    if (j.contains("added_tokens")) {
      for (const Json& added : j.at("added_tokens")) {
        const std::string content = added.at("content").get<std::string>();
        const int64_t id = added.at("id").get<int64_t>();
        if (id < 0 || static_cast<size_t>(id) >= spec.tokens.size() || spec.tokens[id] != content) {
          BadConfig(where + "added token '" + content + "' is not in the WordPiece vocab");
        }
        if (added.value("special", false)) spec.specials.push_back(content);
      }
    }
  } catch (const Json::exception& e) {
    BadConfig(where + e.what());
  }
  return WordPieceTokenizer(std::make_shared<const Impl>(std::move(spec)));
}

WordPieceTokenizer WordPieceTokenizer::FromDirectory(const std::filesystem::path& dir) {
  // tokenizer_config.json: model_max_length is what HF truncates to. Transformers writes a huge
  // sentinel (1e30) when unknown; ignore implausible values.
  std::optional<size_t> model_max_length;
  Json config;
  const auto config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    config = ReadJson(config_path);
    if (config.contains("model_max_length") && config["model_max_length"].is_number()) {
      const double v = config["model_max_length"].get<double>();
      if (v >= 2 && v <= 1'000'000) model_max_length = static_cast<size_t>(v);
    }
  }

  if (std::filesystem::exists(dir / "tokenizer.json")) {
    WordPieceTokenizer tok = FromTokenizerJson(dir / "tokenizer.json");
    if (!model_max_length) return tok;
    // Rebuild with the new max_length; cheap relative to loading and keeps Impl immutable.
    auto impl = std::make_shared<Impl>(*tok.impl_);
    impl->options.max_length = *model_max_length;
    return WordPieceTokenizer(std::move(impl));
  }

  TokenizerOptions options;
  try {
    if (config.is_object()) {
      options.lowercase = config.value("do_lower_case", options.lowercase);
      options.tokenize_chinese_chars =
          config.value("tokenize_chinese_chars", options.tokenize_chinese_chars);
      if (config.contains("strip_accents") && !config["strip_accents"].is_null()) {
        options.strip_accents = config["strip_accents"].get<bool>();
      }
    }
  } catch (const Json::exception& e) {
    BadConfig(config_path.string() + ": " + e.what());
  }
  if (model_max_length) options.max_length = *model_max_length;
  return FromVocabFile(dir / "vocab.txt", options);
}

}  // namespace ember::worker
