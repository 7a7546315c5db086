#include "common/protocol.h"

#include <bit>
#include <cstring>
#include <iterator>
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
  if (frames.size() != kFrameCount) {
    *error =
        "expected " + std::to_string(kFrameCount) + " frames, got " + std::to_string(frames.size());
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
  std::memcpy(&message.request_id, frames[2].data(), sizeof message.request_id);
  message.body.assign(frames[3].data<char>(), frames[3].size());
  return message;
}

std::optional<Envelope> ReceiveRouted(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
    return std::nullopt;
  }
  Envelope envelope;
  envelope.peer = frames.front().to_string();
  // The connection's metadata rides on the frames it sent (not on the
  // routing-id frame the ROUTER socket makes up).
  if (frames.size() > 1) {
    if (const char* user = zmq_msg_gets(frames[1].handle(), "User-Id")) envelope.user_id = user;
  }
  envelope.message = Decode(std::span<zmq::message_t>(frames).subspan(1), &envelope.error);
  return envelope;
}

std::optional<std::optional<Message>> ReceiveDealt(zmq::socket_t& socket, std::string* error) {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
    return std::nullopt;
  }
  return Decode(frames, error);
}

bool SendRouted(zmq::socket_t& socket, std::string_view peer, Command command,
                std::uint64_t request_id, std::string_view body) {
  std::vector<zmq::message_t> frames;
  frames.reserve(kFrameCount + 1);
  frames.emplace_back(peer.data(), peer.size());
  for (auto& f : Encode(command, request_id, body)) frames.push_back(std::move(f));
  try {
    return zmq::send_multipart(socket, frames, zmq::send_flags::dontwait).has_value();
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
}

bool SendDealt(zmq::socket_t& socket, Command command, std::uint64_t request_id,
               std::string_view body) {
  return zmq::send_multipart(socket, Encode(command, request_id, body)).has_value();
}

}  // namespace ember::protocol
