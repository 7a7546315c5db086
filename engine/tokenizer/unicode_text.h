// UTF-8 and case helpers of the tokenizers (internal to engine/tokenizer/): strict UTF-8
// validation and decoding, and the case properties of Python's Final_Sigma rule (utf8proc's
// tables).
#ifndef EMBER_ENGINE_TOKENIZER_UNICODE_TEXT_H_
#define EMBER_ENGINE_TOKENIZER_UNICODE_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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
// Case (Python's str.lower() Final_Sigma rule, HfTokenizer::Options::final_sigma_per_word)

// Unicode's Cased (Lowercase, Uppercase or Lt) and Case_Ignorable properties.
bool Cased(char32_t cp);
bool CaseIgnorable(char32_t cp);

}  // namespace ember::engine::unicode

#endif  // EMBER_ENGINE_TOKENIZER_UNICODE_TEXT_H_
