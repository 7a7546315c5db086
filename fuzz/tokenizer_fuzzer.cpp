// libFuzzer target: the WordPiece tokenizer (engine/tokenizer/wordpiece_tokenizer.h) on
// arbitrary text, under every option combination.
//
//   byte 0   option bits: 1 lowercase, 2 strip_accents set, 4 its value,
//            8 tokenize_chinese_chars, 16 split_special_tokens, 32 truncate, 64 a pair
//   byte 1   max_length selector (see kMaxLengths)
//   rest     the text, any bytes; a pair (EncodePair): the texts before and after its first
//            NUL byte (none: the second is empty)
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
//   * kBadUtf8 exactly when the text is not well-formed UTF-8 (checked by an
//     independent validator here);
//   * kTooLong only when truncate is off;
//   * EncodeWithOffsets gives Encode's ids, with spans inside the text and in order;
//   * a result is [CLS] ... [SEP] (a pair's: [CLS] ... [SEP] ... [SEP] with the second text
//     from second_start), at most max_length ids, all in the vocabulary, and `truncated` only
//     when it is exactly max_length long.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/wordpiece_tokenizer.h"
#include "fuzz/check.h"

namespace ember::fuzz {
namespace {

using engine::TokenizerError;
using engine::TokenizerErrorCode;
using engine::WordPieceTokenizer;

constexpr std::array<std::size_t, 4> kMaxLengths = {2, 3, 16, 512};

// A small vocabulary with every kind of token the algorithm treats specially:
// specials, whole words, "##" continuations, punctuation, CJK, accented text.
std::vector<std::string> Vocabulary() {
  std::vector<std::string> v = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char c = 'a'; c <= 'z'; ++c) {
    v.emplace_back(1, c);
    v.push_back(std::string("##") + c);
  }
  for (char c = '0'; c <= '9'; ++c) v.emplace_back(1, c);
  for (const char* w :
       {"hello", "world", "##ing", "##ed", "em",   "##bed", "un",     "##aff", "##able", ".",
        ",",     "!",     "?",     "'",    "-",    "(",     ")",      "[",     "]",      "你",
        "好",    "世",    "界",    "é",    "café", "naïve", "straße", "ǆ",     "ﬁ",      "İ"}) {
    v.emplace_back(w);
  }
  return v;
}

const WordPieceTokenizer& TokenizerFor(std::uint8_t flags, std::uint8_t length_selector) {
  // One tokenizer per option combination (5 option bits x max lengths),
  // built on first use: building one per input would drown the signal.
  static std::array<std::unique_ptr<WordPieceTokenizer>, 32 * kMaxLengths.size()> all;
  const std::size_t bits = flags & 0x1f;
  const std::size_t length_index = length_selector % kMaxLengths.size();
  auto& slot = all[bits * kMaxLengths.size() + length_index];
  if (!slot) {
    engine::TokenizerOptions options;
    options.lowercase = flags & 1;
    if (flags & 2) options.strip_accents = (flags & 4) != 0;
    options.tokenize_chinese_chars = flags & 8;
    options.split_special_tokens = flags & 16;
    options.max_length = kMaxLengths[length_index];
    slot =
        std::make_unique<WordPieceTokenizer>(WordPieceTokenizer::FromTokens(Vocabulary(), options));
  }
  return *slot;
}

// Well-formed UTF-8 per RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF. Written independently of the tokenizer's own check.
bool WellFormedUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<std::uint8_t>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    int extra;
    std::uint32_t cp, min;
    if ((b0 & 0xe0) == 0xc0) {
      extra = 1, cp = b0 & 0x1f, min = 0x80;
    } else if ((b0 & 0xf0) == 0xe0) {
      extra = 2, cp = b0 & 0x0f, min = 0x800;
    } else if ((b0 & 0xf8) == 0xf0) {
      extra = 3, cp = b0 & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (i + static_cast<std::size_t>(extra) >= s.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= static_cast<std::size_t>(extra); ++k) {
      const auto b = static_cast<std::uint8_t>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

void CheckIds(const WordPieceTokenizer& tokenizer, const std::vector<std::int32_t>& ids) {
  for (const std::int32_t id : ids) {
    Check(id >= 0 && static_cast<std::size_t>(id) < tokenizer.vocab_size(), "ids in vocabulary");
  }
}

// What Encode and EncodePair may refuse: malformed UTF-8 exactly, and only without truncation
// a text too long; a pair with a max_length under 3 (`pair_too_short`) as a bad config.
void CheckRefusal(const TokenizerError& error, bool valid, bool truncate, bool pair_too_short) {
  if (error.code() == TokenizerErrorCode::kBadUtf8) {
    Check(!valid, "valid UTF-8 must not be rejected as bad");
  } else if (error.code() == TokenizerErrorCode::kBadConfig) {
    Check(valid && pair_too_short, "a pair needs max_length >= 3, nothing else is refused");
  } else {
    Check(error.code() == TokenizerErrorCode::kTooLong && !truncate && valid,
          "only kTooLong, only without truncation, only for valid text");
  }
}

void FuzzPair(const WordPieceTokenizer& tokenizer, std::string_view text, bool truncate) {
  const std::size_t nul = text.find('\0');
  const std::string_view first = text.substr(0, nul);
  const std::string_view second = nul == std::string_view::npos ? "" : text.substr(nul + 1);
  const bool valid = WellFormedUtf8(first) && WellFormedUtf8(second);
  const std::size_t max_length = tokenizer.options().max_length;
  try {
    const engine::PairEncoding p = tokenizer.EncodePair(first, second, truncate);
    Check(valid, "invalid UTF-8 must be rejected");
    Check(p.ids.size() >= 3 && p.ids.size() <= max_length, "3 <= ids <= max_length");
    Check(p.second_start >= 2 && p.second_start < p.ids.size(), "the second text is inside");
    Check(p.ids.front() == tokenizer.cls_id() && p.ids[p.second_start - 1] == tokenizer.sep_id() &&
              p.ids.back() == tokenizer.sep_id(),
          "ids are [CLS] ... [SEP] ... [SEP]");
    CheckIds(tokenizer, p.ids);
    Check(!p.truncated || (truncate && p.ids.size() == max_length),
          "truncated only when cut to max_length");
  } catch (const TokenizerError& error) {
    CheckRefusal(error, valid, truncate, max_length < 3);
  }
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ember::fuzz;
  if (size < 2) return 0;
  const std::uint8_t flags = data[0];
  const bool truncate = flags & 32;
  const WordPieceTokenizer& tokenizer = TokenizerFor(flags, data[1]);
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (flags & 64) {
    FuzzPair(tokenizer, text, truncate);
    return 0;
  }
  const bool valid = WellFormedUtf8(text);
  try {
    const ember::engine::Encoding e = tokenizer.Encode(text, truncate);
    Check(valid, "invalid UTF-8 must be rejected");
    const std::size_t max_length = tokenizer.options().max_length;
    Check(e.ids.size() >= 2 && e.ids.size() <= max_length, "2 <= ids <= max_length");
    Check(e.ids.front() == tokenizer.cls_id() && e.ids.back() == tokenizer.sep_id(),
          "ids are [CLS] ... [SEP]");
    CheckIds(tokenizer, e.ids);
    Check(!e.truncated || (truncate && e.ids.size() == max_length),
          "truncated only when cut to max_length");
    // The same ids with offsets (/tokenize): spans inside the text, in order, from nowhere for
    // [CLS] and [SEP].
    const ember::engine::OffsetEncoding o = tokenizer.EncodeWithOffsets(text, truncate);
    Check(o.ids == e.ids && o.spans.size() == o.ids.size(), "offsets come with Encode's ids");
    Check(o.spans.front().stop == 0 && o.spans.back().stop == 0, "[CLS] and [SEP] from nowhere");
    for (std::size_t i = 1; i + 1 < o.spans.size(); ++i) {
      Check(o.spans[i].start < o.spans[i].stop && o.spans[i].stop <= text.size() &&
                o.spans[i].start >= o.spans[i - 1].start,
            "a token's span lies inside the text, after the one before");
    }
  } catch (const TokenizerError& error) {
    CheckRefusal(error, valid, truncate, /*pair_too_short=*/false);
  }
  return 0;
}
