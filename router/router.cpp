#include "router/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/curve.h"
#include "common/messages.h"

namespace ember::router {
namespace {

using protocol::Command;

constexpr std::string_view kRouterVersion = "ember-router 0.1";
constexpr int kHighWaterMark = 100'000;

std::string UnknownModelMessage(const std::string& model, std::uint32_t version) {
  std::string what = "no worker serves model '" + model + "'";
  if (version != 0) what += " version " + std::to_string(version);
  return what;
}

// Whether a CONTROL body only looks (status, list): with CURVE on, any
// admitted client may do that; everything else needs an admin key. A body
// that does not decode is let through, to be refused as BAD_REQUEST.
bool ReadOnlyControl(const std::string& body) {
  protocol::ControlRequest control;
  std::string error;
  if (!protocol::Decode(body, &control, &error)) return true;
  return control.op == "status" || control.op == "list";
}

void ConfigureRouterSocket(zmq::socket_t& socket, bool handover) {
  // Without ROUTER_MANDATORY a reply to a vanished peer is dropped silently;
  // with it we learn the peer is gone and can act on it.
  socket.set(zmq::sockopt::router_mandatory, 1);
  // A worker that reconnects under its old routing id takes over its slot.
  if (handover) socket.set(zmq::sockopt::router_handover, 1);
  socket.set(zmq::sockopt::sndhwm, kHighWaterMark);
  socket.set(zmq::sockopt::rcvhwm, kHighWaterMark);
  socket.set(zmq::sockopt::linger, 0);
}

}  // namespace

Router::Router(RouterOptions options)
    : options_(std::move(options)),
      frontend_(context_, zmq::socket_type::router),
      backend_(context_, zmq::socket_type::router) {
  ConfigureRouterSocket(frontend_, /*handover=*/false);
  frontend_.set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
  ConfigureRouterSocket(backend_, /*handover=*/true);
  if (!options_.curve_key.empty()) {
    // The ZAP handler first: a CURVE socket without one admits every key.
    zap_ = std::make_unique<ZapHandler>(
        context_, LoadAllowLists(options_.client_keys, options_.admin_keys, options_.worker_keys));
    const curve::KeyPair keys = curve::LoadKeyFile(options_.curve_key, /*need_secret=*/true);
    curve::MakeServer(frontend_, keys, kFrontendDomain);
    curve::MakeServer(backend_, keys, kBackendDomain);
    spdlog::info("CURVE on: router key {}", keys.public_key);
  }
  frontend_.bind(options_.frontend);
  backend_.bind(options_.backend);
  spdlog::info("router listening: clients on {}, workers on {}", options_.frontend,
               options_.backend);
}

Router::~Router() {
  // Tell workers we are going so they reconnect at once instead of waiting
  // for heartbeats to lapse.
  for (const auto& [id, w] : workers_.workers()) {
    protocol::SendRouted(backend_, id, Command::kDisconnect, 0, {});
  }
}

void Router::Run(const std::atomic<bool>& stop) {
  next_heartbeat_ = Clock::now() + options_.heartbeat_interval;
  startup_grace_end_ = Clock::now() + options_.heartbeat_interval * options_.liveness;
  bool in_grace = true;
  zmq::pollitem_t items[] = {
      {backend_.handle(), 0, ZMQ_POLLIN, 0},
      {frontend_.handle(), 0, ZMQ_POLLIN, 0},
  };
  // Short polls bound both shutdown latency and deadline precision.
  const auto tick = std::min<std::chrono::milliseconds>(options_.heartbeat_interval,
                                                        std::chrono::milliseconds(20));
  while (!stop.load()) {
    zmq::poll(items, 2, tick);
    // Workers first: their replies free credit for waiting clients.
    if (items[0].revents & ZMQ_POLLIN) HandleBackend();
    if (items[1].revents & ZMQ_POLLIN) HandleFrontend();
    const auto now = Clock::now();
    ExpireDeadlines(now);
    ExpireControls(now);
    PurgeSilentWorkers(now);
    if (in_grace && now >= startup_grace_end_) {
      in_grace = false;
      FailUnknownQueued(now);
    }
    if (now >= next_heartbeat_) {
      HeartbeatWorkers(now);
      next_heartbeat_ = now + options_.heartbeat_interval;
    }
  }
  spdlog::info("router stopping; {} requests in flight", pending_.size());
  for (auto it = pending_.begin(); it != pending_.end(); it = pending_.begin()) {
    Fail(it->first, ErrorCode::kUnavailable, "router is shutting down");
  }
}

void Router::HandleFrontend() {
  // Drain a bounded batch so the backend is never starved by a busy frontend.
  for (int i = 0; i < 256; ++i) {
    auto envelope = protocol::ReceiveRouted(frontend_);
    if (!envelope) return;
    if (!envelope->message) {
      spdlog::debug("malformed message from client: {}", envelope->error);
      SendError(envelope->peer, 0, ErrorCode::kBadRequest, envelope->error);
      continue;
    }
    const protocol::Message& message = *envelope->message;
    switch (message.command) {
      case Command::kRequest:
        HandleRequest(envelope->peer, message);
        break;
      case Command::kControl:
        if (zap_ && envelope->user_id != "admin" && !ReadOnlyControl(message.body)) {
          SendError(envelope->peer, message.request_id, ErrorCode::kUnauthorized,
                    "only an admin key may change the cluster (docs/security.md)");
          break;
        }
        HandleControl(envelope->peer, message);
        break;
      default:
        SendError(envelope->peer, message.request_id, ErrorCode::kBadRequest,
                  "clients may send REQUEST or CONTROL, not " +
                      std::string(protocol::CommandName(message.command)));
    }
  }
}

void Router::HandleRequest(const std::string& client, const protocol::Message& message) {
  ++requests_;
  protocol::EmbedRequest request;
  std::string error;
  if (!protocol::Decode(message.body, &request, &error)) {
    SendError(client, message.request_id, ErrorCode::kBadRequest, error);
    return;
  }
  if (request.model.empty()) {
    SendError(client, message.request_id, ErrorCode::kBadRequest, "model name is empty");
    return;
  }
  if (request.inputs.empty()) {
    SendError(client, message.request_id, ErrorCode::kBadRequest, "no inputs to embed");
    return;
  }
  if (request.inputs.size() > options_.max_texts_per_request) {
    SendError(client, message.request_id, ErrorCode::kBadRequest,
              "request has " + std::to_string(request.inputs.size()) + " texts; at most " +
                  std::to_string(options_.max_texts_per_request) + " per request");
    return;
  }
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    if (request.inputs[i].size() > options_.max_text_bytes) {
      SendError(client, message.request_id, ErrorCode::kBadRequest,
                "input " + std::to_string(i) + " has " + std::to_string(request.inputs[i].size()) +
                    " bytes; at most " + std::to_string(options_.max_text_bytes));
      return;
    }
  }
  std::size_t& in_flight = client_in_flight_[client];
  if (in_flight >= options_.max_in_flight_per_client) {
    SendError(client, message.request_id, ErrorCode::kOverloaded,
              "this client has " + std::to_string(in_flight) + " requests in flight; at most " +
                  std::to_string(options_.max_in_flight_per_client));
    return;
  }
  const auto now = Clock::now();
  if (!Known(request.model, request.version, now)) {
    SendError(client, message.request_id, ErrorCode::kUnknownModel,
              UnknownModelMessage(request.model, request.version));
    return;
  }
  const std::uint64_t id = next_id_++;
  ++in_flight;
  Pending& p = pending_[id];
  p.client = client;
  p.client_request_id = message.request_id;
  p.model = std::move(request.model);
  p.version = request.version;
  p.body = message.body;
  const auto timeout = request.timeout_ms > 0 ? std::chrono::milliseconds(request.timeout_ms)
                                              : options_.default_timeout;
  p.deadline = now + timeout;
  deadlines_.emplace(p.deadline, id);
  Dispatch(id);
}

