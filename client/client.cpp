#include "client/client.h"

#include <optional>
#include <zmq.hpp>

#include "common/protocol.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::Command;

// Past the request's own deadline the router answers TIMEOUT itself; we wait
// a little longer than that before concluding the router is unreachable.
constexpr std::chrono::milliseconds kGrace{250};

}  // namespace

struct Client::Socket {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::dealer};
};

Client::Client(const std::string& endpoint, curve::ClientKeys curve)
    : endpoint_(endpoint), curve_(std::move(curve)) {
  Connect();
}

Client::~Client() = default;

void Client::Connect() {
  socket_ = std::make_unique<Socket>();
  socket_->socket.set(zmq::sockopt::linger, 0);
  socket_->socket.set(zmq::sockopt::reconnect_ivl, 100);
  socket_->socket.set(zmq::sockopt::reconnect_ivl_max, 2000);
  curve::MakeClient(socket_->socket, curve_);
  socket_->socket.connect(endpoint_);
}

std::string Client::Call(std::uint8_t command, const std::string& body,
                         std::chrono::milliseconds timeout, int attempts, int* used) {
  for (int attempt = 1;; ++attempt) {
    try {
      if (used != nullptr) *used = attempt;
      return CallOnce(command, body, timeout);
    } catch (const Error& e) {
      const bool retryable =
          e.code() == ErrorCode::kUnavailable || (e.code() == ErrorCode::kTimeout && !answered_);
      if (!retryable || attempt >= attempts) throw;
      // Lazy Pirate: a fresh socket drops whatever was queued for a router
      // that may be gone.
      Connect();
    }
  }
}

std::string Client::CallOnce(std::uint8_t command, const std::string& body,
                             std::chrono::milliseconds timeout) {
  answered_ = false;
  const std::uint64_t id = next_request_id_++;
  // Bounded: a connection the router refused (CURVE) leaves nowhere to queue the message.
  socket_->socket.set(zmq::sockopt::sndtimeo, static_cast<int>(timeout.count()));
  if (!protocol::SendDealt(socket_->socket, static_cast<Command>(command), id, body)) {
    throw Error(ErrorCode::kUnavailable,
                "could not send to the router within " + std::to_string(timeout.count()) + " ms");
  }
  const auto deadline = Clock::now() + timeout + kGrace;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      throw Error(ErrorCode::kTimeout,
                  "no reply from the router within " + std::to_string(timeout.count()) + " ms");
    }
    zmq::pollitem_t item{socket_->socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, left);
    if (!(item.revents & ZMQ_POLLIN)) continue;
    std::string error;
    auto received = protocol::ReceiveDealt(socket_->socket, &error);
    if (!received) continue;
    if (!*received) throw Error(ErrorCode::kInternal, "malformed reply: " + error);
    protocol::Message& message = **received;
    // An error about a message the router could not even parse carries id 0.
    if (message.request_id != id &&
        !(message.request_id == 0 && message.command == Command::kError)) {
      continue;  // a late reply to an earlier call that timed out
    }
    answered_ = true;
    if (message.command == Command::kError) {
      protocol::ErrorBody e;
      if (!protocol::Decode(message.body, &e, &error)) {
        throw Error(ErrorCode::kInternal, "malformed error reply: " + error);
      }
      throw Error(e.code, e.message);
    }
    if (message.command != Command::kReply) {
      throw Error(ErrorCode::kInternal,
                  "unexpected " + std::string(protocol::CommandName(message.command)));
    }
    return std::move(message.body);
  }
}

Embeddings Client::Embed(std::string_view model, const std::vector<std::string>& texts,
                         const EmbedOptions& options) {
  protocol::EmbedRequest request;
  request.model = std::string(model);
  request.version = options.version;
  request.inputs = texts;
  request.timeout_ms = static_cast<std::uint32_t>(options.timeout.count());
  request.truncate = options.truncate;
  int attempts = 0;
  const std::string body =
      Call(static_cast<std::uint8_t>(Command::kRequest), protocol::Encode(request), options.timeout,
           options.attempts, &attempts);
  protocol::EmbedReply reply;
  std::string error;
  if (!protocol::Decode(body, &reply, &error)) {
    throw Error(ErrorCode::kInternal, "malformed embedding reply: " + error);
  }
  if (reply.count != texts.size()) {
    throw Error(ErrorCode::kInternal, "reply has " + std::to_string(reply.count) + " vectors for " +
                                          std::to_string(texts.size()) + " texts");
  }
  return Embeddings(std::move(reply), attempts);
}

protocol::StatusReply Client::Status(std::chrono::milliseconds timeout) {
  const std::string body =
      Call(static_cast<std::uint8_t>(Command::kControl),
           protocol::Encode(protocol::ControlRequest{protocol::ControlOp::kStatus}), timeout, 1);
  protocol::StatusReply status;
  std::string error;
  if (!protocol::Decode(body, &status, &error)) {
    throw Error(ErrorCode::kInternal, "malformed status reply: " + error);
  }
  return status;
}

protocol::ControlReply Client::Load(std::string_view model, std::uint32_t version,
                                    const ControlOptions& options) {
  return Manage(protocol::ControlOp::kLoad, model, version, options);
}

protocol::ControlReply Client::Unload(std::string_view model, std::uint32_t version,
                                      const ControlOptions& options) {
  return Manage(protocol::ControlOp::kUnload, model, version, options);
}

protocol::ControlReply Client::Manage(protocol::ControlOp op, std::string_view model,
                                      std::uint32_t version, const ControlOptions& options) {
  protocol::ControlRequest control;
  control.op = op;
  control.model = std::string(model);
  control.version = version;
  control.workers = options.workers;
  control.timeout_ms = static_cast<std::uint32_t>(options.timeout.count());
  // The router answers by its own deadline; wait a little longer for it.
  const std::string body =
      Call(static_cast<std::uint8_t>(Command::kControl), protocol::Encode(control),
           options.timeout + std::chrono::seconds(5), 1);
  protocol::ControlReply reply;
  std::string error;
  if (!protocol::Decode(body, &reply, &error)) {
    throw Error(ErrorCode::kInternal, "malformed control reply: " + error);
  }
  std::string failures;
  std::optional<ErrorCode> first;
  for (const auto& r : reply.results) {
    if (r.ok) continue;
    if (!first) first = r.code;
    failures += (failures.empty() ? "" : "; ") + r.worker + ": " +
                std::string(ErrorCodeName(r.code)) + ": " + r.message;
  }
  if (first) {
    throw Error(*first, std::string(protocol::ControlOpName(reply.op)) + " " + reply.model +
                            " failed on " + failures);
  }
  return reply;
}

}  // namespace ember
