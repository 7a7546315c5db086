#include "engine/tokenizer/unicode_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "engine/tokenizer/tokenizer.h"

namespace ember::engine::unicode {
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

// Unicode's Cased: Lowercase, Uppercase or Lt. Letters with a case mapping, plus the
// Other_Lowercase / Other_Uppercase characters that have none (modifier letters, ...).
bool Cased(char32_t cp) {
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
bool CaseIgnorable(char32_t cp) {
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

}  // namespace ember::engine::unicode
