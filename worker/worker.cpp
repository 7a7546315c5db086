#include "worker/worker.h"

#include <spdlog/spdlog.h>

#include <iterator>
#include <zmq_addon.hpp>

#include "common/protocol.h"

namespace ember::worker {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::Command;

constexpr char kResultsEndpoint[] = "inproc://ember-worker-results";

}  // namespace

Worker::Worker(WorkerOptions options, std::vector<LoadedModel> models)
    : options_(std::move(options)),
      results_(context_, zmq::socket_type::pull),
      reconnect_delay_(options_.heartbeat_interval) {
  results_.set(zmq::sockopt::linger, 0);
  results_.bind(kResultsEndpoint);
  for (auto& m : models) {
    m.info.dim = static_cast<std::uint32_t>(m.backend->dim());
    runners_.push_back(std::make_unique<ModelRunner>(
        options_.id, m.info, std::move(m.backend), context_, kResultsEndpoint,
        RunnerOptions{.batcher = std::move(m.batcher), .slowdown = options_.slowdown}));
  }
}

Worker::~Worker() {
  runners_.clear();  // joins runner threads before their sockets' context goes
}

void Worker::Connect() {
  router_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  router_->set(zmq::sockopt::routing_id, options_.id);
  router_->set(zmq::sockopt::linger, 0);
  router_->set(zmq::sockopt::sndhwm, 100'000);
  router_->set(zmq::sockopt::rcvhwm, 100'000);
  router_->set(zmq::sockopt::reconnect_ivl, 100);
  router_->set(zmq::sockopt::reconnect_ivl_max, 2000);
  router_->connect(options_.router);
  router_seen_ = Clock::now();
  SendReady();
}

void Worker::SendReady() {
  protocol::ReadyBody ready;
  ready.device = options_.device;
  ready.capacity = options_.capacity;
  ready.weight = options_.weight;
  for (const auto& r : runners_) ready.models.push_back(r->info());
  protocol::SendDealt(*router_, Command::kReady, 0, protocol::Encode(ready));
  spdlog::info("worker '{}' registering with router {}", options_.id, options_.router);
}

void Worker::Run(const std::atomic<bool>& stop) {
  Connect();
  auto next_heartbeat = Clock::now() + options_.heartbeat_interval;
  const auto tick = std::min<std::chrono::milliseconds>(options_.heartbeat_interval,
                                                        std::chrono::milliseconds(50));
  while (!stop.load()) {
    zmq::pollitem_t items[] = {
        {router_->handle(), 0, ZMQ_POLLIN, 0},
        {results_.handle(), 0, ZMQ_POLLIN, 0},
    };
    zmq::poll(items, 2, tick);
    if (items[0].revents & ZMQ_POLLIN) HandleRouter();
    if (items[1].revents & ZMQ_POLLIN) ForwardResults();

    const auto now = Clock::now();
    if (now - router_seen_ > options_.heartbeat_interval * options_.liveness) {
      // The router is gone or unreachable: start over on a fresh socket,
      // backing off so a dead router is not hammered (Paranoid Pirate).
      spdlog::warn("router silent for {} heartbeats; reconnecting in {} ms", options_.liveness,
                   reconnect_delay_.count());
      for (auto waited = std::chrono::milliseconds(0); waited < reconnect_delay_ && !stop.load();
           waited += tick) {
        std::this_thread::sleep_for(tick);
      }
      // Paranoid Pirate doubles up to 32 s; we cap at two heartbeats so that
      // a restarted router has its workers back within a few heartbeats.
      reconnect_delay_ = std::min(reconnect_delay_ * 2, options_.heartbeat_interval * 2);
      Connect();
    }
    if (now >= next_heartbeat) {
      protocol::SendDealt(*router_, Command::kHeartbeat, 0, {});
      next_heartbeat = now + options_.heartbeat_interval;
    }
  }
  protocol::SendDealt(*router_, Command::kDisconnect, 0, {});
  spdlog::info("worker '{}' stopping", options_.id);
}

void Worker::HandleRouter() {
  for (int i = 0; i < 256; ++i) {
    std::string error;
    auto received = protocol::ReceiveDealt(*router_, &error);
    if (!received) return;
    router_seen_ = Clock::now();
    reconnect_delay_ = options_.heartbeat_interval;
    if (!*received) {
      spdlog::warn("malformed message from router: {}", error);
      continue;
    }
    const protocol::Message& message = **received;
    switch (message.command) {
      case Command::kRequest:
        HandleRequest(message);
        break;
      case Command::kHeartbeat:
        break;
      case Command::kDisconnect:
        // The router does not know us (it restarted) or is going away:
        // register again; if it is going, liveness will take over.
        SendReady();
        break;
      default:
        spdlog::warn("router sent unexpected {}", protocol::CommandName(message.command));
    }
  }
}

void Worker::HandleRequest(const protocol::Message& message) {
  Job job;
  job.request_id = message.request_id;
  std::string error;
  if (!protocol::Decode(message.body, &job.request, &error)) {
    SendError(message.request_id, ErrorCode::kBadRequest, error);
    return;
  }
  if (job.request.inputs.empty()) {
    SendError(message.request_id, ErrorCode::kBadRequest, "no inputs to embed");
    return;
  }
  ModelRunner* runner = FindRunner(job.request.model, job.request.version);
  if (runner == nullptr) {
    SendError(message.request_id, ErrorCode::kUnknownModel,
              "worker '" + options_.id + "' does not serve model '" + job.request.model + "'");
    return;
  }
  runner->Submit(std::move(job));
}

ModelRunner* Worker::FindRunner(const std::string& model, std::uint32_t version) {
  ModelRunner* best = nullptr;
  for (const auto& r : runners_) {
    if (r->info().name != model) continue;
    if (version != 0 && r->info().version == version) return r.get();
    if (version == 0 && (best == nullptr || r->info().version > best->info().version)) {
      best = r.get();
    }
  }
  return best;
}

void Worker::ForwardResults() {
  for (int i = 0; i < 256; ++i) {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(results_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return;
    }
    zmq::send_multipart(*router_, frames);
  }
}

void Worker::SendError(std::uint64_t request_id, ErrorCode code, const std::string& message) {
  protocol::SendDealt(*router_, Command::kError, request_id,
                      protocol::Encode(protocol::ErrorBody{code, message}));
}

}  // namespace ember::worker
