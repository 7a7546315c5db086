// ember-raw-broker: the least a broker of ember's shape must do, as the baseline for the
// router's own cost (bench/router_overhead.sh): a frontend ROUTER for clients and a backend
// ROUTER for workers, requests handed round robin to the workers that said READY, each under
// a broker-wide id (clients number their requests independently) that is mapped back on the
// reply. No model lookup, no policy, credits, deadlines, queues, cache or metrics; messages are
// moved, never decoded past the 8-byte id.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/protocol.h"
#include "common/shutdown_signal.h"

namespace {

struct Pending {
  zmq::message_t client;  // its routing id frame
  std::uint64_t id;       // the client's request id
};

}  // namespace

int main(int argc, char** argv) {
  using ember::protocol::Command;
  std::string frontend = "tcp://127.0.0.1:5555", backend = "tcp://127.0.0.1:5556";
  CLI::App app{"ember-raw-broker: a bare ROUTER/ROUTER broker, the router's baseline"};
  app.add_option("--frontend", frontend, "endpoint clients connect to");
  app.add_option("--backend", backend, "endpoint workers connect to");
  CLI11_PARSE(app, argc, argv);

  zmq::context_t context(1);
  zmq::socket_t front(context, zmq::socket_type::router), back(context, zmq::socket_type::router);
  for (zmq::socket_t* s : {&front, &back}) {
    s->set(zmq::sockopt::linger, 0);
    s->set(zmq::sockopt::sndhwm, 1'000'000);
    s->set(zmq::sockopt::rcvhwm, 1'000'000);
  }
  front.bind(frontend);
  back.bind(backend);

  std::vector<std::string> workers;
  std::size_t next_worker = 0;
  std::uint64_t next_id = 0;
  std::unordered_map<std::uint64_t, Pending> pending;
  ember::ShutdownSignal shutdown;
  std::vector<zmq::message_t> frames;
  auto command_of = [](const std::vector<zmq::message_t>& f) {
    return static_cast<Command>(*static_cast<const std::uint8_t*>(f[2].data()));
  };
  while (!shutdown.flag().load()) {
    zmq::pollitem_t items[] = {{front.handle(), 0, ZMQ_POLLIN, 0},
                               {back.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 2, std::chrono::milliseconds(100));
    for (int i = 0; i < 1024 && (items[1].revents & ZMQ_POLLIN); ++i) {
      frames.clear();
      if (!zmq::recv_multipart(back, std::back_inserter(frames), zmq::recv_flags::dontwait)) break;
      if (frames.size() != 1 + ember::protocol::kFrameCount || frames[2].size() != 1) continue;
      const Command command = command_of(frames);
      if (command == Command::kReady) {
        const std::string worker = frames[0].to_string();
        if (std::find(workers.begin(), workers.end(), worker) == workers.end()) {
          workers.push_back(worker);
        }
        frames[4].rebuild(0);  // the acknowledgement: an empty READY with the same id
        zmq::send_multipart(back, frames);
      } else if (command == Command::kReply || command == Command::kError) {
        const auto message = std::span(frames).subspan(1);  // past the routing id
        const auto id = ember::protocol::RequestIdOf(message);
        auto it = id ? pending.find(*id) : pending.end();
        if (it == pending.end()) continue;
        ember::protocol::SetRequestId(message, it->second.id);
        frames[0] = std::move(it->second.client);
        pending.erase(it);
        zmq::send_multipart(front, frames, zmq::send_flags::dontwait);
      }
    }
    for (int i = 0; i < 1024 && (items[0].revents & ZMQ_POLLIN); ++i) {
      frames.clear();
      if (!zmq::recv_multipart(front, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
        break;
      }
      const auto message = std::span(frames).subspan(1);  // past the routing id
      const auto client_id = ember::protocol::RequestIdOf(message);
      if (!client_id || workers.empty()) continue;
      const std::uint64_t id = ++next_id;
      ember::protocol::SetRequestId(message, id);
      pending.emplace(id, Pending{std::move(frames[0]), *client_id});
      const std::string& worker = workers[next_worker++ % workers.size()];
      frames[0] = zmq::message_t(worker.data(), worker.size());
      zmq::send_multipart(back, frames, zmq::send_flags::dontwait);
    }
  }
  return 0;
}