bool Router::Known(const std::string& model, std::uint32_t version, Clock::time_point now) const {
  // A router that just started has not heard from its workers yet: let
  // requests wait for them to register rather than refusing every model.
  if (now < startup_grace_end_) return true;
  auto it = model_seen_.find({model, version});
  return it != model_seen_.end() && now - it->second <= options_.model_retention;
}

void Router::RememberModels(const WorkerState& worker, Clock::time_point now) {
  for (const auto& m : worker.models) {
    // A version still loading counts: requests for it wait for it.
    if (m.state != protocol::ModelState::kReady && m.state != protocol::ModelState::kLoading) {
      continue;
    }
    model_seen_[{m.name, m.version}] = now;
    model_seen_[{m.name, 0}] = now;
  }
}

Router::ModelQueue& Router::QueueFor(const std::string& model) {
  ModelQueue& q = queues_[model];
  if (!q.policy) q.policy = MakePolicy(options_.ForModel(model).policy);
  return q;
}

void Router::Dispatch(std::uint64_t id) {
  Pending& p = pending_.at(id);
  ModelQueue& queue = QueueFor(p.model);
  for (;;) {
    if (p.attempts >= options_.max_attempts) {
      Fail(id, ErrorCode::kUnavailable,
           "request failed on " + std::to_string(p.attempts) + " workers");
      return;
    }
    std::vector<WorkerState*> candidates;
    if (const auto version = workers_.Resolve(p.model, p.version)) {
      candidates = workers_.Candidates(p.model, *version);
    }
    std::erase_if(candidates, [](const WorkerState* w) { return !w->HasCredit(); });
    if (candidates.empty()) {
      // Every worker is busy (or none is up right now): wait in the model's
      // queue, bounded, until credit frees up or the deadline passes.
      const std::size_t limit = options_.ForModel(p.model).max_queue;
      if (queue.ids.size() >= limit) {
        std::erase_if(queue.ids, [this](std::uint64_t q) { return !pending_.contains(q); });
      }
      if (queue.ids.size() >= limit) {
        Fail(id, ErrorCode::kOverloaded,
             "queue for model '" + p.model + "' is full (" + std::to_string(limit) +
                 " requests waiting); retry later");
        return;
      }
      queue.ids.push_back(id);
      spdlog::debug("request {} for {} queued ({} waiting)", id, p.model, queue.ids.size());
      return;
    }
    const auto now = Clock::now();
    WorkerState* worker = queue.policy->Choose(p.model, candidates, now);
    ++p.attempts;
    if (protocol::SendRouted(backend_, worker->id, Command::kRequest, id, p.body)) {
      p.worker = worker->id;
      p.sent_at = now;
      worker->in_flight.insert(id);
      spdlog::debug("request {} for {} sent to '{}' ({} in flight there)", id, p.model, worker->id,
                    worker->in_flight.size());
      return;
    }
    // The worker vanished (or its queue is full): take it out and try another.
    DropWorker(worker->id, "unreachable");
  }
}

