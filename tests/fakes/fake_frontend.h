// A router's frontend played by a test (tests of the C++ SDKs' failover, of the gateway): a
// ROUTER socket on a thread of its own that answers every request (embeddings of dim 1, all
// 1.0; status; control), stays silent, drops the connection on the first request as a killed
// router would, holds every request until the test releases them, or answers every model's
// requests `delay` after they came but never model "slow"'s (a worker that lost one).
#ifndef EMBER_TESTS_FAKES_FAKE_FRONTEND_H_
#define EMBER_TESTS_FAKES_FAKE_FRONTEND_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/messages.h"
#include "common/protocol.h"

namespace ember::testing {

using namespace std::chrono_literals;

enum class Mode { kAnswer, kSilent, kDropOnFirst, kHoldUntilReleased, kAllButSlow };

// A ROUTER on its own thread, playing a router's frontend.
class FakeRouter {
 public:
  FakeRouter(std::string endpoint, Mode mode, std::chrono::milliseconds delay = 0ms)
      : endpoint_(std::move(endpoint)), mode_(mode), delay_(delay) {
    thread_ = std::thread([this] { Run(); });
    while (!bound_.load()) std::this_thread::sleep_for(1ms);
  }
  ~FakeRouter() {
    stop_ = true;
    thread_.join();
  }
  int received() const { return received_.load(); }
  // kHoldUntilReleased: answers what it holds, and from now on every request at once.
  void Release() { released_ = true; }

 private:
  void Run() {
    zmq::context_t context(1);
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::router);
    socket->set(zmq::sockopt::linger, 0);
    socket->bind(endpoint_);
    bound_ = true;
    const auto until = std::chrono::steady_clock::now() + 60s;  // bounded, whatever the test does
    std::vector<std::pair<std::string, protocol::Message>> held;
    std::deque<Delayed> delayed;  // kAllButSlow's, in the order they are due
    while (!stop_.load() && std::chrono::steady_clock::now() < until) {
      if (released_.load()) {
        for (const auto& [peer, message] : held) Answer(*socket, peer, message);
        held.clear();
      }
      while (!delayed.empty() && delayed.front().due <= std::chrono::steady_clock::now()) {
        Answer(*socket, delayed.front().peer, delayed.front().message);
        delayed.pop_front();
      }
      zmq::pollitem_t item{socket->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, delayed.empty() ? 20ms : 1ms);
      if (!(item.revents & ZMQ_POLLIN)) continue;
      auto envelope = protocol::ReceiveRouted(*socket);
      if (!envelope || !envelope->message) continue;
      ++received_;
      if (mode_ == Mode::kDropOnFirst) {
        socket.reset();  // as a killed router: the connection goes
        while (!stop_.load()) std::this_thread::sleep_for(5ms);
        return;
      }
      if (mode_ == Mode::kSilent) continue;
      if (mode_ == Mode::kHoldUntilReleased && !released_.load()) {
        held.emplace_back(envelope->peer, std::move(*envelope->message));
        continue;
      }
      if (mode_ == Mode::kAllButSlow) {
        if (ModelOf(*envelope->message) != "slow") {
          delayed.push_back({std::chrono::steady_clock::now() + delay_, envelope->peer,
                             std::move(*envelope->message)});
        }
        continue;
      }
      Answer(*socket, envelope->peer, *envelope->message);
    }
  }

  struct Delayed {
    std::chrono::steady_clock::time_point due;
    std::string peer;
    protocol::Message message;
  };

  static std::string ModelOf(const protocol::Message& message) {
    protocol::EmbedRequest request;
    std::string error;
    if (message.command != protocol::Command::kRequest) return {};
    return protocol::Decode(message.body(), &request, &error) ? request.model : std::string();
  }

  static void Answer(zmq::socket_t& socket, const std::string& peer,
                     const protocol::Message& message) {
    std::string body;
    std::string error;
    if (message.command == protocol::Command::kRequest) {
      protocol::EmbedRequest request;
      ASSERT_TRUE(protocol::Decode(message.body(), &request, &error)) << error;
      protocol::EmbedReply reply;
      reply.model = request.model;
      reply.dim = 1;
      reply.count = static_cast<std::uint32_t>(request.inputs.size());
      reply.data.assign(request.inputs.size(), 1.0f);
      body = protocol::Encode(reply);
    } else {
      protocol::ControlRequest control;
      ASSERT_TRUE(protocol::Decode(message.body(), &control, &error)) << error;
      if (control.op == protocol::ControlOp::kStatus) {
        protocol::StatusReply status;
        status.router_version = "fake";
        body = protocol::Encode(status);
      } else {
        body = protocol::Encode(
            protocol::ControlReply{.op = control.op, .model = control.model, .results = {}});
      }
    }
    protocol::SendRouted(socket, peer, protocol::Command::kReply, message.request_id, body);
  }

  const std::string endpoint_;
  const Mode mode_;
  const std::chrono::milliseconds delay_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> bound_{false};
  std::atomic<bool> released_{false};
  std::atomic<int> received_{0};
  std::thread thread_;
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_FAKES_FAKE_FRONTEND_H_
