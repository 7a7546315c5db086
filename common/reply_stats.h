// The two numbers a router's metrics take from a worker's REPLY (batch_size and the sum of
// tokens), read in one pass over the msgpack bytes: the vectors, by far the largest part of
// the body, are skipped where they lie, never copied or decoded (the full decoder,
// common/messages.h EmbedReply, copies them). The router passes the reply on as it came.
#ifndef EMBER_COMMON_REPLY_STATS_H_
#define EMBER_COMMON_REPLY_STATS_H_

#include <cstdint>
#include <string_view>

namespace ember::protocol {

struct EmbedReplyStats {
  std::uint32_t batch_size = 0;  // texts in the largest batch that computed the reply
  std::uint64_t tokens = 0;      // the sum of its per-text token counts (0: not sent)
};

// False when `bytes` is not a msgpack map (then `out` is unspecified). A field of the wrong
// type counts as absent: these are statistics, and the client decodes the reply itself.
bool Decode(std::string_view bytes, EmbedReplyStats* out);

}  // namespace ember::protocol

#endif  // EMBER_COMMON_REPLY_STATS_H_