void Router::FailUnknownQueued(Clock::time_point now) {
  for (auto& [model, queue] : queues_) {
    for (std::uint64_t id : queue.ids) {
      auto it = pending_.find(id);
      if (it == pending_.end() || Known(model, it->second.version, now)) continue;
      Fail(id, ErrorCode::kUnknownModel, UnknownModelMessage(model, it->second.version));
    }
  }
}

void Router::DrainQueue(const std::string& model) {
  auto it = queues_.find(model);
  if (it == queues_.end()) return;
  std::deque<std::uint64_t>& ids = it->second.ids;
  while (!ids.empty()) {
    const std::uint64_t id = ids.front();
    ids.pop_front();
    if (!pending_.contains(id)) continue;  // answered (timed out) while queued
    Dispatch(id);
    // Dispatch put it back (at the end) if no worker had credit after all:
    // move it to the front again to keep FIFO order, and stop.
    if (!ids.empty() && ids.back() == id) {
      ids.pop_back();
      ids.push_front(id);
      return;
    }
  }
}

void Router::DrainQueues(std::vector<protocol::ModelInfo> models) {
  // By value: draining may drop the worker these came from.
  for (const auto& m : models) DrainQueue(m.name);
}

void Router::HandleControl(const std::string& client, const protocol::Message& message) {
  protocol::ControlRequest control;
  std::string error;
  if (!protocol::Decode(message.body, &control, &error)) {
    SendError(client, message.request_id, ErrorCode::kBadRequest, error);
    return;
  }
  if (control.op == "status" || control.op == "list") {
    // "list" is the same picture; emberctl shows it model by model.
    SendStatus(client, message.request_id);
  } else if (control.op == "load" || control.op == "unload") {
    StartControl(client, message.request_id, std::move(control));
  } else {
    SendError(client, message.request_id, ErrorCode::kBadRequest,
              "unknown control op '" + control.op + "' (status, list, load, unload)");
  }
}

