#include "router/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "common/curve.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "common/reply_stats.h"
#include "common/request_header.h"
#include "router/router_state.h"
#include "router/status_report.h"

namespace ember::router {
namespace {

using protocol::Command;

constexpr int kHighWaterMark = 100'000;
// How often health is reclassified and the metrics text re-rendered: often enough for a
// scrape to be fresh, rare enough to cost the router nothing.
constexpr auto kMetricsInterval = std::chrono::milliseconds(250);

// Worker errors that say something about the worker, not the request.
bool WorkerFault(ErrorCode code) {
  return code == ErrorCode::kInternal || code == ErrorCode::kUnavailable;
}

void ConfigureRouterSocket(zmq::socket_t& socket, bool handover) {
  // Without ROUTER_MANDATORY a reply to a vanished peer is dropped silently; with it we learn
  // the peer is gone and can act on it.
  socket.set(zmq::sockopt::router_mandatory, 1);
  // A worker that reconnects under its old routing id takes over its slot.
  if (handover) socket.set(zmq::sockopt::router_handover, 1);
  socket.set(zmq::sockopt::sndhwm, kHighWaterMark);
  socket.set(zmq::sockopt::rcvhwm, kHighWaterMark);
  socket.set(zmq::sockopt::linger, 0);
}

}  // namespace

Router::State::State(RouterOptions o)
    : options(std::move(o)),
      context(options.io_threads),
      frontend(context, zmq::socket_type::router),
      backend(context, zmq::socket_type::router),
      transport(frontend, backend),
      health(HealthOptions{.slow_factor = options.slow_factor}),
      requests(transport, metrics),
      dispatcher(options, workers, requests, transport,
                 [this](const std::string& worker) { DropWorker(worker, "unreachable"); }),
      controls(transport, workers, requests, options.control_timeout),
      // Workers find a restarted router within their liveness (their link falls silent) and
      // a reconnect backoff of up to two heartbeats (worker/router_link.h): until then every
      // model counts as known, and requests wait for them.
      catalog(options.model_retention,
              Clock::now() + options.heartbeat_interval * (options.liveness + 2)) {
  ConfigureRouterSocket(frontend, /*handover=*/false);
  frontend.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
  ConfigureRouterSocket(backend, /*handover=*/true);
  if (!options.curve_key.empty()) {
    // The ZAP handler first: a CURVE socket without one admits every key.
    zap = std::make_unique<ZapHandler>(
        context, LoadAllowLists(options.client_keys, options.admin_keys, options.worker_keys));
    const curve::KeyPair keys = curve::LoadKeyFile(options.curve_key, /*need_secret=*/true);
    curve::MakeServer(frontend, keys, kFrontendDomain);
    curve::MakeServer(backend, keys, kBackendDomain);
    spdlog::info("CURVE on: router key {}", keys.public_key);
  }
  frontend.bind(options.frontend);
  backend.bind(options.backend);
  spdlog::info("router listening: clients on {}, workers on {}", options.frontend, options.backend);
  if (options.cache_bytes > 0) {
    cache = std::make_unique<EmbeddingCache>(options.cache_bytes);
    spdlog::info("event=cache_on budget_bytes={}", options.cache_bytes);
  }
  if (!options.cache_redis.empty()) {
    if (!cache) throw std::invalid_argument("cache-redis needs the in-memory cache (cache-bytes)");
    redis =
        std::make_unique<RedisTier>(context, RedisTierOptions{.address = options.cache_redis,
                                                              .ttl = options.cache_redis_ttl,
                                                              .wait = options.cache_redis_wait});
    metrics.cache_redis_on = true;
    spdlog::info("event=cache_redis_on address={} ttl_s={} wait_ms={}", options.cache_redis,
                 options.cache_redis_ttl.count(), options.cache_redis_wait.count());
  }
  if (cache) {
    cache_front =
        std::make_unique<CacheFront>(*cache, redis.get(), metrics, options.cache_redis_wait);
  }
  if (!options.metrics_listen.empty()) {
    metrics_server = std::make_unique<MetricsServer>(options.metrics_listen);
  }
}

Router::State::~State() {
  // Tell workers we are going so they reconnect at once instead of waiting for heartbeats to
  // lapse.
  for (const auto& [id, w] : workers.workers()) {
    transport.ToWorker(id, Command::kDisconnect, 0, {});
  }
}

Router::Router(RouterOptions options) : state_(std::make_unique<State>(std::move(options))) {}
Router::~Router() = default;
void Router::Run(const std::atomic<bool>& stop) { state_->Run(stop); }

void Router::State::Run(const std::atomic<bool>& stop) {
  next_heartbeat = Clock::now() + options.heartbeat_interval;
  bool in_grace = true;
  zmq::pollitem_t items[] = {
      {backend.handle(), 0, ZMQ_POLLIN, 0},
      {frontend.handle(), 0, ZMQ_POLLIN, 0},
      {redis ? redis->wake_socket().handle() : nullptr, 0, ZMQ_POLLIN, 0},
  };
  const std::size_t polled = redis ? 3 : 2;
  // Short polls bound both shutdown latency and deadline precision.
  const auto tick = std::min<std::chrono::milliseconds>(options.heartbeat_interval,
                                                        std::chrono::milliseconds(20));
  while (!stop.load()) {
    auto wait = tick;
    if (const auto end = cache_front ? cache_front->NextWaitEnd() : std::nullopt) {
      // Wake up when the oldest Redis lookup's wait runs out.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*end - Clock::now());
      wait = std::clamp(left, std::chrono::milliseconds(0), tick);
    }
    zmq::poll(items, polled, wait);
    // Workers first: their replies free credit for waiting clients.
    if (items[0].revents & ZMQ_POLLIN) HandleBackend();
    if (items[1].revents & ZMQ_POLLIN) HandleFrontend();
    const auto now = Clock::now();
    if (cache_front) HandleRedis(now);
    requests.ExpireDeadlines(now);
    controls.Expire(now);
    PurgeSilentWorkers(now);
    dispatcher.Hedge(now);
    if (in_grace && !catalog.InGrace(now)) {
      in_grace = false;
      dispatcher.FailQueued([&](const std::string& m, std::uint32_t v) { return Known(m, v, now); },
                            now);
    }
    if (now >= next_heartbeat) {
      HeartbeatWorkers(now);
      next_heartbeat = now + options.heartbeat_interval;
    }
    if (now >= next_metrics) {
      PublishMetrics(now);
      next_metrics = now + kMetricsInterval;
    }
  }
  spdlog::info("router stopping; {} requests in flight", requests.size());
  for (std::uint64_t id : requests.Ids()) {
    requests.Fail(id, ErrorCode::kUnavailable, "router is shutting down", Clock::now());
  }
}

void Router::State::HandleFrontend() {
  // Drain a bounded batch so the backend is never starved by a busy frontend.
  for (int i = 0; i < 256; ++i) {
    auto envelope = protocol::ReceiveRouted(frontend);
    if (!envelope) return;
    if (!envelope->message) {
      spdlog::debug("malformed message from client: {}", envelope->error);
      requests.SendError(envelope->peer, 0, ErrorCode::kBadRequest, envelope->error);
      continue;
    }
    protocol::Message& message = *envelope->message;
    switch (message.command) {
      case Command::kRequest:
        HandleRequest(envelope->peer, message);
        break;
      case Command::kControl:
        HandleControl(envelope->peer, message, !zap || envelope->user_id == "admin");
        break;
      default:
        requests.SendError(envelope->peer, message.request_id, ErrorCode::kBadRequest,
                           "clients may send REQUEST or CONTROL, not " +
                               std::string(protocol::CommandName(message.command)));
    }
  }
}

void Router::State::HandleRequest(const std::string& client, protocol::Message& message) {
  ++accepted;
  const auto now = Clock::now();
  // The header is all routing needs: the texts stay in the client's frame, uncopied. One
  // header for every request keeps the model name's buffer.
  protocol::EmbedRequestHeader& request = header;
  std::string error;
  // Refusals are answered at once and counted under the model asked for.
  const auto refuse = [&](ErrorCode code, const std::string& why) {
    requests.Refuse(client, message.request_id, request.model, code, why, now);
  };
  if (!protocol::Decode(message.body(), &request, &error))
    return refuse(ErrorCode::kBadRequest, error);
  if (request.model.empty()) return refuse(ErrorCode::kBadRequest, "model name is empty");
  if (request.count == 0) return refuse(ErrorCode::kBadRequest, "no inputs to embed");
  if (request.count > options.max_texts_per_request) {
    return refuse(ErrorCode::kBadRequest,
                  "request has " + std::to_string(request.count) + " texts; at most " +
                      std::to_string(options.max_texts_per_request) + " per request");
  }
  if (request.longest_bytes > options.max_text_bytes) {
    return refuse(ErrorCode::kBadRequest, "input " + std::to_string(request.longest_index) +
                                              " has " + std::to_string(request.longest_bytes) +
                                              " bytes; at most " +
                                              std::to_string(options.max_text_bytes));
  }
  if (const std::size_t in_flight = requests.InFlight(client);
      in_flight >= options.max_in_flight_per_client) {
    return refuse(ErrorCode::kOverloaded, "this client has " + std::to_string(in_flight) +
                                              " requests in flight; at most " +
                                              std::to_string(options.max_in_flight_per_client));
  }
  if (!Known(request.model, request.version, now)) {
    return refuse(ErrorCode::kUnknownModel, UnknownModelMessage(request.model, request.version));
  }
  const std::uint64_t id = requests.NewId();
  PendingRequest& p = requests.Add(id, {.client = client,
                                        .client_request_id = message.request_id,
                                        .model = request.model,
                                        .version = request.version,
                                        .text_count = static_cast<std::uint32_t>(request.count),
                                        .body = std::move(message.frame),
                                        .accepted_at = now});
  const auto timeout = request.timeout_ms > 0 ? std::chrono::milliseconds(request.timeout_ms)
                                              : options.default_timeout;
  requests.ArmDeadline(id, now + timeout);
  // The cache holds embeddings: a score (a cross-encoder's, of pairs) always goes to a worker.
  if (!cache_front || request.task != protocol::Task::kEmbed) {
    dispatcher.Dispatch(id, now);
    return;
  }
  // The cache keys on the texts: only it needs them decoded (the header read accepted the
  // body, so this decode cannot fail).
  protocol::EmbedRequest full;
  protocol::Decode(p.body.to_string_view(), &full, &error);
  std::string reply;
  const auto lookup =
      cache_front->Look(id, p, full, workers.Resolve(p.model, p.version), now, &reply);
  AfterLookup(id, lookup, reply, now);
}

void Router::State::AfterLookup(std::uint64_t id, CacheFront::Lookup lookup,
                                const std::string& reply, Clock::time_point now) {
  switch (lookup) {
    case CacheFront::Lookup::kAnswered:
      requests.Reply(id, zmq::message_t(reply), now);
      return;
    case CacheFront::Lookup::kDispatch:
      dispatcher.Dispatch(id, now);
      return;
    case CacheFront::Lookup::kAwaitRedis:
      return;
  }
}

void Router::State::HandleRedis(Clock::time_point now) {
  for (auto& [id, values] : cache_front->Ready(now)) {
    PendingRequest* p = requests.Find(id);
    // Answered meanwhile (deadline), or resumed already (the answer came, then the wait ran
    // out, or the other way round).
    if (p == nullptr || !p->awaiting_redis) continue;
    std::string reply;
    AfterLookup(id, cache_front->Resume(*p, std::move(values), &reply), reply, now);
  }
}

void Router::State::HandleControl(const std::string& client, const protocol::Message& message,
                                  bool admin) {
  protocol::ControlRequest control;
  std::string error;
  const bool decoded = protocol::Decode(message.body(), &control, &error);
  // With CURVE on, any admitted client may look (status, list); everything else, even what
  // does not parse, needs an admin key.
  if (!admin && (!decoded || !protocol::ReadOnly(control.op))) {
    requests.SendError(client, message.request_id, ErrorCode::kUnauthorized,
                       "only an admin key may change the cluster (docs/security.md)");
    return;
  }
  if (!decoded) {
    requests.SendError(client, message.request_id, ErrorCode::kBadRequest, error);
    return;
  }
  const auto now = Clock::now();
  switch (control.op) {
    case protocol::ControlOp::kStatus:
    case protocol::ControlOp::kList:
      // "list" is the same picture; emberctl shows it model by model.
      health.Update(workers, now);
      transport.ToClient(
          client, Command::kReply, message.request_id,
          zmq::message_t(protocol::Encode(StatusOf({.workers = workers,
                                                    .health = health,
                                                    .queued = dispatcher.QueueDepths(),
                                                    .options = options,
                                                    .accepted = accepted,
                                                    .now = now}))));
      return;
    case protocol::ControlOp::kLoad:
    case protocol::ControlOp::kUnload:
      controls.Start(client, message.request_id, std::move(control), now);
      return;
  }
}

void Router::State::HandleBackend() {
  for (int i = 0; i < 256; ++i) {
    auto envelope = protocol::ReceiveRouted(backend);
    if (!envelope) return;
    if (!envelope->message) {
      spdlog::warn("malformed message from worker '{}': {}", envelope->peer, envelope->error);
      continue;
    }
    HandleWorkerMessage(envelope->peer, *envelope->message);
  }
}

void Router::State::HandleWorkerMessage(const std::string& id, protocol::Message& message) {
  if (message.command == Command::kReady) {
    HandleRegistration(id, message);
    return;
  }
  WorkerState* worker = workers.Find(id);
  if (worker == nullptr) {
    // We do not know this worker (we restarted, or declared it dead): tell it to register
    // again. Its results, if any, belong to requests we already answered or never had.
    if (message.command != Command::kDisconnect) {
      transport.ToWorker(id, Command::kDisconnect, 0, {});
    }
    return;
  }
  worker->last_seen = Clock::now();
  switch (message.command) {
    case Command::kHeartbeat:
      if (worker->full) {  // it had answered OVERLOADED: try it again, once per heartbeat
        worker->full = false;
        dispatcher.DrainQueues(worker->models, worker->last_seen);
      }
      break;
    case Command::kReply:
    case Command::kError:
      if (controls.Owns(message.request_id)) {
        protocol::ControlResult result;
        std::string error;
        if (message.command == Command::kReply) {
          if (!protocol::Decode(message.body(), &result, &error)) {
            result = {.code = ErrorCode::kInternal, .message = "bad control reply: " + error};
          }
        } else {
          protocol::ErrorBody body;
          if (!protocol::Decode(message.body(), &body, &error)) {
            body = {ErrorCode::kInternal, "bad control error: " + error};
          }
          result = {.code = body.code, .message = body.message};
        }
        result.worker = id;
        controls.Record(message.request_id, std::move(result));
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

void Router::State::HandleRegistration(const std::string& id, const protocol::Message& message) {
  const auto now = Clock::now();
  protocol::ReadyBody ready;
  std::string error;
  if (!protocol::Decode(message.body(), &ready, &error)) {
    spdlog::warn("bad READY from worker '{}': {}", id, error);
    transport.ToWorker(id, Command::kDisconnect, 0, {});
    return;
  }
  if (auto it = options.worker_weights.find(id); it != options.worker_weights.end()) {
    ready.weight = it->second;
  }
  std::vector<protocol::ModelInfo> before;
  if (const WorkerState* known = workers.Find(id);
      known != nullptr && ready.session != 0 && known->session == ready.session) {
    before = known->models;
    spdlog::info("event=worker_models worker={} models=\"{}\"", id, DescribeModels(ready.models));
  } else {
    spdlog::info("event=worker_register worker={} device={} models={} capacity={} weight={}", id,
                 ready.device, ready.models.size(), ready.capacity, ready.weight);
  }
  const std::vector<std::uint64_t> orphans = workers.Register(id, std::move(ready), now);
  // The acknowledgement: requests we sent this worker before now are ahead of it on the
  // wire, so once it arrives nothing more comes for versions this READY took out of service
  // (the worker may then free them).
  transport.ToWorker(id, Command::kReady, message.request_id, {});
  const WorkerState& worker = *workers.Find(id);
  catalog.Remember(worker, now);
  // A copy: re-dispatching the orphans may drop this worker again.
  const std::vector<protocol::ModelInfo> models = worker.models;
  const ModelCatalog::Forgotten forgotten = catalog.Forget(before, workers);
  for (const auto& [model, version] : forgotten.versions) {
    // Its vectors can never be served again (the key holds the version).
    if (cache) cache->EraseVersion(model, version);
  }
  if (forgotten.any) {
    dispatcher.FailQueued([&](const std::string& m, std::uint32_t v) { return Known(m, v, now); },
                          now);
  }
  dispatcher.Redispatch(orphans, id, now);
  dispatcher.DrainQueues(models, now);
}

void Router::State::HandleResult(WorkerState& worker, protocol::Message& message) {
  // Its credit comes back with its answer, whether or not the client is still waiting.
  worker.Release(message.request_id);
  PendingRequest* p = requests.Find(message.request_id);
  // A late result for a request that timed out or was re-dispatched elsewhere is dropped: the
  // client already has (or will get) its one reply. Of a hedged request's two workers, the
  // first to answer answers the client (router/dispatcher.h).
  if (p != nullptr && (p->worker == worker.id || p->hedge_worker == worker.id)) {
    const auto now = Clock::now();
    if (message.command == Command::kReply) {
      worker.full = false;
      ++worker.completed;
      // This worker's own time: from the hedge's send when it answers a hedge, so that the
      // time a stalled worker held the request never raises the model's hedge time.
      const auto sent = p->hedge_worker == worker.id ? p->hedge_sent_at : p->sent_at;
      const auto latency = std::chrono::duration_cast<std::chrono::microseconds>(now - sent);
      worker.latency.Record(latency, now);
      dispatcher.Answered(p->model, latency);
      health.RecordAnswer(worker.id, /*error=*/false);
      RouterMetrics::Observe(metrics.dispatch, p->model,
                             std::chrono::duration<double>(now - p->sent_at).count());
      RouterMetrics::Observe(metrics.worker_dispatch, worker.id,
                             std::chrono::duration<double>(now - sent).count());
      // Without a cache nobody needs what is inside: the worker's frame goes to the client as
      // it is, uncopied. Metrics read their two numbers where they lie (common/reply_stats.h).
      zmq::message_t body = std::move(message.frame);
      if (metrics_server && !cache_front) {
        protocol::EmbedReplyStats stats;
        if (protocol::Decode(body.to_string_view(), &stats)) {
          RouterMetrics::Observe(metrics.batch_size, p->model, stats.batch_size, /*batch=*/true);
          metrics.tokens[p->model] += stats.tokens;
        }
      } else if (cache_front) {
        protocol::EmbedReply reply;
        std::string error;
        if (!protocol::Decode(body.to_string_view(), &reply, &error)) {
          spdlog::warn("event=bad_reply model={} error=\"{}\"", p->model, error);
          if (!p->hits.empty()) body.rebuild();
        } else {
          RouterMetrics::Observe(metrics.batch_size, p->model, reply.batch_size, /*batch=*/true);
          std::uint64_t& tokens = metrics.tokens[p->model];
          for (const std::uint32_t t : reply.tokens) tokens += t;
          body = zmq::message_t(cache_front->Complete(*p, body.to_string_view(), reply));
        }
      }
      if (body.empty()) {
        requests.Fail(message.request_id, ErrorCode::kInternal,
                      "worker '" + worker.id + "' sent a bad reply", now);
      } else {
        requests.Reply(message.request_id, std::move(body), now);
      }
    } else {
      protocol::ErrorBody error;
      std::string why;
      if (!protocol::Decode(message.body(), &error, &why)) error.code = ErrorCode::kInternal;
      if (error.code == ErrorCode::kOverloaded) {
        // The worker's queue was full: not the client's doing. The request waits in the
        // router again, first in line, and the worker gets no more until it makes progress.
        dispatcher.WorkerFull(worker, message.request_id);
      } else {
        ++worker.failed;
        health.RecordAnswer(worker.id, WorkerFault(error.code));
        requests.ForwardError(message.request_id, error.code, std::move(message.frame), now);
      }
    }
  }
  // The worker has a free credit now: give it to whoever waits longest.
  dispatcher.DrainQueues(worker.models, Clock::now());
}

void Router::State::DropWorker(const std::string& id, const std::string& why) {
  const auto now = Clock::now();
  if (const WorkerState* w = workers.Find(id)) {
    spdlog::warn("event=worker_drop worker={} reason=\"{}\" in_flight={}", id, why,
                 w->in_flight.size());
    health.RecordDead(id, why, now);
  }
  metrics.worker_dispatch.erase(id);
  dispatcher.Redispatch(workers.Remove(id), id, now);
  controls.WorkerGone(id, why);
}

void Router::State::PurgeSilentWorkers(Clock::time_point now) {
  // Checked every loop, not every heartbeat, so a dead worker is out of dispatch liveness x
  // interval after its last message, not a beat later.
  const auto silence = options.heartbeat_interval * options.liveness;
  for (const std::string& id : workers.SilentSince(now - silence)) {
    DropWorker(id, "missed heartbeats");
  }
}

void Router::State::HeartbeatWorkers(Clock::time_point now) {
  std::vector<std::string> unreachable;
  for (const auto& [id, w] : workers.workers()) {
    catalog.Remember(w, now);
    if (!transport.ToWorker(id, Command::kHeartbeat, 0, {})) unreachable.push_back(id);
  }
  for (const auto& id : unreachable) DropWorker(id, "unreachable");
}

void Router::State::PublishMetrics(Clock::time_point now) {
  health.Update(workers, now);
  if (!metrics_server) return;
  metrics.hedges = dispatcher.hedges();
  if (redis) {
    metrics.cache_redis_errors = redis->errors();
    metrics.cache_redis_up = redis->connected();
  }
  if (zap) {
    metrics.auth_refused["frontend"] = zap->refused(kFrontendDomain);
    metrics.auth_refused["backend"] = zap->refused(kBackendDomain);
  }
  metrics_server->Publish(RenderMetrics(metrics, {.workers = workers,
                                                  .health = health,
                                                  .cache = cache.get(),
                                                  .queued = dispatcher.QueueDepths(),
                                                  .pending = requests.size(),
                                                  .now = now}));
}

}  // namespace ember::router
