// libFuzzer target: HfTokenizer (engine/tokenizer/hf_tokenizer.h) on arbitrary text through
// four kinds of pipeline (fuzz/tokenizer_pipelines.h), and its loader on arbitrary
// tokenizer.json text.
//
//   byte 0   bits 0-1 the pipeline (kPipelines), 4 offsets, 8 Decode skips specials,
//            32 truncate, 64 a pair, 128 the loader (the rest is a tokenizer.json)
//   byte 1   max_length selector (kMaxLengths; 0: none)
//   rest     the text, any bytes; a pair (EncodePair): the texts before and after its first
//            NUL byte (none: the second is empty)
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
//   * kBadUtf8 exactly when a text is not well-formed UTF-8 (checked by an independent
//     validator here); kTooLong only when truncation is off and there is a limit; kBadConfig
//     only for a limit that leaves no room beside the special tokens;
//   * ids in the vocabulary, at most max_length of them, `truncated` only when truncating and
//     then exactly max_length;
//   * with offsets, the same ids, one span each, inside its text;
//   * Decode takes any ids Encode made, and the byte-level pipeline's decoding of an untruncated
//     text is the text itself (its pipeline loses nothing);
//   * the loader refuses bad JSON and unknown components with kBadConfig alone, and what it
//     loads encodes and decodes without any other error.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "engine/tokenizer/hf_tokenizer.h"
#include "fuzz/check.h"
#include "fuzz/tokenizer_pipelines.h"

namespace ember::fuzz {
namespace {

using engine::EncodeOptions;
using engine::Encoding;
using engine::HfTokenizer;
using engine::TokenizerError;
using engine::TokenizerErrorCode;

constexpr std::array<std::size_t, 5> kMaxLengths = {0, 2, 3, 16, 512};

// One tokenizer per pipeline, with the ids its post-processor adds to a text and to a pair,
// built on first use: building one per input would drown the signal.
struct Loaded {
  std::unique_ptr<HfTokenizer> tokenizer;
  std::size_t single_specials = 0, pair_specials = 0;
};

const Loaded& TokenizerFor(Pipeline pipeline) {
  static std::array<Loaded, kPipelines.size()> all;
  Loaded& slot = all[static_cast<std::size_t>(pipeline)];
  if (!slot.tokenizer) {
    slot.tokenizer = HfTokenizer::FromJsonText(PipelineJson(pipeline), "fuzz pipeline");
    slot.single_specials = slot.tokenizer->Encode("", {}).ids.size();
    slot.pair_specials = slot.tokenizer->EncodePair("", "", {}).ids.size();
  }
  return slot;
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

// What Encode and EncodePair may refuse.
void CheckRefusal(const TokenizerError& error, bool valid, const EncodeOptions& options,
                  std::size_t specials) {
  switch (error.code()) {
    case TokenizerErrorCode::kBadUtf8:
      Check(!valid, "valid UTF-8 must not be rejected as bad");
      break;
    case TokenizerErrorCode::kBadConfig:
      Check(options.max_length != 0 && options.max_length < specials,
            "only a limit below the special tokens is a bad config");
      break;
    case TokenizerErrorCode::kTooLong:
      Check(valid && !options.truncate && options.max_length != 0,
            "kTooLong only without truncation, only under a limit, only for valid text");
      break;
    default:
      Check(false, "Encode fails only with kBadUtf8, kBadConfig or kTooLong");
  }
}

void CheckEncoding(const HfTokenizer& tokenizer, const Encoding& e, const EncodeOptions& options,
                   std::size_t longest_text) {
  for (const std::int32_t id : e.ids) {
    Check(id >= 0 && static_cast<std::size_t>(id) < tokenizer.vocab_size(), "ids in vocabulary");
  }
  Check(options.max_length == 0 || e.ids.size() <= options.max_length, "ids <= max_length");
  Check(!e.truncated || (options.truncate && e.ids.size() == options.max_length),
        "truncated only when cut to max_length");
  if (options.offsets) {
    Check(e.spans.size() == e.ids.size(), "a span per id");
    for (const engine::TokenSpan& span : e.spans) {
      Check(span.start <= span.stop && span.stop <= longest_text, "spans inside the text");
    }
  }
}

void FuzzText(Pipeline pipeline, std::uint8_t flags, std::size_t max_length,
              std::string_view text) {
  const Loaded& loaded = TokenizerFor(pipeline);
  const HfTokenizer& tokenizer = *loaded.tokenizer;
  const EncodeOptions options{
      .truncate = (flags & 32) != 0, .max_length = max_length, .offsets = (flags & 4) != 0};
  const bool pair = flags & 64;
  const std::size_t nul = pair ? text.find('\0') : std::string_view::npos;
  const std::string_view first = text.substr(0, nul);
  const std::string_view second = nul == std::string_view::npos ? "" : text.substr(nul + 1);
  const bool valid = WellFormedUtf8(first) && WellFormedUtf8(second);
  const auto encode = [&](const EncodeOptions& o) {
    return pair ? tokenizer.EncodePair(first, second, o) : tokenizer.Encode(first, o);
  };
  Encoding e;
  try {
    e = encode(options);
  } catch (const TokenizerError& error) {
    CheckRefusal(error, valid, options, pair ? loaded.pair_specials : loaded.single_specials);
    return;
  }
  Check(valid, "invalid UTF-8 must be rejected");
  CheckEncoding(tokenizer, e, options, std::max(first.size(), second.size()));
  if (options.offsets) {
    EncodeOptions plain = options;
    plain.offsets = false;
    Check(encode(plain).ids == e.ids, "offsets come with the same ids");
  }
  const std::string decoded = tokenizer.Decode(e.ids, (flags & 8) != 0);
  if (pipeline == Pipeline::kByteLevel && !pair && !e.truncated) {
    Check(tokenizer.Decode(e.ids, false) == first, "byte-level decoding gives the text back");
  }
}

void FuzzLoader(std::string_view json) {
  std::unique_ptr<HfTokenizer> tokenizer;
  try {
    tokenizer = HfTokenizer::FromJsonText(json, "fuzz.json");
  } catch (const TokenizerError& error) {
    Check(error.code() == TokenizerErrorCode::kBadConfig, "a bad file is kBadConfig");
    return;
  }
  for (const std::string_view text : {"Hello, world! 你好 ÿ naïve", "", "  <s> [SEP] x"}) {
    try {
      const Encoding e = tokenizer->Encode(text, {.offsets = true});
      CheckEncoding(*tokenizer, e, {.offsets = true}, text.size());
      (void)tokenizer->Decode(e.ids, true);
      (void)tokenizer->Decode(e.ids, false);
      (void)tokenizer->EncodePair(text, text, {.max_length = 8});
    } catch (const TokenizerError& error) {
      // A file may load and still fail a text (HF's WordPiece without its unk token in the
      // vocabulary, a limit below the specials): refused, never a crash.
      Check(error.code() != TokenizerErrorCode::kBadUtf8, "valid text is not bad UTF-8");
    }
  }
}

}  // namespace
}  // namespace ember::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ember::fuzz;
  if (size < 2) return 0;
  const std::uint8_t flags = data[0];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (flags & 128) {
    FuzzLoader(rest);
    return 0;
  }
  FuzzText(kPipelines[flags & 3], flags, kMaxLengths[data[1] % kMaxLengths.size()], rest);
  return 0;
}
