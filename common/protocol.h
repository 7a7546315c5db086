// Framing of ember messages on ZeroMQ (docs/protocol.md is the normative text).
//
// Every ember message is four frames, after whatever routing envelope a ROUTER
// socket adds:
//
//   frame 0  protocol   "EMBER" followed by one version byte (kVersion)
//   frame 1  command    one byte, a Command value
//   frame 2  request id 8 bytes, unsigned little-endian
//   frame 3  body       msgpack (see common/messages.h); may be empty
//   frame 4  budget     only on a REQUEST from a router to a worker, and optional there: 4 bytes,
//                       unsigned little-endian, the milliseconds left (> 0) until the router
//                       answers the client TIMEOUT. The worker gives up on the request then, so
//                       it never computes what nobody waits for; a body's timeout_ms stays the
//                       client's own (the router does not re-encode bodies).
//
// This header knows nothing about bodies, so the router can route a request
// without decoding or copying its texts.
#ifndef EMBER_COMMON_PROTOCOL_H_
#define EMBER_COMMON_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

namespace ember::protocol {

inline constexpr std::string_view kTag = "EMBER";
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kFrameCount = 4;
inline constexpr std::size_t kMaxFrameCount = 5;  // with a REQUEST's budget

enum class Command : std::uint8_t {
  kRequest = 1,     // client -> router -> worker: embed texts
  kReply = 2,       // worker -> router -> client: the result
  kError = 3,       // anyone -> client: typed failure (ErrorBody)
  kReady = 4,       // worker -> router: registration with its models
  kHeartbeat = 5,   // both ways between router and worker
  kDisconnect = 6,  // worker -> router or router -> worker: going away
  kControl = 7,     // client -> router: control command; answered with kReply
};

std::string_view CommandName(Command command);

// One ember message without its routing envelope.
struct Message {
  Command command = Command::kHeartbeat;
  std::uint64_t request_id = 0;
  // The body frame as it came off the socket (msgpack bytes, or empty). Kept as a frame so
  // the router can pass it on without copying it: a zmq::message_t moved into a send, or
  // copy()'d (which shares a large frame's buffer by reference count), is never memcpy'd.
  zmq::message_t frame{};
  std::uint32_t budget_ms = 0;  // a REQUEST's frame 4; 0: none

  std::string_view body() const { return frame.to_string_view(); }
};

// Encodes `message` as the four protocol frames.
std::vector<zmq::message_t> Encode(Command command, std::uint64_t request_id,
                                   std::string_view body);

// The request id of four protocol frames, read or rewritten in place without touching the
// body (a worker maps its own job ids back to the id each router gave). nullopt / false when
// the frames are not four or frame 2 is not 8 bytes.
std::optional<std::uint64_t> RequestIdOf(std::span<const zmq::message_t> frames);
bool SetRequestId(std::span<zmq::message_t> frames, std::uint64_t request_id);

// Decodes the four protocol frames (five for a REQUEST with a budget). On failure returns
// nullopt and sets *error to a reason fit for a BAD_REQUEST reply.
std::optional<Message> Decode(std::span<zmq::message_t> frames, std::string* error);

// A message as received on a ROUTER socket: the peer's routing id plus the
// decoded message (or the reason it could not be decoded).
struct Envelope {
  std::string peer;
  // The ZAP User-Id of the connection (router/zap_handler.h: "admin",
  // "client", "worker"); empty when the socket has no authentication.
  std::string user_id;
  std::optional<Message> message;
  std::string error;
};

// Receives one multipart message from a ROUTER socket without blocking.
// Returns nullopt when nothing was waiting.
std::optional<Envelope> ReceiveRouted(zmq::socket_t& socket);

// Receives one multipart message from a DEALER socket without blocking.
// Returns nullopt when nothing was waiting; a malformed message yields a
// Message-less result with *error set.
std::optional<std::optional<Message>> ReceiveDealt(zmq::socket_t& socket, std::string* error);

// Sends a message to `peer` through a ROUTER socket, `body` as its body frame (moved, not
// copied). Returns false when the peer is gone (ROUTER_MANDATORY reports EHOSTUNREACH) or its
// queue is full.
bool ForwardRouted(zmq::socket_t& socket, std::string_view peer, Command command,
                   std::uint64_t request_id, zmq::message_t body);
// A REQUEST to `peer` (a worker) with `budget_ms` (> 0) as its frame 4; otherwise as
// ForwardRouted.
bool ForwardRequest(zmq::socket_t& socket, std::string_view peer, std::uint64_t request_id,
                    zmq::message_t body, std::uint32_t budget_ms);
// The same with `body` copied into a new frame.
bool SendRouted(zmq::socket_t& socket, std::string_view peer, Command command,
                std::uint64_t request_id, std::string_view body);

// Sends a message through a DEALER socket. Returns false when it could not be queued within
// the socket's ZMQ_SNDTIMEO (-1, the default, waits for as long as it takes): a DEALER whose
// connection is gone (refused by the router's allow-list, say) has nowhere to queue it.
bool SendDealt(zmq::socket_t& socket, Command command, std::uint64_t request_id,
               std::string_view body);

}  // namespace ember::protocol

#endif  // EMBER_COMMON_PROTOCOL_H_
