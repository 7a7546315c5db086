#include "tests/malformed_messages.h"

#include <msgpack.hpp>

#include "common/messages.h"
#include "common/protocol.h"

namespace ember::testing {
namespace {

std::string IdBytes(std::uint64_t id) { return std::string(reinterpret_cast<const char*>(&id), 8); }

std::string Header(std::uint8_t version = protocol::kVersion) {
  return std::string(protocol::kTag) + static_cast<char>(version);
}

// msgpack built by hand, for bodies the typed encoders cannot produce.
template <class Fill>
std::string Pack(Fill fill) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  fill(pk);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace

std::vector<zmq::message_t> ToMessages(const std::vector<std::string>& frames) {
  std::vector<zmq::message_t> out;
  for (const auto& f : frames) out.emplace_back(f.data(), f.size());
  return out;
}

MalformedMessages::MalformedMessages(std::uint64_t seed, std::string model)
    : rng_(seed), model_(std::move(model)) {}

std::string MalformedMessages::RandomBytes(std::size_t max_length) {
  std::string s(Pick(max_length + 1), '\0');
  for (char& c : s) c = static_cast<char>(rng_());
  return s;
}

std::string MalformedMessages::Mutate(std::string s) {
  const std::size_t edits = 1 + Pick(4);
  for (std::size_t e = 0; e < edits && !s.empty(); ++e) {
    switch (Pick(5)) {
      case 0:
        s[Pick(s.size())] ^= static_cast<char>(1u << Pick(8));
        break;
      case 1:
        s[Pick(s.size())] = static_cast<char>(Pick(2) ? 0xff : 0xdd);  // huge lengths, array32
        break;
      case 2:
        s.insert(Pick(s.size() + 1), RandomBytes(8));
        break;
      case 3:
        s.erase(Pick(s.size()), 1 + Pick(4));
        break;
      default:
        s.insert(Pick(s.size() + 1), 4, '\xff');
    }
  }
  return s;
}

std::string MalformedMessages::BrokenBody(const std::string& valid) {
  switch (Pick(8)) {
    case 0:
      return RandomBytes(64);
    case 1:  // truncated: the map announces more than follows
      return valid.substr(0, Pick(valid.size()));
    case 2:
      return Mutate(valid);
    case 3:  // valid msgpack, then trailing bytes
      return valid + RandomBytes(8) + "x";
    case 4:  // wrong types for every field
      return Pack([&](auto& pk) {
        pk.pack_map(5);
        pk.pack(std::string("model"));
        pk.pack(42);
        pk.pack(std::string("inputs"));
        Pick(2) ? pk.pack(std::string("not an array")) : pk.pack(std::vector<int>{1, 2});
        pk.pack(std::string("version"));
        pk.pack(-1);
        pk.pack(std::string("timeout_ms"));
        pk.pack(1.5);
        pk.pack(std::string("truncate"));
        pk.pack(std::string("yes"));
      });
    case 5:  // nested deeper than the decoder allows
      return Pack([&](auto& pk) {
        pk.pack_map(1);
        pk.pack(std::string("inputs"));
        for (int i = 0; i < 20; ++i) pk.pack_array(1);
        pk.pack(std::string("deep"));
      });
    case 6:  // more keys than the decoder allows, or a non-map
      return Pick(2) ? Pack([&](auto& pk) {
        pk.pack_map(100);
        for (int i = 0; i < 100; ++i) {
          pk.pack(std::to_string(i));
          pk.pack(i);
        }
      })
                     : Pack([&](auto& pk) {
                         pk.pack(std::vector<std::string>{"a", "b"});
                       });
    default:  // big random garbage, well under max-message-bytes
      return RandomBytes(200'000);
  }
}

std::string MalformedMessages::RequestBody() {
  protocol::EmbedRequest request;
  request.model = model_;
  request.inputs = {"some text", "more text"};
  switch (Pick(10)) {
    case 0:
      request.inputs.push_back(std::string("bad \xff\xfe utf-8 \xc0\xaf"));
      break;
    case 1:
      request.inputs.push_back(std::string("truncated \xe4\xbd"));
      break;
    case 2:
      request.inputs.clear();
      break;
    case 3:
      request.model.clear();
      break;
    case 4:
      request.model = "no-such-model";
      break;
    case 5:
      request.version = 999;
      break;
    case 6:  // oversized: a text over the router's max-text-bytes
      request.inputs.push_back(std::string(5'000, 'x'));
      break;
    case 7:  // oversized: more texts than max-texts-per-request
      request.inputs.assign(40, "x");
      break;
    default:
      return BrokenBody(protocol::Encode(request));
  }
  return protocol::Encode(request);
}

std::vector<std::string> MalformedMessages::BrokenFrames(std::uint64_t request_id,
                                                         const std::string& body) {
  const std::string cmd(1, static_cast<char>(protocol::Command::kRequest));
  const std::string id = IdBytes(request_id);
  switch (Pick(9)) {
    case 0:  // too few frames
      return {Header(), cmd, id};
    case 1:  // too many frames
      return {Header(), cmd, id, body, RandomBytes(16)};
    case 2: {  // many random frames
      std::vector<std::string> frames(1 + Pick(100));
      for (auto& f : frames) f = RandomBytes(32);
      return frames;
    }
    case 3:  // bad tag
      return {Mutate(Header()), cmd, id, body};
    case 4:  // another protocol version
      return {Header(static_cast<std::uint8_t>(2 + Pick(254))), cmd, id, body};
    case 5:  // unknown command byte
      return {Header(), std::string(1, static_cast<char>(8 + Pick(248))), id, body};
    case 6:  // command of the wrong length
      return {Header(), cmd + cmd, id, body};
    case 7:  // request id of the wrong length
      return {Header(), cmd, id.substr(0, Pick(8)), body};
    default:  // a truncated header
      return {Header().substr(0, Pick(6)), cmd, id, body};
  }
}

std::vector<std::string> MalformedMessages::ClientMessage(std::uint64_t request_id) {
  const std::string id = IdBytes(request_id);
  auto command = [](protocol::Command c) { return std::string(1, static_cast<char>(c)); };
  switch (Pick(6)) {
    case 0:
      return BrokenFrames(request_id, RequestBody());
    case 1: {  // a command clients may not send, with any body
      const protocol::Command c = static_cast<protocol::Command>(2 + Pick(5));  // REPLY..DISCONNECT
      return {Header(), command(c), id, Pick(2) ? RandomBytes(32) : std::string()};
    }
    case 2: {  // a CONTROL whose body is broken
      protocol::ControlRequest status;
      status.op = protocol::ControlOp::kStatus;
      return {Header(), command(protocol::Command::kControl), id,
              BrokenBody(protocol::Encode(status))};
    }
    default:
      return {Header(), command(protocol::Command::kRequest), id, RequestBody()};
  }
}

}  // namespace ember::testing
