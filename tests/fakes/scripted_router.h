// The router's side of the worker protocol, played by a test: a ROUTER socket that a real
// ember::worker::Worker connects to, so a test can send it exactly the CONTROL and REQUEST
// messages of a scenario and see every READY it announces, in order. It acknowledges each READY
// and heartbeats while it waits (as the real router does), and answers nothing else on its own.
// A router the test does not wait on is silent. Every wait is bounded.
#ifndef EMBER_TESTS_FAKES_SCRIPTED_ROUTER_H_
#define EMBER_TESTS_FAKES_SCRIPTED_ROUTER_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/messages.h"
#include "common/protocol.h"

namespace ember::testing {

class ScriptedRouter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ScriptedRouter(const std::string& endpoint)
      : socket_(context_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::router_mandatory, 1);
    socket_.bind(endpoint);
  }

  // Every READY seen so far, in arrival order.
  const std::vector<protocol::ReadyBody>& readies() const { return readies_; }
  const std::string& worker() const { return worker_; }

  // Waits up to `limit` for a READY for which `want` holds; returns it.
  std::optional<protocol::ReadyBody> WaitForReady(
      const std::function<bool(const protocol::ReadyBody&)>& want,
      std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto deadline = Clock::now() + limit;
    const std::size_t seen = readies_.size();
    for (std::size_t i = 0; i < seen; ++i) {
      if (want(readies_[i])) return readies_[i];
    }
    while (Clock::now() < deadline) {
      const std::size_t before = readies_.size();
      Pump(deadline, 0);
      for (std::size_t i = before; i < readies_.size(); ++i) {
        if (want(readies_[i])) return readies_[i];
      }
    }
    return std::nullopt;
  }

  // Sends `body` under `command` with a fresh request id and waits up to `limit` for the
  // worker's REPLY or ERROR to it.
  std::optional<protocol::Message> Call(
      protocol::Command command, const std::string& body,
      std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const std::uint64_t id = next_id_++;
    if (!protocol::SendRouted(socket_, worker_, command, id, body)) {
      ADD_FAILURE() << "worker '" << worker_ << "' unreachable";
      return std::nullopt;
    }
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (auto answer = Pump(deadline, id)) return answer;
    }
    return std::nullopt;
  }

  // A CONTROL op; the result, or a failed one when no answer came.
  protocol::ControlResult Control(protocol::ControlOp op, const std::string& model,
                                  std::uint32_t version,
                                  std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    protocol::ControlRequest control{.op = op, .model = model, .version = version};
    const auto answer = Call(protocol::Command::kControl, protocol::Encode(control), limit);
    protocol::ControlResult result{.code = ErrorCode::kTimeout, .message = "no answer"};
    std::string error;
    if (answer && answer->command == protocol::Command::kReply) {
      EXPECT_TRUE(protocol::Decode(answer->body(), &result, &error)) << error;
    } else if (answer) {
      protocol::ErrorBody body;
      EXPECT_TRUE(protocol::Decode(answer->body(), &body, &error)) << error;
      result.code = body.code;
      result.message = body.message;
    }
    return result;
  }

  // Sends CONTROL without waiting; its answer is collected by later waits (or AwaitAnswer).
  std::uint64_t SendControl(protocol::ControlOp op, const std::string& model,
                            std::uint32_t version) {
    const std::uint64_t id = next_id_++;
    protocol::ControlRequest control{.op = op, .model = model, .version = version};
    EXPECT_TRUE(protocol::SendRouted(socket_, worker_, protocol::Command::kControl, id,
                                     protocol::Encode(control)));
    return id;
  }

  // The answer to request `id` sent earlier, when it came or comes within `limit`.
  std::optional<protocol::Message> AwaitAnswer(
      std::uint64_t id, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
      for (auto it = answers_.begin(); it != answers_.end(); ++it) {
        if (it->request_id == id) {
          protocol::Message m = std::move(*it);
          answers_.erase(it);
          return m;
        }
      }
      if (Clock::now() >= deadline) return std::nullopt;
      if (auto answer = Pump(deadline, id)) return answer;
    }
  }

  // Acknowledges and heartbeats for `span`, answering nothing.
  void Serve(std::chrono::milliseconds span) {
    const auto deadline = Clock::now() + span;
    while (Clock::now() < deadline) Pump(deadline, 0);
  }

  // Sends an embed without waiting, with the router's budget frame when budget_ms > 0; its
  // answer comes by AwaitAnswer. Returns its id.
  std::uint64_t SendEmbed(const std::string& model, std::vector<std::string> texts,
                          std::uint32_t budget_ms = 0) {
    const std::uint64_t id = next_id_++;
    protocol::EmbedRequest request{.model = model, .inputs = std::move(texts)};
    EXPECT_TRUE(protocol::ForwardRequest(socket_, worker_, id,
                                         zmq::message_t(protocol::Encode(request)), budget_ms));
    return id;
  }

  // Embeds `texts` with (model, version); the worker's REPLY or ERROR.
  std::optional<protocol::Message> Embed(const std::string& model, std::uint32_t version,
                                         std::vector<std::string> texts) {
    protocol::EmbedRequest request{.model = model, .version = version, .inputs = std::move(texts)};
    return Call(protocol::Command::kRequest, protocol::Encode(request));
  }

 private:
  // Receives until `deadline`; returns the answer to `want` (0: none wanted) when it comes.
  // READYs are acknowledged and recorded; other answers are kept for AwaitAnswer.
  std::optional<protocol::Message> Pump(Clock::time_point deadline, std::uint64_t want) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1,
              std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(20)));
    if (!worker_.empty() && Clock::now() - last_heartbeat_ > std::chrono::milliseconds(50)) {
      protocol::SendRouted(socket_, worker_, protocol::Command::kHeartbeat, 0, {});
      last_heartbeat_ = Clock::now();
    }
    while (auto envelope = protocol::ReceiveRouted(socket_)) {
      if (!envelope->message) {
        ADD_FAILURE() << "malformed message from the worker: " << envelope->error;
        continue;
      }
      worker_ = envelope->peer;
      protocol::Message& m = *envelope->message;
      switch (m.command) {
        case protocol::Command::kReady: {
          protocol::ReadyBody ready;
          std::string error;
          EXPECT_TRUE(protocol::Decode(m.body(), &ready, &error)) << error;
          readies_.push_back(std::move(ready));
          protocol::SendRouted(socket_, worker_, protocol::Command::kReady, m.request_id, {});
          if (want == 0) return std::nullopt;  // let WaitForReady look at it
          break;
        }
        case protocol::Command::kReply:
        case protocol::Command::kError:
          if (want != 0 && m.request_id == want) return std::move(m);
          answers_.push_back(std::move(m));
          break;
        default:
          break;  // heartbeats, DISCONNECT
      }
    }
    return std::nullopt;
  }

  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string worker_;
  std::uint64_t next_id_ = 1;
  std::vector<protocol::ReadyBody> readies_;
  std::vector<protocol::Message> answers_;
  Clock::time_point last_heartbeat_{};
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_FAKES_SCRIPTED_ROUTER_H_