void Router::StartControl(const std::string& client, std::uint64_t request_id,
                          protocol::ControlRequest control) {
  if (control.model.empty()) {
    SendError(client, request_id, ErrorCode::kBadRequest, control.op + " needs a model name");
    return;
  }
  std::set<std::string> targets;
  for (const auto& id : control.workers) {
    if (workers_.Find(id) == nullptr) {
      SendError(client, request_id, ErrorCode::kBadRequest, "no worker '" + id + "'");
      return;
    }
    targets.insert(id);
  }
  if (targets.empty()) {
    for (const auto& [id, w] : workers_.workers()) {
      // load: every worker (those without the model in their repository say
      // so and are left out of the reply); unload: those that have it.
      const bool has = std::ranges::any_of(w.models, [&](const protocol::ModelInfo& m) {
        return m.name == control.model && (control.version == 0 || m.version == control.version);
      });
      if (control.op == "load" || has) targets.insert(id);
    }
  }
  if (targets.empty()) {
    if (workers_.workers().empty()) {
      SendError(client, request_id, ErrorCode::kUnavailable, "no workers are connected");
    } else {
      SendError(client, request_id, ErrorCode::kUnknownModel,
                UnknownModelMessage(control.model, control.version));
    }
    return;
  }
  const std::uint64_t id = next_id_++;
  PendingControl& pending = controls_[id];
  pending.client = client;
  pending.client_request_id = request_id;
  pending.implicit_targets = control.workers.empty();
  pending.reply.op = control.op;
  pending.reply.model = control.model;
  const auto timeout = control.timeout_ms > 0 ? std::chrono::milliseconds(control.timeout_ms)
                                              : options_.control_timeout;
  pending.deadline = Clock::now() + timeout;
  // Workers get the op without a target list: it is about themselves.
  control.workers.clear();
  const std::string body = protocol::Encode(control);
  spdlog::info("{} {}:{} on {} worker(s)", control.op, control.model, control.version,
               targets.size());
  for (const auto& w : targets) {
    pending.waiting.insert(w);
    if (!protocol::SendRouted(backend_, w, Command::kControl, id, body)) {
      pending.waiting.erase(w);
      pending.reply.results.push_back(
          {.worker = w, .code = "UNAVAILABLE", .message = "worker unreachable"});
    }
  }
  if (pending.waiting.empty()) RecordControl(id, {});
}

void Router::RecordControl(std::uint64_t id, protocol::ControlResult result) {
  auto it = controls_.find(id);
  if (it == controls_.end()) return;
  PendingControl& c = it->second;
  if (!result.worker.empty()) {
    if (c.waiting.erase(result.worker) == 0) return;  // a late or duplicate answer
    spdlog::info("{} {} on '{}': {} {}", c.reply.op, c.reply.model, result.worker,
                 result.ok ? "ok" : result.code, result.message);
    c.reply.results.push_back(std::move(result));
  }
  if (!c.waiting.empty()) return;
  auto& results = c.reply.results;
  // Asked of every worker, "not in my repository" is no failure as long as
  // some worker did have the model.
  const auto not_here = [](const protocol::ControlResult& r) { return r.code == "UNKNOWN_MODEL"; };
  if (c.implicit_targets && c.reply.op == "load" && !std::ranges::all_of(results, not_here)) {
    std::erase_if(results, not_here);
  }
  protocol::SendRouted(frontend_, c.client, Command::kReply, c.client_request_id,
                       protocol::Encode(c.reply));
  controls_.erase(it);
}

void Router::ExpireControls(Clock::time_point now) {
  for (auto it = controls_.begin(); it != controls_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    PendingControl& c = it->second;
    for (const auto& w : c.waiting) {
      c.reply.results.push_back({.worker = w,
                                 .code = "TIMEOUT",
                                 .message = "no answer before the deadline; the worker may "
                                            "still finish (see the model list)"});
    }
    c.waiting.clear();
    const std::uint64_t id = it->first;
    ++it;
    RecordControl(id, {});
  }
}

void Router::SendStatus(const std::string& client, std::uint64_t request_id) {
  const auto now = Clock::now();
  protocol::StatusReply status;
  status.router_version = kRouterVersion;
  status.requests = requests_;
  for (const auto& [id, w] : workers_.workers()) {
    protocol::WorkerStatus ws;
    ws.id = id;
    ws.device = w.device;
    ws.models = w.models;
    ws.capacity = w.capacity;
    ws.in_flight = static_cast<std::uint32_t>(w.in_flight.size());
    ws.completed = w.completed;
    ws.failed = w.failed;
    ws.last_seen_ms = static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_seen).count());
    ws.weight = w.weight;
    ws.ewma_ms = w.latency.ewma_ms();
    ws.p50_ms = w.latency.PercentileMs(0.5);
    ws.p99_ms = w.latency.PercentileMs(0.99);
    ws.rss_bytes = w.rss_bytes;
    status.workers.push_back(std::move(ws));
  }
  std::map<std::string, protocol::ModelStatus> models;
  for (const auto& [id, w] : workers_.workers()) {
    for (const auto& m : w.models) {
      auto& ms = models[m.name];
      ms.name = m.name;
      ++ms.workers;
    }
  }
  for (const auto& [name, q] : queues_) {
    auto& ms = models[name];
    ms.name = name;
    ms.queued = static_cast<std::uint32_t>(std::count_if(
        q.ids.begin(), q.ids.end(), [this](std::uint64_t id) { return pending_.contains(id); }));
  }
  for (auto& [name, ms] : models) {
    ms.policy = PolicyKindName(options_.ForModel(name).policy);
    status.models.push_back(std::move(ms));
  }
  protocol::SendRouted(frontend_, client, Command::kReply, request_id, protocol::Encode(status));
}

