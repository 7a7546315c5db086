// Unicode as HF tokenizers sees it (internal to engine/tokenizer/): each character property at
// the Unicode version of the crate that HF's Rust code takes it from, so that ember tokenizes
// what HF tokenizes, character for character (docs/tokenizers.md "Unicode versions"):
//   * general categories (BertNormalizer's clean text, BertPreTokenizer's and Punctuation's
//     punctuation, strip accents' nonspacing marks): the unicode_categories crate, Unicode 8.0;
//   * normalization (NFC, NFD, NFKC, NFKD) and combining marks: unicode-normalization-alignments,
//     Unicode 9.0, together with what its iterators say of each character: whether it replaced
//     a character of the input (0) or was added after one (1);
//   * whitespace, numbers and lowercasing: Rust's std (Unicode 15 here: ICU and utf8proc).
// The tables are ICU's (Debian's libicu 72, Unicode 15.0), cut at each crate's version by each
// character's age.
#ifndef EMBER_ENGINE_TOKENIZER_HF_UNICODE_H_
#define EMBER_ENGINE_TOKENIZER_HF_UNICODE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::engine::hf {

// Rust's char::is_whitespace (White_Space).
bool IsNonAsciiWhitespace(char32_t c);
constexpr bool IsWhitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return IsNonAsciiWhitespace(c);
}
// Rust's char::is_numeric (Nd, Nl, No).
bool IsNumeric(char32_t c);
// A word character of Rust's regex crate (\w: Alphabetic, M, Nd, Pc, Join_Control).
bool IsWordChar(char32_t c);
// unicode_categories' is_other (Cc, Cf, Cs, Co; unassigned characters are not "other").
bool IsOther(char32_t c);
// unicode_categories' is_punctuation (Pc, Pd, Ps, Pe, Pi, Pf, Po).
bool IsPunctuation(char32_t c);
// char::is_ascii_punctuation || unicode_categories' is_punctuation: BertPreTokenizer's and
// Punctuation's split points.
constexpr bool IsBertPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
  }
  return IsPunctuation(c);
}
// unicode_categories' is_mark_nonspacing (Mn).
bool IsMarkNonspacing(char32_t c);
// unicode-normalization-alignments' is_combining_mark (Mn, Mc, Me; Unicode 9.0).
bool IsCombiningMark(char32_t c);
// HF BertNormalizer's is_chinese_char (its ranges, which differ from Google BERT's in one).
inline bool IsChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Rust's char::to_lowercase: the full lowercase mapping of one character (1 to 3 characters).
void AppendLowercase(char32_t c, std::u32string& out);

// A character of a transformation's output and what it did (HF NormalizedString::transform):
// 0 replaced the next input character, 1 was added, -n replaced the next one and removed the
// n after it.
struct Change {
  char32_t c;
  int change;
};

enum class NormalForm { kNfd, kNfkd, kNfc, kNfkc };

// The characters of `text` (valid UTF-8) in the normal form, with unicode-normalization-
// alignments' change of each (Unicode 9.0 tables), appended to `out`. Returns false, and
// appends nothing, when the text is already in that form (every change 0).
bool Normalize(std::string_view text, NormalForm form, std::vector<Change>& out);

// Where extended grapheme clusters end in `text` (valid UTF-8): the byte offset after each.
void GraphemeEnds(std::string_view text, std::vector<std::size_t>& ends);

}  // namespace ember::engine::hf

#endif  // EMBER_ENGINE_TOKENIZER_HF_UNICODE_H_
