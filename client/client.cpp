#include "client/client.h"

#include <algorithm>
#include <optional>
#include <zmq.hpp>

#include "client/embed_call.h"
#include "common/protocol.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::Command;

}  // namespace

Client::Client(const std::string& endpoints, curve::ClientKeys curve)
    : Client(RouterList::Split(endpoints), ClientOptions{.curve = std::move(curve)}) {}

Client::Client(std::vector<std::string> endpoints, ClientOptions options)
    : options_(std::move(options)),
      routers_(endpoints, RouterList::PickHome(options_.home, endpoints.size()), options_.backoff) {
  Connect(routers_.Pick(Clock::now()));
}

Client::~Client() = default;

void Client::Connect(std::size_t router) {
  probe_.reset();
  socket_ = Open(router);
  connected_ = router;
}

std::unique_ptr<RouterConnection> Client::Open(std::size_t router) const {
  return RouterConnection::Open(routers_.endpoint(router), options_.curve, options_.heartbeat);
}

void Client::FailBack() {
  const auto now = Clock::now();
  if (probe_) {
    if (probe_->Drain().connected) {
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
  socket_->Drain();  // what it said about earlier calls is history
  // Bounded: with no connection (router down, or it refused our CURVE key) the send fails.
  const auto connect = std::min(timeout, options_.connect_timeout);
  socket_->socket().set(zmq::sockopt::sndtimeo, static_cast<int>(connect.count()));
  if (!protocol::SendDealt(socket_->socket(), static_cast<Command>(command), id, body)) {
    throw Error(ErrorCode::kUnavailable, "could not reach router " + endpoint + " within " +
                                             std::to_string(connect.count()) + " ms");
  }
  sent_ = true;
  const auto deadline = Clock::now() + timeout + kReplyGrace;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      throw Error(ErrorCode::kTimeout, "no reply from router " + endpoint + " within " +
                                           std::to_string(timeout.count()) + " ms");
    }
    zmq::pollitem_t items[] = {{socket_->socket().handle(), 0, ZMQ_POLLIN, 0},
                               {socket_->monitor().handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, left);
    if ((items[1].revents & ZMQ_POLLIN) && socket_->Drain().lost &&
        !(items[0].revents & ZMQ_POLLIN)) {
      throw Error(ErrorCode::kUnavailable,
                  "lost the connection to router " + endpoint + " before it answered");
    }
    if (!(items[0].revents & ZMQ_POLLIN)) continue;
    std::string error;
    auto received = protocol::ReceiveDealt(socket_->socket(), &error);
    if (!received) continue;
    if (!*received) throw Error(ErrorCode::kInternal, "malformed reply: " + error);
    protocol::Message& message = **received;
    // An error about a message the router could not even parse carries id 0.
    if (message.request_id != id &&
        !(message.request_id == 0 && message.command == Command::kError)) {
      continue;  // a late reply to an earlier call that timed out
    }
    answered_ = true;
    if (message.command == Command::kError) throw embed_call::ErrorOf(message.body());
    if (message.command != Command::kReply) {
      throw Error(ErrorCode::kInternal,
                  "unexpected " + std::string(protocol::CommandName(message.command)));
    }
    return message.frame.to_string();
  }
}

Embeddings Client::Embed(std::string_view model, const std::vector<std::string>& texts,
                         const EmbedOptions& options) {
  return Request(embed_call::EncodeRequest(model, texts, options), texts.size(), options,
                 embed_call::EmbedTask(options));
}

Embeddings Client::Tokenize(std::string_view model, const std::vector<std::string>& texts,
                            const EmbedOptions& options) {
  return Request(embed_call::EncodeTokenizeRequest(model, texts, options), texts.size(), options,
                 protocol::Task::kTokenize);
}

Embeddings Client::Decode(std::string_view model,
                          const std::vector<std::vector<std::uint32_t>>& ids,
                          const EmbedOptions& options) {
  return Request(embed_call::EncodeDecodeRequest(model, ids, options), ids.size(), options,
                 protocol::Task::kDecode);
}

Embeddings Client::Score(std::string_view model, const std::vector<std::string>& texts,
                         const std::vector<std::string>& pairs, const EmbedOptions& options) {
  return Request(embed_call::EncodeScoreRequest(model, texts, pairs, options), texts.size(),
                 options, protocol::Task::kScore);
}

Embeddings Client::Request(const std::string& body, std::size_t texts, const EmbedOptions& options,
                           protocol::Task task) {
  int attempts = 0;
  const std::string reply =
      Call(static_cast<std::uint8_t>(Command::kRequest), body, options.timeout,
           AttemptsFor(options.attempts), Resend::kIfUnanswered, &attempts);
  return embed_call::EmbeddingsOf(reply, texts, attempts, routers_.endpoint(connected_), task);
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
