// The gateway's own counters, served as Prometheus text on GET /metrics.
// (The router's cluster-wide metrics are a separate endpoint.) The event
// loops and control threads update them concurrently; a mutex is cheap next
// to an HTTP request.
#ifndef EMBER_GATEWAY_GATEWAY_METRICS_H_
#define EMBER_GATEWAY_GATEWAY_METRICS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace ember::gateway {

class GatewayMetrics {
 public:
  // One finished HTTP request on `route` ("/v1/embeddings", ...).
  void Record(const std::string& route, int status, double seconds, std::size_t texts);

  // Requests being handled right now.
  void Begin() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void End() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  // Prometheus text exposition format, version 0.0.4.
  std::string Render() const;

 private:
  struct Latency {
    double sum = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;  // (route, status)
  std::map<std::string, Latency> latency_;                         // route
  std::uint64_t texts_ = 0;
  std::atomic<std::int64_t> in_flight_{0};
};

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_GATEWAY_METRICS_H_
