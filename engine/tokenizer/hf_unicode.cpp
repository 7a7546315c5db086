#include "engine/tokenizer/hf_unicode.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <optional>

#include "engine/tokenizer/unicode_text.h"

namespace ember::engine::hf {
namespace {

// Whether `c` was assigned by Unicode major.minor (its age; unassigned: never).
bool AssignedBy(char32_t c, int major, int minor) {
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  if (age[0] == 0 && age[1] == 0) return false;
  return age[0] < major || (age[0] == major && age[1] <= minor);
}

// unicode_categories: Unicode 8.0.
bool V8(char32_t c) { return AssignedBy(c, 8, 0); }
// unicode-normalization-alignments: Unicode 9.0.
bool V9(char32_t c) { return AssignedBy(c, 9, 0); }

int8_t Category(char32_t c) { return u_charType(static_cast<UChar32>(c)); }

// The normalizers' data (ICU's, immutable once made).
struct Norm {
  const UNormalizer2* nfd;
  const UNormalizer2* nfkd;
  const UNormalizer2* nfc;
  Norm() {
    UErrorCode e = U_ZERO_ERROR;
    nfd = unorm2_getNFDInstance(&e);
    nfkd = unorm2_getNFKDInstance(&e);
    nfc = unorm2_getNFCInstance(&e);
    if (U_FAILURE(e)) nfd = nfkd = nfc = nullptr;
  }
};
const Norm& Normalizers() {
  static const Norm norm;
  return norm;
}

// Canonical combining class, Unicode 9.0.
uint8_t Ccc(char32_t c) {
  if (c < 0x300) return 0;
  return V9(c) ? u_getCombiningClass(static_cast<UChar32>(c)) : 0;
}

// The full decomposition of `c` (Unicode 9.0) appended to `out`; itself when it has none.
void Decompose(char32_t c, bool compat, std::u32string& out) {
  const Norm& n = Normalizers();
  if (c < 0xA0 || n.nfd == nullptr || !V9(c)) {
    out.push_back(c);
    return;
  }
  std::array<UChar, 32> buf;
  UErrorCode e = U_ZERO_ERROR;
  const int32_t len = unorm2_getDecomposition(compat ? n.nfkd : n.nfd, static_cast<UChar32>(c),
                                              buf.data(), static_cast<int32_t>(buf.size()), &e);
  if (U_FAILURE(e) || len < 0) {
    out.push_back(c);
    return;
  }
  // UTF-16 to code points (a decomposition is well-formed).
  for (int32_t i = 0; i < len; ++i) {
    const char32_t unit = buf[static_cast<std::size_t>(i)];
    if (unit >= 0xD800 && unit <= 0xDBFF && i + 1 < len) {
      const char32_t low = buf[static_cast<std::size_t>(++i)];
      out.push_back(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
    } else {
      out.push_back(unit);
    }
  }
}

std::optional<char32_t> Compose(char32_t a, char32_t b) {
  const Norm& n = Normalizers();
  if (n.nfc == nullptr || !V9(a) || !V9(b)) return std::nullopt;
  const UChar32 r = unorm2_composePair(n.nfc, static_cast<UChar32>(a), static_cast<UChar32>(b));
  if (r < 0 || !V9(static_cast<char32_t>(r))) return std::nullopt;
  return static_cast<char32_t>(r);
}

// Whether `text` is certainly in the form already, as Unicode's quick check says (Unicode 9.0:
// a later character neither decomposes nor combines). Conservative: false on doubt.
bool QuickCheckYes(std::string_view text, NormalForm form) {
  const UProperty property = form == NormalForm::kNfd    ? UCHAR_NFD_QUICK_CHECK
                             : form == NormalForm::kNfkd ? UCHAR_NFKD_QUICK_CHECK
                             : form == NormalForm::kNfc  ? UCHAR_NFC_QUICK_CHECK
                                                         : UCHAR_NFKC_QUICK_CHECK;
  uint8_t last = 0;
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      last = 0;
      continue;
    }
    const char32_t c = unicode::DecodeValid(text, i);
    if (!V9(c)) {
      last = 0;
      continue;
    }
    const uint8_t ccc = u_getCombiningClass(static_cast<UChar32>(c));
    if (ccc != 0 && ccc < last) return false;
    if (u_getIntPropertyValue(static_cast<UChar32>(c), property) != UNORM_YES) return false;
    last = ccc;
  }
  return true;
}

// unicode-normalization-alignments' Decompositions iterator: each character's decomposition,
// its first character replacing the input character (0) and the others added (1), then each
// run of non-starters stably sorted by combining class.
void DecomposeStream(std::string_view text, bool compat, std::vector<Change>& out) {
  struct Item {
    uint8_t ccc;
    Change change;
  };
  std::vector<Item> buffer;
  std::size_t ready = 0;  // buffer[0, ready) is sorted and final
  std::u32string parts;
  auto sort_pending = [&] {
    std::stable_sort(buffer.begin() + static_cast<std::ptrdiff_t>(ready), buffer.end(),
                     [](const Item& a, const Item& b) { return a.ccc < b.ccc; });
    ready = buffer.size();
  };
  for (std::size_t i = 0; i < text.size();) {
    const char32_t c = unicode::DecodeValid(text, i);
    parts.clear();
    Decompose(c, compat, parts);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const uint8_t ccc = Ccc(parts[k]);
      if (ccc == 0) {
        sort_pending();
        for (std::size_t r = 0; r < ready; ++r) out.push_back(buffer[r].change);
        buffer.clear();
        ready = 0;
      }
      buffer.push_back({ccc, {parts[k], k == 0 ? 0 : 1}});
    }
  }
  sort_pending();
  for (const Item& item : buffer) out.push_back(item.change);
}

