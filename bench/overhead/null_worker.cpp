// ember-null-worker: a worker with no model, for measuring what the router itself costs
// (bench/router_overhead.sh). It registers one model version, heartbeats, and answers every
// REQUEST at once with the same prepared one-vector reply, without decoding it: all the time
// a request takes through it is the broker's and the sockets'. Send one text per request.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/messages.h"
#include "common/protocol.h"
#include "common/shutdown_signal.h"

int main(int argc, char** argv) {
  using ember::protocol::Command;
  std::string router = "tcp://127.0.0.1:5556", id = "null", model = "null";
  std::uint32_t dim = 384, capacity = 100'000;
  int heartbeat_ms = 1000;
  CLI::App app{"ember-null-worker: answers every request at once, with no model"};
  app.add_option("--router", router, "router (or broker) backend endpoint");
  app.add_option("--id", id, "routing id");
  app.add_option("--model", model, "model name it announces");
  app.add_option("--dim", dim, "vector length of its replies")->check(CLI::Range(1, 65536));
  app.add_option("--capacity", capacity, "requests in flight it announces");
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval")
      ->check(CLI::Range(10, 60000));
  CLI11_PARSE(app, argc, argv);

  ember::protocol::ReadyBody ready;
  ready.device = "null";
  ready.capacity = capacity;
  ready.session =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  ready.models = {{.name = model, .version = 1, .dim = dim}};
  const std::string ready_body = ember::protocol::Encode(ready);
  ember::protocol::EmbedReply reply;
  reply.model = model;
  reply.version = 1;
  reply.worker = id;
  reply.dim = dim;
  reply.count = 1;
  reply.batch_size = 1;
  reply.data.assign(dim, 0.5f);
  const std::string reply_body = ember::protocol::Encode(reply);

  zmq::context_t context(1);
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::routing_id, id);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, 1'000'000);
  socket.set(zmq::sockopt::rcvhwm, 1'000'000);
  socket.connect(router);
  std::uint64_t seq = 0;
  ember::protocol::SendDealt(socket, Command::kReady, ++seq, ready_body);

  ember::ShutdownSignal shutdown;
  const auto interval = std::chrono::milliseconds(heartbeat_ms);
  auto next_heartbeat = std::chrono::steady_clock::now() + interval;
  std::vector<zmq::message_t> frames;
  while (!shutdown.flag().load()) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(50));
    for (int i = 0; i < 1024 && (item.revents & ZMQ_POLLIN); ++i) {
      frames.clear();
      if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
        break;
      }
      // A router's REQUEST may carry a fifth frame, the time it has left (docs/protocol.md).
      if (frames.size() < ember::protocol::kFrameCount ||
          frames.size() > ember::protocol::kFrameCount + 1 || frames[1].size() != 1) {
        continue;
      }
      const auto command =
          static_cast<Command>(*static_cast<const std::uint8_t*>(frames[1].data()));
      if (command == Command::kRequest) {
        // The router's frames back, with the prepared body: no decode, no copy of the texts.
        frames.resize(ember::protocol::kFrameCount);  // a reply has no budget frame
        frames[1] = zmq::message_t(std::string_view("\x02", 1));
        frames[3] = zmq::message_t(reply_body.data(), reply_body.size());
        zmq::send_multipart(socket, frames);
      } else if (command == Command::kDisconnect) {
        ember::protocol::SendDealt(socket, Command::kReady, ++seq, ready_body);
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_heartbeat) {
      ember::protocol::SendDealt(socket, Command::kHeartbeat, 0, {});
      next_heartbeat = now + interval;
    }
  }
  ember::protocol::SendDealt(socket, Command::kDisconnect, 0, {});
  return 0;
}
