#include "client/client.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
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
  // PAIR on the socket's monitor: tells us when the connection to the router is lost.
  zmq::socket_t monitor{context, zmq::socket_type::pair};
};

namespace {

constexpr char kMonitorEndpoint[] = "inproc://ember-client-monitor";

std::size_t HomeRouter(int home, std::size_t count) {
  if (home >= 0) return static_cast<std::size_t>(home) % count;
  std::random_device rd;
  return rd() % count;
}

// Whether the monitor reported `wanted` (draining what it reported).
bool Reported(zmq::socket_t& monitor, std::uint16_t wanted) {
  bool seen = false;
  for (;;) {
    zmq::message_t event;
    if (!monitor.recv(event, zmq::recv_flags::dontwait)) return seen;
    zmq::message_t address;  // the second frame: the endpoint
    (void)monitor.recv(address, zmq::recv_flags::dontwait);
    std::uint16_t id = 0;
    if (event.size() >= sizeof id) std::memcpy(&id, event.data(), sizeof id);
    seen |= id == wanted;
  }
}
bool ConnectionLost(zmq::socket_t& monitor) { return Reported(monitor, ZMQ_EVENT_DISCONNECTED); }

}  // namespace

Client::Client(const std::string& endpoints, curve::ClientKeys curve)
    : Client(RouterList::Split(endpoints), ClientOptions{.curve = std::move(curve)}) {}

Client::Client(std::vector<std::string> endpoints, ClientOptions options)
    : options_(std::move(options)),
      routers_(endpoints, HomeRouter(options_.home, std::max<std::size_t>(endpoints.size(), 1)),
               options_.backoff) {
  Connect(routers_.Pick(Clock::now()));
}

Client::~Client() = default;

void Client::Connect(std::size_t router) {
  probe_.reset();
  socket_ = Open(router);
  connected_ = router;
}

std::unique_ptr<Client::Socket> Client::Open(std::size_t router) const {
  auto socket = std::make_unique<Socket>();
  zmq::socket_t& s = socket->socket;
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::reconnect_ivl, 100);
  s.set(zmq::sockopt::reconnect_ivl_max, 2000);
  // Queue nothing for a router we are not connected to: the send fails instead, and the
  // request goes to the next router, certainly not received by this one.
  s.set(zmq::sockopt::immediate, 1);
  const int heartbeat = static_cast<int>(options_.heartbeat.count());
  s.set(zmq::sockopt::heartbeat_ivl, heartbeat);
  s.set(zmq::sockopt::heartbeat_timeout, 3 * heartbeat);
  curve::MakeClient(s, options_.curve);
  if (zmq_socket_monitor(s.handle(), kMonitorEndpoint,
                         ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0) {
    throw zmq::error_t();
  }
  socket->monitor.set(zmq::sockopt::linger, 0);
  socket->monitor.connect(kMonitorEndpoint);
  s.connect(routers_.endpoint(router));
  return socket;
}

void Client::FailBack() {
  const auto now = Clock::now();
  if (probe_) {
    if (Reported(probe_->monitor, ZMQ_EVENT_HANDSHAKE_SUCCEEDED)) {
      // Home is back: move there on the probe's socket, already connected.
      socket_ = std::move(probe_);
      connected_ = routers_.home();
      routers_.Answered(connected_);
    } else if (now >= probe_deadline_) {
      probe_.reset();
      routers_.Failed(routers_.home(), now);
    }
    return;
  }
  if (routers_.FailBackDue(now)) {
    probe_ = Open(routers_.home());
    probe_deadline_ = now + options_.connect_timeout;
  }
}

int Client::AttemptsFor(int asked) const {
  return asked > 0 ? asked : static_cast<int>(routers_.size());
}

