#include "common/protocol.h"

#include <array>
#include <bit>
#include <cstring>
#include <zmq_addon.hpp>

namespace ember::protocol {
namespace {

// Request ids travel little-endian; ember runs on little-endian hosts only
// (x86-64, aarch64), which lets us memcpy. Checked at compile time.
static_assert(std::endian::native == std::endian::little, "ember assumes a little-endian host");

zmq::message_t HeaderFrame() {
  zmq::message_t frame(kTag.size() + 1);
  auto* data = static_cast<char*>(frame.data());
  std::memcpy(data, kTag.data(), kTag.size());
  data[kTag.size()] = static_cast<char>(kVersion);
  return frame;
}

// Receives one multipart message into `frames` without blocking: up to frames.size() parts,
// any further ones read and dropped. Returns how many parts the message had (0: nothing was
// waiting). A fixed array, so a receive allocates nothing beyond what ZeroMQ does.
template <std::size_t N>
std::size_t ReceiveInto(zmq::socket_t& socket, std::array<zmq::message_t, N>& frames) {
  if (!socket.recv(frames[0], zmq::recv_flags::dontwait)) return 0;
  std::size_t count = 1;
  bool more = frames[0].more();
  zmq::message_t spare;
  while (more) {
    zmq::message_t& into = count < N ? frames[count] : spare;
    // The rest of a multipart message arrives with its first part.
    (void)socket.recv(into, zmq::recv_flags::none);
    more = into.more();
    ++count;
  }
  return count;
}

std::string FrameCountError(std::size_t count) {
  return "expected " + std::to_string(kFrameCount) + " frames (" + std::to_string(kMaxFrameCount) +
         " for a REQUEST with a budget), got " + std::to_string(count);
}

bool ValidCommand(std::uint8_t c) {
  return c >= static_cast<std::uint8_t>(Command::kRequest) &&
         c <= static_cast<std::uint8_t>(Command::kControl);
}

}  // namespace

std::string_view CommandName(Command command) {
  switch (command) {
    case Command::kRequest:
      return "REQUEST";
    case Command::kReply:
      return "REPLY";
    case Command::kError:
      return "ERROR";
    case Command::kReady:
      return "READY";
    case Command::kHeartbeat:
      return "HEARTBEAT";
    case Command::kDisconnect:
      return "DISCONNECT";
    case Command::kControl:
      return "CONTROL";
  }
  return "UNKNOWN";
}

std::vector<zmq::message_t> Encode(Command command, std::uint64_t request_id,
                                   std::string_view body) {
  std::vector<zmq::message_t> frames;
  frames.reserve(kFrameCount);
  frames.push_back(HeaderFrame());
  const auto cmd = static_cast<std::uint8_t>(command);
  frames.emplace_back(&cmd, 1);
  frames.emplace_back(&request_id, sizeof request_id);
  frames.emplace_back(body.data(), body.size());
  return frames;
}

std::optional<std::uint64_t> RequestIdOf(std::span<const zmq::message_t> frames) {
  if (frames.size() != kFrameCount || frames[2].size() != sizeof(std::uint64_t)) {
    return std::nullopt;
  }
  std::uint64_t id = 0;
  std::memcpy(&id, frames[2].data(), sizeof id);
  return id;
}

bool SetRequestId(std::span<zmq::message_t> frames, std::uint64_t request_id) {
  if (frames.size() != kFrameCount || frames[2].size() != sizeof request_id) return false;
  std::memcpy(frames[2].data(), &request_id, sizeof request_id);
  return true;
}

std::optional<Message> Decode(std::span<zmq::message_t> frames, std::string* error) {
  if (frames.size() != kFrameCount && frames.size() != kMaxFrameCount) {
    *error = FrameCountError(frames.size());
    return std::nullopt;
  }
  const std::string_view header = frames[0].to_string_view();
  if (header.size() != kTag.size() + 1 || header.substr(0, kTag.size()) != kTag) {
    *error = "frame 0 is not an ember protocol header";
    return std::nullopt;
  }
  if (static_cast<std::uint8_t>(header.back()) != kVersion) {
    *error = "unsupported protocol version " +
             std::to_string(static_cast<std::uint8_t>(header.back())) + " (this is version " +
             std::to_string(kVersion) + ")";
    return std::nullopt;
  }
  if (frames[1].size() != 1 || !ValidCommand(*frames[1].data<std::uint8_t>())) {
    *error = "frame 1 is not a valid command";
    return std::nullopt;
  }
  if (frames[2].size() != sizeof(std::uint64_t)) {
    *error = "frame 2 (request id) must be 8 bytes";
    return std::nullopt;
  }
  Message message;
  message.command = static_cast<Command>(*frames[1].data<std::uint8_t>());
  if (frames.size() == kMaxFrameCount) {
    if (message.command != Command::kRequest || frames[4].size() != sizeof message.budget_ms) {
      *error = "frame 4 (budget) must be 4 bytes, on a REQUEST only";
      return std::nullopt;
    }
    std::memcpy(&message.budget_ms, frames[4].data(), sizeof message.budget_ms);
    if (message.budget_ms == 0) {
      *error = "frame 4 (budget) must be more than 0 ms";
      return std::nullopt;
    }
  }
  std::memcpy(&message.request_id, frames[2].data(), sizeof message.request_id);
  message.frame = std::move(frames[3]);
  return message;
}

std::optional<Envelope> ReceiveRouted(zmq::socket_t& socket) {
  std::array<zmq::message_t, 1 + kMaxFrameCount> frames;
  const std::size_t count = ReceiveInto(socket, frames);
  if (count == 0) return std::nullopt;
  Envelope envelope;
  envelope.peer = frames[0].to_string();
  // The connection's metadata rides on the frames it sent (not on the
  // routing-id frame the ROUTER socket makes up).
  if (count > 1) {
    if (const char* user = zmq_msg_gets(frames[1].handle(), "User-Id")) envelope.user_id = user;
  }
  if (count > frames.size()) {
    envelope.error = FrameCountError(count - 1);
  } else {
    envelope.message =
        Decode(std::span<zmq::message_t>(frames).subspan(1, count - 1), &envelope.error);
  }
  return envelope;
}

std::optional<std::optional<Message>> ReceiveDealt(zmq::socket_t& socket, std::string* error) {
  std::array<zmq::message_t, kMaxFrameCount> frames;
  const std::size_t count = ReceiveInto(socket, frames);
  if (count == 0) return std::nullopt;
  if (count > frames.size()) {
    *error = FrameCountError(count);
    return std::optional<Message>();
  }
  return Decode(std::span<zmq::message_t>(frames).first(count), error);
}

namespace {

// The frames of one message to `peer` through a ROUTER socket, with a REQUEST's budget frame
// when budget_ms > 0.
bool SendParts(zmq::socket_t& socket, std::string_view peer, Command command,
               std::uint64_t request_id, zmq::message_t& body, std::uint32_t budget_ms) {
  const auto cmd = static_cast<std::uint8_t>(command);
  constexpr auto more = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
  try {
    // A ROUTER socket takes or refuses a message on its first part (EHOSTUNREACH for a gone
    // peer, EAGAIN at the high-water mark); once that is in, the rest goes with it.
    if (!socket.send(zmq::const_buffer(peer.data(), peer.size()), more)) return false;
    (void)socket.send(HeaderFrame(), more);
    (void)socket.send(zmq::const_buffer(&cmd, 1), more);
    (void)socket.send(zmq::const_buffer(&request_id, sizeof request_id), more);
    if (budget_ms == 0) return socket.send(body, zmq::send_flags::dontwait).has_value();
    (void)socket.send(body, more);
    return socket.send(zmq::const_buffer(&budget_ms, sizeof budget_ms), zmq::send_flags::dontwait)
        .has_value();
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
}

}  // namespace

bool ForwardRouted(zmq::socket_t& socket, std::string_view peer, Command command,
                   std::uint64_t request_id, zmq::message_t body) {
  return SendParts(socket, peer, command, request_id, body, 0);
}

bool ForwardRequest(zmq::socket_t& socket, std::string_view peer, std::uint64_t request_id,
                    zmq::message_t body, std::uint32_t budget_ms) {
  return SendParts(socket, peer, Command::kRequest, request_id, body, budget_ms);
}

bool SendRouted(zmq::socket_t& socket, std::string_view peer, Command command,
                std::uint64_t request_id, std::string_view body) {
  return ForwardRouted(socket, peer, command, request_id, zmq::message_t(body.data(), body.size()));
}

bool SendDealt(zmq::socket_t& socket, Command command, std::uint64_t request_id,
               std::string_view body) {
  return zmq::send_multipart(socket, Encode(command, request_id, body)).has_value();
}

}  // namespace ember::protocol
