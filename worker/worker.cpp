#include "worker/worker.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <zmq_addon.hpp>

#include "common/protocol.h"

namespace ember::worker {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::Command;
using protocol::ModelState;

constexpr char kResultsEndpoint[] = "inproc://ember-worker-results";
constexpr char kLoadsEndpoint[] = "inproc://ember-worker-loads";

std::uint64_t RandomSession() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(getpid());
}

// Resident set size of this process, from /proc (0 where unavailable).
std::uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

Worker::Worker(WorkerOptions options, ModelSource source)
    : options_(std::move(options)),
      session_(RandomSession()),
      results_(context_, zmq::socket_type::pull),
      loads_(context_, zmq::socket_type::pull),
      repository_(std::move(source.repository)),
      startup_(std::move(source.startup)),
      lifecycle_(options_.id, repository_.get(), options_.heartbeat_interval * options_.liveness),
      reconnect_delay_(options_.heartbeat_interval) {
  results_.set(zmq::sockopt::linger, 0);
  results_.bind(kResultsEndpoint);
  loads_.set(zmq::sockopt::linger, 0);
  loads_.bind(kLoadsEndpoint);
  if (repository_) {
    loader_ = std::make_unique<AsyncLoader>(context_, kLoadsEndpoint, std::move(source.load));
  }
}

Worker::~Worker() {
  loader_.reset();   // finishes a load in progress
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
  // Never block the socket thread on a send: with the connection gone (a router down, or one
  // that refused our key) there is nowhere to queue, and liveness reconnects us anyway.
  router_->set(zmq::sockopt::sndtimeo, 0);
  curve::MakeClient(*router_, options_.curve);
  router_->connect(options_.router);
  router_seen_ = Clock::now();
  SendReady();
}

void Worker::SendReady() {
  protocol::ReadyBody ready;
  ready.device = options_.device;
  ready.capacity = options_.capacity;
  ready.weight = options_.weight;
  ready.session = session_;
  ready.rss_bytes = ResidentBytes();
  ready.models = lifecycle_.Snapshot();
  protocol::SendDealt(*router_, Command::kReady, ++ready_seq_, protocol::Encode(ready));
  // Stamped now that it has gone out: drains it announced wait for its acknowledgement.
  lifecycle_.Announced(ready_seq_, Clock::now());
  spdlog::debug("worker '{}' sent READY {} ({} model versions)", options_.id, ready_seq_,
                ready.models.size());
}