std::string Client::Call(std::uint8_t command, const std::string& body,
                         std::chrono::milliseconds timeout, int attempts, Resend resend,
                         int* used) {
  FailBack();
  for (int attempt = 1;; ++attempt) {
    const std::size_t router = routers_.Pick(Clock::now());
    // Lazy Pirate: a fresh socket for every retry drops whatever was queued for a router that
    // may be gone.
    if (router != connected_ || attempt > 1) Connect(router);
    try {
      if (used != nullptr) *used = attempt;
      std::string reply = CallOnce(command, body, timeout);
      routers_.Answered(router);
      return reply;
    } catch (const Error& e) {
      const bool unanswered = !answered_;
      const bool retryable = resend == Resend::kIfUnsent
                                 ? !sent_
                                 : e.code() == ErrorCode::kUnavailable ||
                                       (e.code() == ErrorCode::kTimeout && unanswered);
      if (unanswered || e.code() == ErrorCode::kUnavailable) {
        routers_.Failed(router, Clock::now());
      } else {
        routers_.Answered(router);  // a typed answer: the router works
      }
      if (!retryable || attempt >= attempts) throw;
    }
  }
}

std::string Client::CallOnce(std::uint8_t command, const std::string& body,
                             std::chrono::milliseconds timeout) {
  sent_ = false;
  answered_ = false;
  const std::uint64_t id = next_request_id_++;
  const std::string& endpoint = routers_.endpoint(connected_);
  ConnectionLost(socket_->monitor);  // what it said about earlier calls is history
  // Bounded: with no connection (router down, or it refused our CURVE key) the send fails.
  const auto connect = std::min(timeout, options_.connect_timeout);
  socket_->socket.set(zmq::sockopt::sndtimeo, static_cast<int>(connect.count()));
  if (!protocol::SendDealt(socket_->socket, static_cast<Command>(command), id, body)) {
    throw Error(ErrorCode::kUnavailable, "could not reach router " + endpoint + " within " +
                                             std::to_string(connect.count()) + " ms");
  }
  sent_ = true;
  const auto deadline = Clock::now() + timeout + kGrace;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      throw Error(ErrorCode::kTimeout, "no reply from router " + endpoint + " within " +
                                           std::to_string(timeout.count()) + " ms");
    }
    zmq::pollitem_t items[] = {{socket_->socket.handle(), 0, ZMQ_POLLIN, 0},
                               {socket_->monitor.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, left);
    if ((items[1].revents & ZMQ_POLLIN) && ConnectionLost(socket_->monitor) &&
        !(items[0].revents & ZMQ_POLLIN)) {
      throw Error(ErrorCode::kUnavailable,
                  "lost the connection to router " + endpoint + " before it answered");
    }
    if (!(items[0].revents & ZMQ_POLLIN)) continue;
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
      if (!protocol::Decode(message.body(), &e, &error)) {
        throw Error(ErrorCode::kInternal, "malformed error reply: " + error);
      }
      throw Error(e.code, e.message);
    }
    if (message.command != Command::kReply) {
      throw Error(ErrorCode::kInternal,
                  "unexpected " + std::string(protocol::CommandName(message.command)));
    }
    return message.frame.to_string();
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
           AttemptsFor(options.attempts), Resend::kIfUnanswered, &attempts);
  protocol::EmbedReply reply;
  std::string error;
  if (!protocol::Decode(body, &reply, &error)) {
    throw Error(ErrorCode::kInternal, "malformed embedding reply: " + error);
  }
  if (reply.count != texts.size()) {
    throw Error(ErrorCode::kInternal, "reply has " + std::to_string(reply.count) + " vectors for " +
                                          std::to_string(texts.size()) + " texts");
  }
  return Embeddings(std::move(reply), attempts, routers_.endpoint(connected_));
}

protocol::StatusReply Client::Status(std::chrono::milliseconds timeout) {
  const std::string body =
      Call(static_cast<std::uint8_t>(Command::kControl),
           protocol::Encode(protocol::ControlRequest{protocol::ControlOp::kStatus}), timeout,
           AttemptsFor(0), Resend::kIfUnanswered);
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
           options.timeout + std::chrono::seconds(5), AttemptsFor(0),
           protocol::ReadOnly(op) ? Resend::kIfUnanswered : Resend::kIfUnsent);
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
