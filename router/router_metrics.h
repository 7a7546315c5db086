// What the router counts for Prometheus, and the rendering of it together
// with the live state (queues, workers, health, cache) into exposition text.
// Owned by the router thread; MetricsServer only ever sees the rendered text.
#ifndef EMBER_ROUTER_ROUTER_METRICS_H_
#define EMBER_ROUTER_ROUTER_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "common/metrics.h"
#include "router/embedding_cache.h"
#include "router/worker_health.h"
#include "router/worker_registry.h"

namespace ember::router {

struct RouterMetrics {
  // Requests answered, by model, then outcome ("ok" or an error code name). Nested, with
  // transparent lookups, so counting builds no key (no allocation for long model names).
  std::map<std::string, std::map<std::string, std::uint64_t, std::less<>>, std::less<>> requests;
  std::map<std::string, std::uint64_t> errors;           // every ERROR sent to a client, by code
  std::map<std::string, metrics::Histogram> end_to_end;  // by model: accept to reply
  std::map<std::string, metrics::Histogram> dispatch;    // by model: dispatch to reply
  std::map<std::string, metrics::Histogram> worker_dispatch;  // by worker
  std::map<std::string, metrics::Histogram> batch_size;       // by model, from each reply
  std::map<std::string, std::uint64_t> tokens;                // by model: what workers ran
  std::uint64_t hedges = 0;        // requests sent to a second worker (copied from the Dispatcher)
  std::uint64_t cache_hits = 0;    // texts answered from the cache
  std::uint64_t cache_misses = 0;  // texts looked up and not found
  // The Redis tier (texts that missed the in-memory cache): found there, not
  // found (or not answered within the wait), and the tier's own errors
  // (connects, commands), copied from RedisTier when metrics are rendered.
  std::uint64_t cache_redis_hits = 0;
  std::uint64_t cache_redis_misses = 0;
  std::uint64_t cache_redis_errors = 0;
  bool cache_redis_on = false;
  bool cache_redis_up = false;
  // With CURVE on: connections the allow-lists refused, by socket ("frontend", "backend"),
  // copied from the ZapHandler when metrics are rendered.
  std::map<std::string, std::uint64_t> auth_refused;

  void CountRequest(const std::string& model, std::string_view outcome);
  void CountError(std::string_view code) { ++errors[std::string(code)]; }
  static void Observe(std::map<std::string, metrics::Histogram>& family, const std::string& key,
                      double value, bool batch = false);
};

// The live picture the router thread hands to RenderMetrics.
struct RouterSnapshot {
  const WorkerRegistry& workers;
  const WorkerHealth& health;
  const EmbeddingCache* cache;                       // null when the cache is off
  const std::map<std::string, std::size_t>& queued;  // by model
  std::size_t pending = 0;                           // requests in flight in the router
  Clock::time_point now;
};

std::string RenderMetrics(const RouterMetrics& metrics, const RouterSnapshot& snapshot);

}  // namespace ember::router

#endif  // EMBER_ROUTER_ROUTER_METRICS_H_
