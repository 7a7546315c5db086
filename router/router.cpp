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
// How often health is reclassified and the metrics text re-rendered: often
// enough for a scrape to be fresh, rare enough to cost the router nothing.
constexpr auto kMetricsInterval = std::chrono::milliseconds(250);

// Worker errors that say something about the worker, not the request.
bool WorkerFault(ErrorCode code) {
  return code == ErrorCode::kInternal || code == ErrorCode::kUnavailable;
}

// Whether a worker's model version makes requests for it worth keeping:
// READY serves them, LOADING will (requests wait for it).
bool CountsAsKnown(const protocol::ModelInfo& m) {
  return m.state == protocol::ModelState::kReady || m.state == protocol::ModelState::kLoading;
}

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
      backend_(context_, zmq::socket_type::router),
      health_(HealthOptions{.slow_factor = options_.slow_factor}) {
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
  if (options_.cache_bytes > 0) {
    cache_ = std::make_unique<EmbeddingCache>(options_.cache_bytes);
    spdlog::info("event=cache_on budget_bytes={}", options_.cache_bytes);
  }
  if (!options_.cache_redis.empty()) {
    if (!cache_) throw std::invalid_argument("cache-redis needs the in-memory cache (cache-bytes)");
    redis_ =
        std::make_unique<RedisTier>(context_, RedisTierOptions{.address = options_.cache_redis,
                                                               .ttl = options_.cache_redis_ttl,
                                                               .wait = options_.cache_redis_wait});
    metrics_.cache_redis_on = true;
    spdlog::info("event=cache_redis_on address={} ttl_s={} wait_ms={}", options_.cache_redis,
                 options_.cache_redis_ttl.count(), options_.cache_redis_wait.count());
  }
  if (!options_.metrics_listen.empty()) {
    metrics_server_ = std::make_unique<MetricsServer>(options_.metrics_listen);
  }
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
      {redis_ ? redis_->wake_socket().handle() : nullptr, 0, ZMQ_POLLIN, 0},
  };
  const std::size_t polled = redis_ ? 3 : 2;
  // Short polls bound both shutdown latency and deadline precision.
  const auto tick = std::min<std::chrono::milliseconds>(options_.heartbeat_interval,
                                                        std::chrono::milliseconds(20));
  while (!stop.load()) {
    auto wait = tick;
    if (!redis_waits_.empty()) {
      // Wake up when the oldest Redis lookup's wait runs out.
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(redis_waits_.front().first - Clock::now());
      wait = std::clamp(left, std::chrono::milliseconds(0), tick);
    }
    zmq::poll(items, polled, wait);
    // Workers first: their replies free credit for waiting clients.
    if (items[0].revents & ZMQ_POLLIN) HandleBackend();
    if (items[1].revents & ZMQ_POLLIN) HandleFrontend();
    if (polled > 2 && (items[2].revents & ZMQ_POLLIN)) HandleRedisResults();
    const auto now = Clock::now();
    ExpireRedisWaits(now);
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
    if (now >= next_metrics_) {
      PublishMetrics(now);
      next_metrics_ = now + kMetricsInterval;
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
  const auto accepted_at = Clock::now();
  protocol::EmbedRequest request;
  std::string error;
  // Refusals are answered at once and counted under the model asked for.
  const auto reject = [&](ErrorCode code, const std::string& why) {
    CountOutcome(request.model, ErrorCodeName(code), accepted_at);
    SendError(client, message.request_id, code, why);
  };
  if (!protocol::Decode(message.body, &request, &error)) {
    reject(ErrorCode::kBadRequest, error);
    return;
  }
  if (request.model.empty()) {
    reject(ErrorCode::kBadRequest, "model name is empty");
    return;
  }
  if (request.inputs.empty()) {
    reject(ErrorCode::kBadRequest, "no inputs to embed");
    return;
  }
  if (request.inputs.size() > options_.max_texts_per_request) {
    reject(ErrorCode::kBadRequest,
           "request has " + std::to_string(request.inputs.size()) + " texts; at most " +
               std::to_string(options_.max_texts_per_request) + " per request");
    return;
  }
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    if (request.inputs[i].size() > options_.max_text_bytes) {
      reject(ErrorCode::kBadRequest,
             "input " + std::to_string(i) + " has " + std::to_string(request.inputs[i].size()) +
                 " bytes; at most " + std::to_string(options_.max_text_bytes));
      return;
    }
  }
  std::size_t& in_flight = client_in_flight_[client];
  if (in_flight >= options_.max_in_flight_per_client) {
    reject(ErrorCode::kOverloaded, "this client has " + std::to_string(in_flight) +
                                       " requests in flight; at most " +
                                       std::to_string(options_.max_in_flight_per_client));
    return;
  }
  const auto now = accepted_at;
  if (!Known(request.model, request.version, now)) {
    reject(ErrorCode::kUnknownModel, UnknownModelMessage(request.model, request.version));
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
  p.accepted_at = accepted_at;
  if (cache_ && ServeFromCache(id, p, request)) {
    Forget(pending_.find(id));
    return;
  }
  const auto timeout = request.timeout_ms > 0 ? std::chrono::milliseconds(request.timeout_ms)
                                              : options_.default_timeout;
  p.deadline = now + timeout;
  deadlines_.emplace(p.deadline, id);
  if (!p.awaiting_redis) Dispatch(id);
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
    if (!CountsAsKnown(m)) continue;
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
  spdlog::info("event=control op={} model={} version={} workers={}", control.op, control.model,
               control.version, targets.size());
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
    spdlog::info(
        "event=control_result op={} model={} worker={} version={} result={} millis={} "
        "message=\"{}\"",
        c.reply.op, c.reply.model, result.worker, result.version, result.ok ? "ok" : result.code,
        result.millis, result.message);
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
  health_.Update(workers_, now);
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
    ws.health = std::string(HealthName(health_.Of(id)));
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
    spdlog::info("event=worker_models worker={} models=\"{}\"", id, [&] {
      std::string list;
      for (const auto& m : ready.models) {
        list += (list.empty() ? "" : ", ") + m.name + ":" + std::to_string(m.version) + " " +
                std::string(protocol::ModelStateName(m.state));
      }
      return list;
    }());
  } else {
    spdlog::info("event=worker_register worker={} device={} models={} capacity={} weight={}", id,
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
  bool forgot = false;
  for (const auto& gone : before) {
    bool version_left = false, model_left = false;
    for (const auto& [wid, w] : workers_.workers()) {
      for (const auto& m : w.models) {
        if (m.name != gone.name || !CountsAsKnown(m)) continue;
        model_left = true;
        version_left |= m.version == gone.version;
      }
    }
    if (!version_left) {
      forgot |= model_seen_.erase({gone.name, gone.version}) > 0;
      // Its vectors can never be served again (the key holds the version).
      if (cache_) cache_->EraseVersion(gone.name, gone.version);
    }
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
    Pending& p = it->second;
    if (message.command == Command::kReply) {
      ++worker.completed;
      const auto now = Clock::now();
      worker.latency.Record(std::chrono::duration_cast<std::chrono::microseconds>(now - p.sent_at),
                            now);
      health_.RecordAnswer(worker.id, /*error=*/false);
      const double seconds = std::chrono::duration<double>(now - p.sent_at).count();
      RouterMetrics::Observe(metrics_.dispatch, p.model, seconds);
      RouterMetrics::Observe(metrics_.worker_dispatch, worker.id, seconds);
      const std::string body = CompleteReply(p, message.body);
      if (body.empty()) {
        Fail(it->first, ErrorCode::kInternal, "worker '" + worker.id + "' sent a bad reply");
      } else {
        protocol::SendRouted(frontend_, p.client, Command::kReply, p.client_request_id, body);
        CountOutcome(p.model, "ok", p.accepted_at);
        Forget(it);
      }
    } else {
      ++worker.failed;
      protocol::ErrorBody error;
      std::string why;
      if (!protocol::Decode(message.body, &error, &why)) error.code = ErrorCode::kInternal;
      health_.RecordAnswer(worker.id, WorkerFault(error.code));
      metrics_.CountError(ErrorCodeName(error.code));
      CountOutcome(p.model, ErrorCodeName(error.code), p.accepted_at);
      protocol::SendRouted(frontend_, p.client, Command::kError, p.client_request_id, message.body);
      Forget(it);
    }
  }
  // The worker has a free credit now: give it to whoever waits longest.
  DrainQueues(worker.models);
}

std::string Router::CompleteReply(const Pending& p, const std::string& body) {
  // Without a cache or a metrics endpoint nobody needs what is inside: the
  // body goes to the client untouched.
  if (!cache_ && !metrics_server_) return body;
  protocol::EmbedReply reply;
  std::string error;
  if (!protocol::Decode(body, &reply, &error)) {
    spdlog::warn("event=bad_reply model={} error=\"{}\"", p.model, error);
    return p.hits.empty() ? body : std::string();
  }
  RouterMetrics::Observe(metrics_.batch_size, p.model, reply.batch_size, /*batch=*/true);
  if (!cache_) return body;
  const std::size_t dim = reply.dim;
  if (reply.count != p.texts.size() || dim == 0) {
    return p.hits.empty() ? body : std::string();
  }
  for (std::size_t i = 0; i < p.texts.size(); ++i) {
    const std::string key = EmbeddingCache::Key(p.model, reply.version, p.truncate, p.texts[i]);
    const auto vector = std::span(reply.data).subspan(i * dim, dim);
    cache_->Put(key, vector);
    if (redis_) redis_->Store(key, vector);
  }
  if (p.hits.empty()) return body;
  // A partial hit (or repeated texts): put every vector in its place.
  std::vector<float> merged;
  merged.reserve(p.hits.size() * dim);
  for (std::size_t i = 0; i < p.hits.size(); ++i) {
    const auto& hit = p.hits[i];
    if (hit.empty()) {
      const auto from = reply.data.begin() + static_cast<std::ptrdiff_t>(p.miss_of[i] * dim);
      merged.insert(merged.end(), from, from + static_cast<std::ptrdiff_t>(dim));
    } else if (hit.size() == dim) {
      merged.insert(merged.end(), hit.begin(), hit.end());
    } else {
      return {};  // cannot happen: the body pinned the version the hits are of
    }
  }
  reply.count = static_cast<std::uint32_t>(p.hits.size());
  reply.data = std::move(merged);
  return protocol::Encode(reply);
}

bool Router::ServeFromCache(std::uint64_t id, Pending& p, protocol::EmbedRequest& request) {
  // The version the request resolves to now; none READY: it waits for a
  // worker the ordinary way, and the reply fills the cache.
  const auto version = workers_.Resolve(p.model, p.version);
  p.truncate = request.truncate;
  if (!version) {
    p.texts = std::move(request.inputs);
    return false;
  }
  // Misses go to the worker once per distinct text: repeated texts get the very same vector.
  std::vector<std::vector<float>> hits(request.inputs.size());
  std::vector<std::string> misses;
  std::vector<std::uint32_t> miss_of(request.inputs.size(), 0);
  std::unordered_map<std::string_view, std::uint32_t> distinct;
  std::size_t missed = 0;
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    const std::string& text = request.inputs[i];
    if (const auto* vector =
            cache_->Get(EmbeddingCache::Key(p.model, *version, p.truncate, text))) {
      hits[i] = *vector;
      continue;
    }
    ++missed;
    const auto [it, fresh] = distinct.try_emplace(text, static_cast<std::uint32_t>(misses.size()));
    if (fresh) misses.push_back(text);
    miss_of[i] = it->second;
  }
  metrics_.cache_hits += hits.size() - missed;
  metrics_.cache_misses += missed;
  if (redis_ && !misses.empty()) {
    std::vector<std::string> keys;
    keys.reserve(misses.size());
    for (const auto& text : misses) {
      keys.push_back(EmbeddingCache::Key(p.model, *version, p.truncate, text));
    }
    if (redis_->Lookup(id, std::move(keys))) {
      p.awaiting_redis = true;
      p.cache_version = *version;
      p.hits = std::move(hits);
      p.texts = std::move(misses);
      p.miss_of = std::move(miss_of);
      redis_waits_.emplace_back(Clock::now() + options_.cache_redis_wait, id);
      return false;
    }
    metrics_.cache_redis_misses += missed;  // the tier is down or busy
  }
  return SettleCacheLookup(p, request, *version, std::move(hits), std::move(misses),
                           std::move(miss_of));
}

bool Router::SettleCacheLookup(Pending& p, protocol::EmbedRequest& request, std::uint32_t version,
                               std::vector<std::vector<float>> hits,
                               std::vector<std::string> misses,
                               std::vector<std::uint32_t> miss_of) {
  if (misses.empty()) {
    const auto dim = static_cast<std::uint32_t>(hits.empty() ? 0 : hits.front().size());
    protocol::EmbedReply reply{.model = p.model,
                               .version = version,
                               .worker = "cache",
                               .dim = dim,
                               .count = static_cast<std::uint32_t>(hits.size()),
                               .batch_size = 0,
                               .data = {}};
    reply.data.reserve(hits.size() * dim);
    for (const auto& hit : hits) reply.data.insert(reply.data.end(), hit.begin(), hit.end());
    protocol::SendRouted(frontend_, p.client, Command::kReply, p.client_request_id,
                         protocol::Encode(reply));
    CountOutcome(p.model, "ok", p.accepted_at);
    return true;
  }
  if (misses.size() < hits.size()) {
    // Ask the worker for the distinct misses only, of the version the hits are of.
    p.hits = std::move(hits);
    p.miss_of = std::move(miss_of);
    p.version = version;
    request.version = version;
    request.inputs = misses;
    request.model = p.model;
    p.body = protocol::Encode(request);
  } else {
    p.hits.clear();  // every text is a distinct miss: the client's body as it is
  }
  p.texts = std::move(misses);
  return false;
}

void Router::HandleRedisResults() {
  for (auto& result : redis_->TakeResults()) {
    auto it = pending_.find(result.id);
    // Answered meanwhile (deadline), or the wait ran out and it went on.
    if (it == pending_.end() || !it->second.awaiting_redis) continue;
    ResumeAfterRedis(result.id, &result.values);
  }
}

void Router::ExpireRedisWaits(Clock::time_point now) {
  while (!redis_waits_.empty() && redis_waits_.front().first <= now) {
    const std::uint64_t id = redis_waits_.front().second;
    redis_waits_.pop_front();
    auto it = pending_.find(id);
    if (it != pending_.end() && it->second.awaiting_redis) ResumeAfterRedis(id, nullptr);
  }
}

void Router::ResumeAfterRedis(std::uint64_t id, std::vector<std::vector<float>>* values) {
  Pending& p = pending_.at(id);
  p.awaiting_redis = false;
  std::vector<std::vector<float>> hits = std::exchange(p.hits, {});
  std::vector<std::string> texts = std::exchange(p.texts, {});
  std::vector<std::uint32_t> miss_of = std::exchange(p.miss_of, {});
  // Every vector of one reply has one dim: a Redis value of another size is
  // not trusted (corrupt, or written by something else).
  std::size_t dim = 0;
  for (const auto& hit : hits) {
    if (!hit.empty()) dim = hit.size();
  }
  // Per distinct text: its vector from Redis, or its index among the texts still missing.
  std::vector<std::vector<float>> found(texts.size());
  std::vector<std::uint32_t> still(texts.size(), 0);
  std::vector<std::string> misses;
  for (std::size_t j = 0; j < texts.size(); ++j) {
    std::vector<float>* value = values != nullptr && j < values->size() ? &(*values)[j] : nullptr;
    if (value != nullptr && !value->empty() && (dim == 0 || value->size() == dim)) {
      dim = value->size();
      cache_->Put(EmbeddingCache::Key(p.model, p.cache_version, p.truncate, texts[j]), *value);
      found[j] = std::move(*value);
    } else {
      still[j] = static_cast<std::uint32_t>(misses.size());
      misses.push_back(std::move(texts[j]));
    }
  }
  for (std::size_t i = 0; i < hits.size(); ++i) {
    if (!hits[i].empty()) continue;
    const std::uint32_t j = miss_of[i];
    if (!found[j].empty()) {
      hits[i] = found[j];
      ++metrics_.cache_redis_hits;
    } else {
      miss_of[i] = still[j];
      ++metrics_.cache_redis_misses;
    }
  }
  // p.body is still the client's: it decoded when the request came in.
  protocol::EmbedRequest request;
  std::string error;
  if (!protocol::Decode(p.body, &request, &error)) {
    Fail(id, ErrorCode::kInternal, "request body no longer decodes: " + error);
    return;
  }
  if (SettleCacheLookup(p, request, p.cache_version, std::move(hits), std::move(misses),
                        std::move(miss_of))) {
    Forget(pending_.find(id));
    return;
  }
  Dispatch(id);
}

void Router::CountOutcome(const std::string& model, std::string_view outcome,
                          Clock::time_point accepted_at) {
  metrics_.CountRequest(model, outcome);
  if (outcome == "ok") {
    RouterMetrics::Observe(metrics_.end_to_end, model,
                           std::chrono::duration<double>(Clock::now() - accepted_at).count());
  }
}

void Router::PublishMetrics(Clock::time_point now) {
  health_.Update(workers_, now);
  if (!metrics_server_) return;
  if (zap_) {
    metrics_.auth_refused["frontend"] = zap_->refused(kFrontendDomain);
    metrics_.auth_refused["backend"] = zap_->refused(kBackendDomain);
  }
  if (redis_) {
    metrics_.cache_redis_errors = redis_->errors();
    metrics_.cache_redis_up = redis_->connected();
  }
  std::map<std::string, std::size_t> queued;
  for (const auto& [name, q] : queues_) {
    queued[name] = static_cast<std::size_t>(std::count_if(
        q.ids.begin(), q.ids.end(), [this](std::uint64_t id) { return pending_.contains(id); }));
  }
  metrics_server_->Publish(RenderMetrics(metrics_, {.workers = workers_,
                                                    .health = health_,
                                                    .cache = cache_.get(),
                                                    .queued = queued,
                                                    .pending = pending_.size(),
                                                    .now = now}));
}

void Router::Fail(std::uint64_t id, ErrorCode code, const std::string& message) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  CountOutcome(it->second.model, ErrorCodeName(code), it->second.accepted_at);
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
  if (const WorkerState* w = workers_.Find(id)) {
    spdlog::warn("event=worker_drop worker={} reason=\"{}\" in_flight={}", id, why,
                 w->in_flight.size());
    health_.RecordDead(id, why, Clock::now());
  }
  metrics_.worker_dispatch.erase(id);
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
  metrics_.CountError(ErrorCodeName(code));
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
