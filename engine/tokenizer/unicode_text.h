// Unicode text helpers of the WordPiece tokenizer (internal to engine/tokenizer/): strict
// UTF-8, HF BasicTokenizer's character classes, lowercasing with Python's rules and the two
// normalizations it needs. Code-point tables come from libutf8proc; the per-character ones
// used on every byte are inline here.
#ifndef EMBER_ENGINE_TOKENIZER_UNICODE_TEXT_H_
#define EMBER_ENGINE_TOKENIZER_UNICODE_TEXT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::engine::unicode {

using std::size_t;

// ---------------------------------------------------------------------------------------------
// UTF-8

// Strict RFC 3629 validation: rejects stray continuation bytes, truncated sequences, overlong
// forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF. Throws kBadUtf8 with the
// byte offset of the first offending sequence. After this, decoding can skip all checks.
void ValidateUtf8(std::string_view s);

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
  for (std::size_t c = 0; c < 128; ++c) {
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

// A non-ASCII code point's class (`split_cjk`: tokenize_chinese_chars).
CharClass ClassifyNonAscii(char32_t cp, bool split_cjk);
// Punctuation as HF defines it: ASCII non-alphanumerics plus Unicode P*.
bool IsPunctuation(char32_t cp);

// ---------------------------------------------------------------------------------------------
// Lowercasing

// Python's str.lower() per character: the Unicode full lowercase mapping. The only
// unconditional multi-character lowercase mapping is U+0130 -> "i\u0307"; the one conditional
// rule of the default locale, Final_Sigma, is FinalSigma's below (LowercaseRule::kPerWord).
void AppendLower(std::string& out, char32_t cp);

// Unicode's Cased (Lowercase, Uppercase or Lt) and Case_Ignorable properties.
bool Cased(char32_t cp);
bool CaseIgnorable(char32_t cp);

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
  bool after_cased_ = false;
  std::size_t pending_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Normalization of one (non-ASCII) word, with caller-owned buffers so the hot path does not
// allocate once they have grown.

// Canonical decomposition (NFD) of UTF-8 `word` into `cps`, canonically ordered.
void Decompose(std::string_view word, std::vector<std::int32_t>& cps);
// HF _run_strip_accents: NFD, then drop nonspacing marks (Mn).
void StripAccents(std::string_view word, std::vector<std::int32_t>& cps, std::string& out);
// NFC of `word` into `out`.
void Nfc(std::string_view word, std::vector<std::int32_t>& cps, std::string& out);

}  // namespace ember::engine::unicode

#endif  // EMBER_ENGINE_TOKENIZER_UNICODE_TEXT_H_
