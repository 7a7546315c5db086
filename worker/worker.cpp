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

protocol::ControlResult Failure(ErrorCode code, std::string message) {
  protocol::ControlResult r;
  r.code = std::string(ErrorCodeName(code));
  r.message = std::move(message);
  return r;
}

}  // namespace

Worker::Worker(WorkerOptions options, std::vector<LoadedModel> models, RepositorySource source)
    : options_(std::move(options)),
      session_(RandomSession()),
      results_(context_, zmq::socket_type::pull),
      loads_(context_, zmq::socket_type::pull),
      repository_(std::move(source.repository)),
      startup_(std::move(source.startup)),
      reconnect_delay_(options_.heartbeat_interval) {
  results_.set(zmq::sockopt::linger, 0);
  results_.bind(kResultsEndpoint);
  loads_.set(zmq::sockopt::linger, 0);
  loads_.bind(kLoadsEndpoint);
  for (auto& m : models) {
    m.info.dim = static_cast<std::uint32_t>(m.backend->dim());
    m.info.state = ModelState::kReady;
    m.info.memory_bytes = m.backend->memory_bytes();
    Slot& slot = slots_[{m.info.name, m.info.version}];
    slot.info = m.info;
    slot.runner = std::make_unique<ModelRunner>(
        options_.id, m.info, std::move(m.backend), context_, kResultsEndpoint,
        RunnerOptions{.batcher = std::move(m.batcher), .slowdown = options_.slowdown});
  }
  if (repository_) {
    loader_ = std::make_unique<AsyncLoader>(context_, kLoadsEndpoint, std::move(source.load));
  }
}

Worker::~Worker() {
  loader_.reset();  // finishes a load in progress
  slots_.clear();   // joins runner threads before their sockets' context goes
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
  for (const auto& [key, slot] : slots_) ready.models.push_back(slot.info);
  protocol::SendDealt(*router_, Command::kReady, ++ready_seq_, protocol::Encode(ready));
  spdlog::debug("worker '{}' sent READY {} ({} model versions)", options_.id, ready_seq_,
                ready.models.size());
}

void Worker::Run(const std::atomic<bool>& stop) {
  Connect();
  spdlog::info("worker '{}' registering with router {}", options_.id, options_.router);
  for (const auto& [model, version] : startup_) Load(model, version, 0);
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
    FreeDrained(now);
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
        ready_acked_ = std::max(ready_acked_, message.request_id);
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
  if (version != 0) {
    // A draining version still answers what the router sent before it
    // learned the version was going.
    auto it = slots_.find({model, version});
    return it == slots_.end() ? nullptr : it->second.runner.get();
  }
  ModelRunner* best = nullptr;  // the newest READY version
  for (auto it = slots_.lower_bound({model, 0}); it != slots_.end() && it->first.first == model;
       ++it) {
    if (it->second.info.state == ModelState::kReady) best = it->second.runner.get();
  }
  return best;
}

void Worker::HandleControl(const protocol::Message& message) {
  protocol::ControlRequest control;
  std::string error;
  if (!protocol::Decode(message.body, &control, &error)) {
    SendError(message.request_id, ErrorCode::kBadRequest, error);
    return;
  }
  if (control.op == "load") {
    Load(control.model, control.version, message.request_id);
  } else if (control.op == "unload") {
    Unload(control.model, control.version, message.request_id);
  } else {
    SendResult(message.request_id,
               Failure(ErrorCode::kBadRequest, "unknown worker control op '" + control.op + "'"));
  }
}

