// The routing header of a REQUEST body: what the router needs to accept and route a request
// (model, version, deadline, how many texts and how long the longest), read in one pass over
// the msgpack bytes without copying a text or allocating (docs/protocol.md "Routing on the
// header"). The worker decodes the whole body (common/messages.h EmbedRequest).
//
// A body is accepted here exactly when Decode(bytes, EmbedRequest*) accepts it, with the same
// error message when not (tests/request_header_test.cpp holds the two side by side), so a
// client sees the same BAD_REQUEST from the router whichever decoder ran.
#ifndef EMBER_COMMON_REQUEST_HEADER_H_
#define EMBER_COMMON_REQUEST_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/messages.h"

namespace ember::protocol {

struct EmbedRequestHeader {
  std::string model;
  std::uint32_t version = 0;
  std::uint32_t timeout_ms = 0;
  bool truncate = true;
  std::uint32_t dimensions = 0;  // 0: the model's own
  Task task = Task::kEmbed;
  std::size_t count = 0;          // texts in `inputs`
  std::size_t pairs = 0;          // texts in `text_pairs`
  std::size_t longest_bytes = 0;  // bytes of the longest text (of inputs and text_pairs)
  std::size_t longest_index = 0;  // its index (the first, if several are as long)
};

bool Decode(std::string_view bytes, EmbedRequestHeader* out, std::string* error);

}  // namespace ember::protocol

#endif  // EMBER_COMMON_REQUEST_HEADER_H_