void Router::HandleBackend() {
  for (int i = 0; i < 256; ++i) {
    auto envelope = protocol::ReceiveRouted(backend_);
    if (!envelope) return;
    if (!envelope->message) {
      spdlog::warn("malformed message from worker '{}': {}", envelope->peer, envelope->error);
      continue;
    }
    HandleWorkerMessage(envelope->peer, *envelope->message);
  }
}

void Router::HandleWorkerMessage(const std::string& id, const protocol::Message& message) {
  const auto now = Clock::now();
  if (message.command == Command::kReady) {
    HandleRegistration(id, message);
    return;
  }
  WorkerState* worker = workers_.Find(id);
  if (worker == nullptr) {
    // We do not know this worker (we restarted, or declared it dead): tell it
    // to register again. Its results, if any, belong to requests we already
    // answered or never had.
    if (message.command != Command::kDisconnect) {
      protocol::SendRouted(backend_, id, Command::kDisconnect, 0, {});
    }
    return;
  }
  worker->last_seen = now;
  switch (message.command) {
    case Command::kHeartbeat:
      break;
    case Command::kReply:
    case Command::kError:
      if (controls_.contains(message.request_id)) {
        protocol::ControlResult result;
        std::string error;
        if (message.command == Command::kReply) {
          if (!protocol::Decode(message.body, &result, &error)) {
            result = {.code = "INTERNAL", .message = "bad control reply: " + error};
          }
        } else {
          protocol::ErrorBody body;
          protocol::Decode(message.body, &body, &error);
          result = {.code = std::string(ErrorCodeName(body.code)), .message = body.message};
        }
        result.worker = id;
        RecordControl(message.request_id, std::move(result));
      } else {
        HandleResult(*worker, message);
      }
      break;
    case Command::kDisconnect:
      DropWorker(id, "disconnected");
      break;
    default:
      spdlog::warn("worker '{}' sent unexpected {}", id, protocol::CommandName(message.command));
  }
}

void Router::HandleRegistration(const std::string& id, const protocol::Message& message) {
  const auto now = Clock::now();
  protocol::ReadyBody ready;
  std::string error;
  if (!protocol::Decode(message.body, &ready, &error)) {
    spdlog::warn("bad READY from worker '{}': {}", id, error);
    protocol::SendRouted(backend_, id, Command::kDisconnect, 0, {});
    return;
  }
  if (auto it = options_.worker_weights.find(id); it != options_.worker_weights.end()) {
    ready.weight = it->second;
  }
  std::vector<protocol::ModelInfo> before;
  if (const WorkerState* known = workers_.Find(id);
      known != nullptr && ready.session != 0 && known->session == ready.session) {
    before = known->models;
    spdlog::info("worker '{}' models now: {}", id, [&] {
      std::string list;
      for (const auto& m : ready.models) {
        list += (list.empty() ? "" : ", ") + m.name + ":" + std::to_string(m.version) + " " +
                std::string(protocol::ModelStateName(m.state));
      }
      return list;
    }());
  } else {
    spdlog::info("worker '{}' ready on {} with {} model(s), capacity {}, weight {}", id,
                 ready.device, ready.models.size(), ready.capacity, ready.weight);
  }
  const std::vector<std::uint64_t> orphans = workers_.Register(id, std::move(ready), now);
  // The acknowledgement: requests we sent this worker before now are ahead
  // of it on the wire, so once it arrives nothing more comes for versions
  // this READY took out of service (the worker may then free them).
  protocol::SendRouted(backend_, id, Command::kReady, message.request_id, {});
  const WorkerState& worker = *workers_.Find(id);
  RememberModels(worker, now);
  std::vector<protocol::ModelInfo> models = worker.models;
  ForgetRemoved(before, now);
  Redispatch(orphans);
  DrainQueues(std::move(models));
}