void Worker::Load(const std::string& model, std::uint32_t version, std::uint64_t control_id) {
  auto reply = [&](protocol::ControlResult r) {
    if (control_id != 0) SendResult(control_id, r);
    if (!r.ok) spdlog::warn("load {}:{} refused: {}", model, version, r.message);
  };
  if (!repository_) {
    // UNKNOWN_MODEL, like a repository without the model: a load sent to
    // every worker leaves out those that cannot have it.
    reply(Failure(ErrorCode::kUnknownModel,
                  "worker '" + options_.id + "' has no model repository (--repository)"));
    return;
  }
  std::vector<std::uint32_t> versions;
  try {
    versions = repository_->Versions(model);
  } catch (const std::exception& e) {
    reply(Failure(ErrorCode::kInternal, e.what()));
    return;
  }
  if (version == 0 && !versions.empty()) version = versions.back();
  if (std::ranges::find(versions, version) == versions.end()) {
    reply(Failure(ErrorCode::kUnknownModel,
                  "model '" + model + "'" + (version ? " version " + std::to_string(version) : "") +
                      " is not in repository " + repository_->root().string()));
    return;
  }
  auto [it, fresh] = slots_.try_emplace({model, version});
  Slot& slot = it->second;
  switch (fresh ? ModelState::kFailed : slot.info.state) {
    case ModelState::kLoading:
      if (control_id != 0) slot.load_waiters.push_back(control_id);
      return;
    case ModelState::kReady:
      // Already serving: still make it the kept version (a rollback).
      if (Retire(model, version)) SendReady();
      reply({.ok = true, .version = version, .memory_bytes = slot.info.memory_bytes});
      return;
    case ModelState::kUnloading:
      // Still draining: take it back into service instead of reloading.
      CancelUnload(slot);
      Retire(model, version);
      SendReady();
      reply({.ok = true, .version = version, .memory_bytes = slot.info.memory_bytes});
      return;
    case ModelState::kFailed:
      break;
  }
  ModelSpec spec;
  try {
    spec = repository_->Spec(model, version);
  } catch (const std::exception& e) {
    slots_.erase(it);
    reply(Failure(ErrorCode::kBadRequest, e.what()));
    return;
  }
  if (spec.batcher.max_batch_tokens == 0) {
    spec.batcher.max_batch_tokens =
        options_.device.starts_with("cuda") ? kGpuBatchTokens : kCpuBatchTokens;
  }
  slot.info = {.name = model, .version = version, .state = ModelState::kLoading};
  if (control_id != 0) slot.load_waiters.push_back(control_id);
  loader_->Start(std::move(spec));
  SendReady();  // operators see LOADING while it runs
}

void Worker::FinishLoads() {
  zmq::message_t cue;
  while (loads_.recv(cue, zmq::recv_flags::dontwait)) {
  }
  if (!loader_) return;
  for (LoadResult& done : loader_->TakeDone()) {
    auto it = slots_.find({done.spec.name, done.spec.version});
    if (it == slots_.end()) continue;
    Slot& slot = it->second;
    protocol::ControlResult result;
    result.version = done.spec.version;
    result.millis = static_cast<std::uint32_t>(done.took.count());
    if (!done.backend) {
      // The versions already serving are untouched: a failed load only
      // leaves a FAILED entry saying why.
      slot.info.state = ModelState::kFailed;
      slot.info.message = done.error;
      result.code = std::string(ErrorCodeName(done.code));
      result.message = done.error;
    } else {
      slot.info.dim = static_cast<std::uint32_t>(done.backend->dim());
      slot.info.memory_bytes = done.backend->memory_bytes();
      slot.info.state = ModelState::kReady;
      slot.info.message.clear();
      slot.runner = std::make_unique<ModelRunner>(
          options_.id, slot.info, std::move(done.backend), context_, kResultsEndpoint,
          RunnerOptions{.batcher = done.spec.batcher, .slowdown = options_.slowdown});
      result.ok = true;
      result.memory_bytes = slot.info.memory_bytes;
      Retire(done.spec.name, done.spec.version);
    }
    // The update goes out before the replies: when a client hears "loaded",
    // the router already routes to the new version.
    SendReady();
    for (std::uint64_t id : std::exchange(slot.load_waiters, {})) SendResult(id, result);
  }
}

bool Worker::Retire(const std::string& model, std::uint32_t keep_first) {
  const std::size_t keep = repository_ ? repository_->PolicyFor(model).Keep() : 0;
  if (keep == 0) return false;
  std::vector<Slot*> versions;  // ascending
  for (auto it = slots_.lower_bound({model, 0}); it != slots_.end() && it->first.first == model;
       ++it) {
    versions.push_back(&it->second);
  }
  std::size_t kept = 1;  // keep_first
  bool changed = false;
  for (auto s = versions.rbegin(); s != versions.rend(); ++s) {
    Slot& slot = **s;
    if (slot.info.version == keep_first || slot.info.state != ModelState::kReady) continue;
    if (kept < keep) {
      ++kept;
      continue;
    }
    spdlog::info("model {} version {} retired by version {} (policy keeps {})", model,
                 slot.info.version, keep_first, keep);
    slot.info.state = ModelState::kUnloading;
    slot.unload_seq = ready_seq_ + 1;  // the READY the caller sends next
    slot.unloading_since = Clock::now();
    changed = true;
  }
  return changed;
}