// unicode-normalization-alignments' Recompositions iterator over a decomposed stream, its
// composites carrying the changes of what they were made of (k + change - 1).
void RecomposeStream(const std::vector<Change>& in, std::vector<Change>& out) {
  std::optional<Change> composee;
  int last_ccc = -1;  // the combining class of the last character buffered; -1: none
  std::vector<Change> buffer;
  for (const Change& item : in) {
    const uint8_t ccc = Ccc(item.c);
    if (!composee) {
      if (ccc != 0) {
        out.push_back(item);
      } else {
        composee = item;
      }
      continue;
    }
    const Change k = *composee;
    if (last_ccc < 0) {
      if (const auto r = Compose(k.c, item.c)) {
        composee = Change{*r, k.change + item.change - 1};
        continue;
      }
      if (ccc == 0) {
        composee = item;
        out.push_back(k);
        continue;
      }
      buffer.push_back(item);
      last_ccc = ccc;
      continue;
    }
    if (last_ccc >= ccc) {  // blocked from the composee
      if (ccc == 0) {
        composee = item;
        last_ccc = -1;
        out.push_back(k);
        out.insert(out.end(), buffer.begin(), buffer.end());
        buffer.clear();
        continue;
      }
      buffer.push_back(item);
      last_ccc = ccc;
      continue;
    }
    if (const auto r = Compose(k.c, item.c)) {
      composee = Change{*r, k.change + item.change - 1};
      continue;
    }
    buffer.push_back(item);
    last_ccc = ccc;
  }
  if (composee) out.push_back(*composee);
  out.insert(out.end(), buffer.begin(), buffer.end());
}

}  // namespace

bool IsNonAsciiWhitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const int8_t cat = Category(c);
  return cat == U_DECIMAL_DIGIT_NUMBER || cat == U_LETTER_NUMBER || cat == U_OTHER_NUMBER;
}

bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  const int8_t cat = Category(c);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) ||
         cat == U_NON_SPACING_MARK || cat == U_COMBINING_SPACING_MARK || cat == U_ENCLOSING_MARK ||
         cat == U_DECIMAL_DIGIT_NUMBER || cat == U_CONNECTOR_PUNCTUATION ||
         u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_JOIN_CONTROL);
}

bool IsOther(char32_t c) {
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  const int8_t cat = Category(c);
  return (cat == U_CONTROL_CHAR || cat == U_FORMAT_CHAR || cat == U_SURROGATE ||
          cat == U_PRIVATE_USE_CHAR) &&
         V8(c);
}

bool IsPunctuation(char32_t c) {
  const int8_t cat = Category(c);
  const bool punct = cat == U_CONNECTOR_PUNCTUATION || cat == U_DASH_PUNCTUATION ||
                     cat == U_START_PUNCTUATION || cat == U_END_PUNCTUATION ||
                     cat == U_INITIAL_PUNCTUATION || cat == U_FINAL_PUNCTUATION ||
                     cat == U_OTHER_PUNCTUATION;
  return punct && (c < 0x80 || V8(c));
}

bool IsMarkNonspacing(char32_t c) {
  return c >= 0x300 && Category(c) == U_NON_SPACING_MARK && V8(c);
}

bool IsCombiningMark(char32_t c) {
  if (c < 0x300) return false;
  const int8_t cat = Category(c);
  return (cat == U_NON_SPACING_MARK || cat == U_COMBINING_SPACING_MARK ||
          cat == U_ENCLOSING_MARK) &&
         V9(c);
}

void AppendLowercase(char32_t c, std::u32string& out) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (c == 0x130) {  // the one unconditional multi-character lowercase mapping
    out.push_back('i');
    out.push_back(0x307);
  } else {
    out.push_back(static_cast<char32_t>(u_tolower(static_cast<UChar32>(c))));
  }
}

bool Normalize(std::string_view text, NormalForm form, std::vector<Change>& out) {
  if (unicode::IsAscii(text) || QuickCheckYes(text, form)) return false;
  const bool compat = form == NormalForm::kNfkd || form == NormalForm::kNfkc;
  if (form == NormalForm::kNfd || form == NormalForm::kNfkd) {
    DecomposeStream(text, compat, out);
    return true;
  }
  std::vector<Change> decomposed;
  DecomposeStream(text, compat, decomposed);
  RecomposeStream(decomposed, out);
  return true;
}

void GraphemeEnds(std::string_view text, std::vector<std::size_t>& ends) {
  ends.clear();
  utf8proc_int32_t state = 0;
  utf8proc_int32_t previous = -1;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t start = i;
    const auto c = static_cast<utf8proc_int32_t>(unicode::DecodeValid(text, i));
    if (previous >= 0 && utf8proc_grapheme_break_stateful(previous, c, &state)) {
      ends.push_back(start);
    }
    previous = c;
  }
  if (!text.empty()) ends.push_back(text.size());
}

}  // namespace ember::engine::hf