void Worker::Run(const std::atomic<bool>& stop) {
  Connect();
  spdlog::info("worker '{}' registering with router {}", options_.id, options_.router);
  for (const auto& [model, version] : startup_) Apply(lifecycle_.Load(model, version, 0));
  auto next_heartbeat = Clock::now() + options_.heartbeat_interval;
  const auto tick = std::min<std::chrono::milliseconds>(options_.heartbeat_interval,
                                                        std::chrono::milliseconds(50));
  while (!stop.load()) {
    zmq::pollitem_t items[] = {
        {router_->handle(), 0, ZMQ_POLLIN, 0},
        {results_.handle(), 0, ZMQ_POLLIN, 0},
        {loads_.handle(), 0, ZMQ_POLLIN, 0},
    };
    zmq::poll(items, 3, tick);
    if (items[0].revents & ZMQ_POLLIN) HandleRouter();
    if (items[1].revents & ZMQ_POLLIN) ForwardResults();
    if (items[2].revents & ZMQ_POLLIN) FinishLoads();

    const auto now = Clock::now();
    Apply(lifecycle_.FreeDrained(now, [this](const ModelKey& key) {
      auto it = runners_.find(key);
      return it == runners_.end() || it->second->Idle();
    }));
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
  // Best effort and never blocking: with no connection to the router (it is
  // down, or a CURVE handshake never completed) there is nobody to tell.
  zmq::send_multipart(*router_, protocol::Encode(Command::kDisconnect, 0, {}),
                      zmq::send_flags::dontwait);
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
      case Command::kControl:
        HandleControl(message);
        break;
      case Command::kReady:
        // The router acknowledges a READY: every request it sent before
        // seeing that READY has arrived by now.
        lifecycle_.Acked(message.request_id);
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
  const auto key = lifecycle_.Route(job.request.model, job.request.version);
  auto runner = key ? runners_.find(*key) : runners_.end();
  if (runner == runners_.end()) {
    SendError(message.request_id, ErrorCode::kUnknownModel,
              "worker '" + options_.id + "' does not serve model '" + job.request.model + "'");
    return;
  }
  runner->second->Submit(std::move(job));
}

void Worker::HandleControl(const protocol::Message& message) {
  protocol::ControlRequest control;
  std::string error;
  if (!protocol::Decode(message.body, &control, &error)) {
    SendError(message.request_id, ErrorCode::kBadRequest, error);
    return;
  }
  switch (control.op) {
    case protocol::ControlOp::kLoad:
      Apply(lifecycle_.Load(control.model, control.version, message.request_id));
      return;
    case protocol::ControlOp::kUnload:
      Apply(lifecycle_.Unload(control.model, control.version, message.request_id));
      return;
    case protocol::ControlOp::kStatus:
    case protocol::ControlOp::kList:
      break;
  }
  SendResult(message.request_id, {.worker = options_.id,
                                  .code = ErrorCode::kBadRequest,
                                  .message = "a worker takes load and unload, not " +
                                             std::string(protocol::ControlOpName(control.op))});
}

void Worker::FinishLoads() {
  zmq::message_t cue;
  while (loads_.recv(cue, zmq::recv_flags::dontwait)) {
  }
  if (!loader_) return;
  for (LoadResult& done : loader_->TakeDone()) {
    const ModelKey key{done.spec.name, done.spec.version};
    LoadOutcome outcome{.key = key,
                        .ok = done.backend != nullptr,
                        .code = done.code,
                        .error = done.error,
                        .took = done.took};
    if (done.backend) {
      outcome.dim = static_cast<std::uint32_t>(done.backend->dim());
      outcome.memory_bytes = done.backend->memory_bytes();
      loaded_[key] = {std::move(done.backend), std::move(done.spec.batcher)};
    }
    Apply(lifecycle_.LoadFinished(outcome));
    loaded_.erase(key);  // not served after all (the version went away meanwhile)
  }
}

void Worker::Apply(Effects effects) {
  for (const ModelKey& key : effects.freed) runners_.erase(key);  // joins its threads
  if (!effects.freed.empty()) {
    // glibc keeps freed heap pages for reuse; give them back so that memory after an unload
    // is what operators (and the RSS test) expect.
    malloc_trim(0);
  }
  for (const ModelKey& key : effects.serve) {
    auto loaded = loaded_.find(key);
    if (loaded == loaded_.end()) continue;
    auto& [backend, batcher] = loaded->second;
    RunnerOptions runner{.batcher = std::move(batcher), .slowdown = options_.slowdown};
    // The backend says whether padding costs it compute: the token budget follows.
    runner.batcher.padded = backend->pads();
    const protocol::ModelInfo info{.name = key.first,
                                   .version = key.second,
                                   .dim = static_cast<std::uint32_t>(backend->dim())};
    runners_[key] = std::make_unique<ModelRunner>(options_.id, info, std::move(backend), context_,
                                                  kResultsEndpoint, std::move(runner));
    loaded_.erase(loaded);
  }
  for (ModelSpec& spec : effects.loads) loader_->Start(std::move(spec));
  if (effects.announce && router_) SendReady();
  for (const auto& [id, result] : effects.replies) SendResult(id, result);
}

void Worker::ForwardResults() {
  for (int i = 0; i < 256; ++i) {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(results_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return;
    }
    if (!zmq::send_multipart(*router_, frames)) {
      // The router has stopped hearing us; it re-dispatches what we had when it declares us
      // dead, so this reply is not the request's only chance.
      spdlog::warn("router unreachable: dropped a reply (the router re-dispatches it)");
    }
  }
}

void Worker::SendError(std::uint64_t request_id, ErrorCode code, const std::string& message) {
  protocol::SendDealt(*router_, Command::kError, request_id,
                      protocol::Encode(protocol::ErrorBody{code, message}));
}

void Worker::SendResult(std::uint64_t control_id, const protocol::ControlResult& result) {
  if (control_id == 0) return;  // a startup load: nobody asked
  if (!result.ok) spdlog::warn("control {} refused: {}", control_id, result.message);
  protocol::ControlResult r = result;
  r.worker = options_.id;
  protocol::SendDealt(*router_, Command::kReply, control_id, protocol::Encode(r));
}

}  // namespace ember::worker