void Worker::CancelUnload(Slot& slot) {
  for (std::uint64_t id : std::exchange(slot.unload_waiters, {})) {
    if (unload_replies_.erase(id) == 0) continue;
    SendResult(id, Failure(ErrorCode::kUnavailable, "model '" + slot.info.name + "' version " +
                                                        std::to_string(slot.info.version) +
                                                        " was loaded again before it drained"));
  }
  slot.info.state = ModelState::kReady;
  slot.unload_seq = 0;
}

void Worker::Unload(const std::string& model, std::uint32_t version, std::uint64_t control_id) {
  // Validate first: a refused unload must leave every version as it was.
  std::vector<Key> matched;
  for (auto it = slots_.lower_bound({model, 0}); it != slots_.end() && it->first.first == model;
       ++it) {
    if (version != 0 && it->first.second != version) continue;
    if (it->second.info.state == ModelState::kLoading) {
      // The loader cannot be interrupted mid-file; say so rather than wait.
      SendResult(control_id,
                 Failure(ErrorCode::kUnavailable,
                         "model '" + model + "' version " + std::to_string(it->first.second) +
                             " is still loading; unload it when it is ready"));
      return;
    }
    matched.push_back(it->first);
  }
  if (matched.empty()) {
    SendResult(control_id, Failure(ErrorCode::kUnknownModel,
                                   "worker '" + options_.id + "' has no model '" + model + "'" +
                                       (version ? " version " + std::to_string(version) : "")));
    return;
  }
  // Then act: failed entries go at once, serving ones drain.
  bool changed = false;
  std::size_t draining = 0;
  for (const Key& key : matched) {
    Slot& slot = slots_.at(key);
    switch (slot.info.state) {
      case ModelState::kFailed:
        slots_.erase(key);
        changed = true;
        continue;
      case ModelState::kReady:
        slot.info.state = ModelState::kUnloading;
        slot.unload_seq = ready_seq_ + 1;
        slot.unloading_since = Clock::now();
        changed = true;
        break;
      case ModelState::kUnloading:
      case ModelState::kLoading:  // excluded above
        break;
    }
    slot.unload_waiters.push_back(control_id);
    ++draining;
  }
  if (changed) SendReady();
  if (draining == 0) {
    SendResult(control_id, {.ok = true, .version = version});
    return;
  }
  UnloadReply& pending = unload_replies_[control_id];
  pending.remaining = draining;
  pending.result = {.ok = true, .version = version};
}

void Worker::FreeDrained(Clock::time_point now) {
  // Without an acknowledgement (router gone) nothing can arrive for the
  // version either; liveness bounds the wait.
  const auto fallback = options_.heartbeat_interval * options_.liveness;
  bool any = false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> freed;  // (control id, bytes)
  for (auto it = slots_.begin(); it != slots_.end();) {
    Slot& slot = it->second;
    if (slot.info.state != ModelState::kUnloading ||
        (ready_acked_ < slot.unload_seq && now - slot.unloading_since < fallback) ||
        !slot.runner->Idle()) {
      ++it;
      continue;
    }
    spdlog::info("model {} version {} unloaded ({} MiB freed)", slot.info.name, slot.info.version,
                 slot.info.memory_bytes >> 20);
    for (std::uint64_t id : slot.unload_waiters) freed.emplace_back(id, slot.info.memory_bytes);
    it = slots_.erase(it);  // joins the runner's threads and frees the model
    any = true;
  }
  if (!any) return;
  // glibc keeps freed heap pages for reuse; give them back so that memory
  // after an unload is what operators (and the RSS test) expect. Then the
  // update, then the answers: whoever hears "unloaded" finds it gone.
  malloc_trim(0);
  SendReady();
  for (const auto& [id, bytes] : freed) {
    auto reply = unload_replies_.find(id);
    if (reply == unload_replies_.end()) continue;
    reply->second.result.memory_bytes += bytes;
    if (--reply->second.remaining == 0) {
      SendResult(id, reply->second.result);
      unload_replies_.erase(reply);
    }
  }
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
  protocol::ControlResult r = result;
  r.worker = options_.id;
  protocol::SendDealt(*router_, Command::kReply, control_id, protocol::Encode(r));
}

}  // namespace ember::worker
