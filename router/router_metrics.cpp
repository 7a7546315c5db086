#include "router/router_metrics.h"

#include <array>

namespace ember::router {

void RouterMetrics::CountRequest(const std::string& model, std::string_view outcome) {
  auto by_model = requests.find(model);
  if (by_model == requests.end()) by_model = requests.try_emplace(model).first;
  auto count = by_model->second.find(outcome);
  if (count == by_model->second.end())
    count = by_model->second.try_emplace(std::string(outcome)).first;
  ++count->second;
}

void RouterMetrics::Observe(std::map<std::string, metrics::Histogram>& family,
                            const std::string& key, double value, bool batch) {
  auto it = family.find(key);
  if (it == family.end()) {
    it = family
             .emplace(key, metrics::Histogram(batch ? metrics::BatchSizeBuckets()
                                                    : metrics::LatencyBuckets()))
             .first;
  }
  it->second.Observe(value);
}

std::string RenderMetrics(const RouterMetrics& m, const RouterSnapshot& s) {
  metrics::TextWriter out;
  for (const auto& [model, outcomes] : m.requests) {
    for (const auto& [outcome, count] : outcomes) {
      out.Counter("ember_router_requests_total", "Requests answered, by model and outcome.",
                  {{"model", model}, {"outcome", outcome}}, static_cast<double>(count));
    }
  }
  for (const auto& [code, count] : m.errors) {
    out.Counter("ember_router_errors_total", "ERROR replies sent to clients, by code.",
                {{"code", code}}, static_cast<double>(count));
  }
  out.Gauge("ember_router_requests_in_flight", "Accepted requests not answered yet.", {},
            static_cast<double>(s.pending));
  for (const auto& [model, depth] : s.queued) {
    out.Gauge("ember_router_queue_depth", "Requests waiting in the router for worker credit.",
              {{"model", model}}, static_cast<double>(depth));
  }
  for (const auto& [model, h] : m.end_to_end) {
    out.Histogram("ember_router_request_duration_seconds",
                  "From accepting a request to sending its reply, by model.", {{"model", model}},
                  h);
  }
  for (const auto& [model, h] : m.dispatch) {
    out.Histogram("ember_router_dispatch_duration_seconds",
                  "From sending a request to a worker to its reply, by model.", {{"model", model}},
                  h);
  }
  for (const auto& [worker, h] : m.worker_dispatch) {
    out.Histogram("ember_worker_dispatch_duration_seconds",
                  "From sending a request to a worker to its reply, by worker.",
                  {{"worker", worker}}, h);
  }
  for (const auto& [model, h] : m.batch_size) {
    out.Histogram("ember_worker_batch_size", "Texts in the batch that computed each reply.",
                  {{"model", model}}, h);
  }
  for (const auto& [model, n] : m.tokens) {
    out.Counter("ember_worker_tokens_total",
                "Tokens the workers ran (special tokens included; cache hits not), by model.",
                {{"model", model}}, static_cast<double>(n));
  }
  // Live workers and recently removed ones share these families.
  const char* kUpHelp = "1 for a live worker, 0 for a recently removed one.";
  const char* kSeenHelp = "Seconds since the worker's last message (removed: since removal).";
  for (const auto& [id, w] : s.workers.workers()) {
    out.Gauge("ember_worker_up", kUpHelp, {{"worker", id}}, 1);
  }
  for (const auto& d : s.health.dead()) {
    out.Gauge("ember_worker_up", kUpHelp, {{"worker", d.id}}, 0);
  }
  for (const auto& [id, w] : s.workers.workers()) {
    out.Gauge("ember_worker_last_seen_seconds", kSeenHelp, {{"worker", id}},
              std::chrono::duration<double>(s.now - w.last_seen).count());
  }
  for (const auto& d : s.health.dead()) {
    out.Gauge("ember_worker_last_seen_seconds", kSeenHelp, {{"worker", d.id}},
              std::chrono::duration<double>(s.now - d.at).count());
  }
  for (const auto& [id, w] : s.workers.workers()) {
    out.Gauge("ember_worker_in_flight", "Requests sent to the worker and not answered yet.",
              {{"worker", id}}, static_cast<double>(w.in_flight.size()));
  }
  for (const auto& [id, w] : s.workers.workers()) {
    out.Gauge("ember_worker_capacity", "Requests the worker accepts in flight.", {{"worker", id}},
              w.capacity);
  }
  for (const auto& [id, w] : s.workers.workers()) {
    out.Counter("ember_worker_completed_total", "Results the worker returned.", {{"worker", id}},
                static_cast<double>(w.completed));
  }
  for (const auto& [id, w] : s.workers.workers()) {
    out.Counter("ember_worker_failed_total", "Errors the worker returned.", {{"worker", id}},
                static_cast<double>(w.failed));
  }
  constexpr std::array kStates = {Health::kHealthy, Health::kSlow, Health::kErroring,
                                  Health::kDead};
  const char* kHealthHelp = "1 for the worker's health state (healthy, slow, erroring, dead).";
  for (const auto& [id, w] : s.workers.workers()) {
    const Health now = s.health.Of(id);
    for (Health h : kStates) {
      out.Gauge("ember_worker_health", kHealthHelp,
                {{"worker", id}, {"state", std::string(HealthName(h))}}, h == now ? 1 : 0);
    }
  }
  for (const auto& d : s.health.dead()) {
    for (Health h : kStates) {
      out.Gauge("ember_worker_health", kHealthHelp,
                {{"worker", d.id}, {"state", std::string(HealthName(h))}},
                h == Health::kDead ? 1 : 0);
    }
  }
  for (const auto& [id, w] : s.workers.workers()) {
    for (const auto& model : w.models) {
      out.Gauge("ember_worker_model_state", "1 for each model version a worker has, by state.",
                {{"worker", id},
                 {"model", model.name},
                 {"version", std::to_string(model.version)},
                 {"state", std::string(protocol::ModelStateName(model.state))}},
                1);
    }
  }
  out.Counter("ember_router_hedges_total",
              "Requests sent to a second worker after the first held them past the hedge time.", {},
              static_cast<double>(m.hedges));
  out.Counter("ember_router_cache_hits_total", "Texts answered from the embedding cache.", {},
              static_cast<double>(m.cache_hits));
  out.Counter("ember_router_cache_misses_total", "Texts looked up in the cache and not found.", {},
              static_cast<double>(m.cache_misses));
  if (m.cache_redis_on) {
    out.Counter("ember_router_cache_redis_hits_total",
                "Texts missed in memory and found in the Redis tier.", {},
                static_cast<double>(m.cache_redis_hits));
    out.Counter("ember_router_cache_redis_misses_total",
                "Texts missed in memory and not found in Redis within the wait.", {},
                static_cast<double>(m.cache_redis_misses));
    out.Counter("ember_router_cache_redis_errors_total",
                "Failed Redis connects and commands (the tier then reconnects).", {},
                static_cast<double>(m.cache_redis_errors));
    out.Gauge("ember_router_cache_redis_up", "1 while the Redis tier is connected.", {},
              m.cache_redis_up ? 1.0 : 0.0);
  }
  for (const auto& [socket, count] : m.auth_refused) {
    out.Counter("ember_router_auth_refused_total",
                "Connections refused by the CURVE allow-lists, by socket.", {{"socket", socket}},
                static_cast<double>(count));
  }
  if (s.cache != nullptr) {
    out.Gauge("ember_router_cache_bytes", "Bytes the embedding cache holds.", {},
              static_cast<double>(s.cache->bytes()));
    out.Gauge("ember_router_cache_entries", "Vectors in the embedding cache.", {},
              static_cast<double>(s.cache->entries()));
    out.Counter("ember_router_cache_evictions_total", "Entries evicted to stay in budget.", {},
                static_cast<double>(s.cache->evictions()));
  }
  return out.text();
}

}  // namespace ember::router
