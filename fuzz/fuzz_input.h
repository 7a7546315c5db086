// How the protocol fuzz target reads its input, shared with the seeds so the
// two cannot drift apart.
//
//   byte 0       mode: 0 = a multipart message, 1..N = one body decoder
//   mode 0       frames, each a 2-byte little-endian length and that many
//                bytes; a last frame whose length runs past the end takes
//                what is left
//   mode k > 0   the rest is a body for decoder k
#ifndef EMBER_FUZZ_FUZZ_INPUT_H_
#define EMBER_FUZZ_FUZZ_INPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::fuzz {

enum class Mode : std::uint8_t {
  kFrames = 0,
  kEmbedRequest,
  kEmbedReply,
  kErrorBody,
  kReadyBody,
  kControlRequest,
  kStatusReply,
  kControlResult,
  kControlReply,
  kCount,  // one past the last
};

// Splits a mode-0 payload into frames.
inline std::vector<std::string_view> SplitFrames(std::string_view data) {
  std::vector<std::string_view> frames;
  while (!data.empty()) {
    if (data.size() < 2) {
      frames.push_back(data);
      break;
    }
    const std::size_t length =
        static_cast<std::uint8_t>(data[0]) | (std::size_t{static_cast<std::uint8_t>(data[1])} << 8);
    data.remove_prefix(2);
    const std::size_t take = length < data.size() ? length : data.size();
    frames.push_back(data.substr(0, take));
    data.remove_prefix(take);
  }
  return frames;
}

// The inverse of SplitFrames, prefixed with the mode byte.
inline std::string JoinFrames(const std::vector<std::string>& frames) {
  std::string out(1, static_cast<char>(Mode::kFrames));
  for (const auto& f : frames) {
    out.push_back(static_cast<char>(f.size() & 0xff));
    out.push_back(static_cast<char>((f.size() >> 8) & 0xff));
    out += f;
  }
  return out;
}

}  // namespace ember::fuzz

#endif  // EMBER_FUZZ_FUZZ_INPUT_H_