void Router::ForgetRemoved(const std::vector<protocol::ModelInfo>& before, Clock::time_point now) {
  auto live = [](const protocol::ModelInfo& m) {
    return m.state == protocol::ModelState::kReady || m.state == protocol::ModelState::kLoading;
  };
  bool forgot = false;
  for (const auto& gone : before) {
    bool version_left = false, model_left = false;
    for (const auto& [wid, w] : workers_.workers()) {
      for (const auto& m : w.models) {
        if (m.name != gone.name || !live(m)) continue;
        model_left = true;
        version_left |= m.version == gone.version;
      }
    }
    if (!version_left) forgot |= model_seen_.erase({gone.name, gone.version}) > 0;
    if (!model_left) forgot |= model_seen_.erase({gone.name, 0}) > 0;
  }
  if (forgot) FailUnknownQueued(now);
}

void Router::HandleResult(WorkerState& worker, const protocol::Message& message) {
  worker.in_flight.erase(message.request_id);
  auto it = pending_.find(message.request_id);
  // A late result for a request that timed out or was re-dispatched elsewhere
  // is dropped: the client already has (or will get) its one reply.
  if (it != pending_.end() && it->second.worker == worker.id) {
    if (message.command == Command::kReply) {
      ++worker.completed;
      const auto now = Clock::now();
      worker.latency.Record(
          std::chrono::duration_cast<std::chrono::microseconds>(now - it->second.sent_at), now);
    } else {
      ++worker.failed;
    }
    protocol::SendRouted(frontend_, it->second.client, message.command,
                         it->second.client_request_id, message.body);
    Forget(it);
  }
  // The worker has a free credit now: give it to whoever waits longest.
  DrainQueues(worker.models);
}

void Router::Fail(std::uint64_t id, ErrorCode code, const std::string& message) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  SendError(it->second.client, it->second.client_request_id, code, message);
  if (WorkerState* w = workers_.Find(it->second.worker)) w->in_flight.erase(id);
  Forget(it);
}

void Router::Forget(std::unordered_map<std::uint64_t, Pending>::iterator it) {
  auto c = client_in_flight_.find(it->second.client);
  if (c != client_in_flight_.end() && --c->second == 0) client_in_flight_.erase(c);
  pending_.erase(it);
}

void Router::DropWorker(const std::string& id, const char* why) {
  spdlog::warn("worker '{}' removed: {}", id, why);
  Redispatch(workers_.Remove(id));
  std::vector<std::uint64_t> waiting;
  for (const auto& [cid, c] : controls_) {
    if (c.waiting.contains(id)) waiting.push_back(cid);
  }
  for (std::uint64_t cid : waiting) {
    RecordControl(cid, {.worker = id,
                        .code = "UNAVAILABLE",
                        .message = std::string("worker went away (") + why + ")"});
  }
}

void Router::Redispatch(const std::vector<std::uint64_t>& ids) {
  for (std::uint64_t id : ids) {
    if (!pending_.contains(id)) continue;
    // Embedding is idempotent, so resending to another worker is safe.
    pending_.at(id).worker.clear();
    Dispatch(id);
  }
}

void Router::SendError(const std::string& client, std::uint64_t request_id, ErrorCode code,
                       const std::string& message) {
  protocol::SendRouted(frontend_, client, Command::kError, request_id,
                       protocol::Encode(protocol::ErrorBody{code, message}));
}

void Router::PurgeSilentWorkers(Clock::time_point now) {
  // Checked every loop, not every heartbeat, so a dead worker is out of
  // dispatch liveness x interval after its last message, not a beat later.
  const auto silence = options_.heartbeat_interval * options_.liveness;
  for (const std::string& id : workers_.SilentSince(now - silence)) {
    DropWorker(id, "missed heartbeats");
  }
}

void Router::HeartbeatWorkers(Clock::time_point now) {
  std::vector<std::string> unreachable;
  for (const auto& [id, w] : workers_.workers()) {
    RememberModels(w, now);
    if (!protocol::SendRouted(backend_, id, Command::kHeartbeat, 0, {})) {
      unreachable.push_back(id);
    }
  }
  for (const auto& id : unreachable) DropWorker(id, "unreachable");
}

void Router::ExpireDeadlines(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    const std::uint64_t id = deadlines_.top().second;
    deadlines_.pop();
    if (pending_.contains(id)) Fail(id, ErrorCode::kTimeout, "request deadline passed");
  }
}

}  // namespace ember::router
