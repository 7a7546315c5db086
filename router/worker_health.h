// Classifies each worker as healthy, slow, erroring or dead, for alerts
// (logged once per transition), metrics and CONTROL status. Owned and used
// by the router thread only.
//
// slow:     at least kMinSamples replies, and its p50 is more than
//           slow_factor x the median p50 of the other workers that serve one
//           of its models (so one slow worker among two is still caught).
// erroring: of its last kWindow answers, at least kMinSamples, more than
//           error_threshold were worker errors (INTERNAL, UNAVAILABLE).
// dead:     removed by the router (missed heartbeats, unreachable, left);
//           the last kKeepDead stay listed for dead_retention.
#ifndef EMBER_ROUTER_WORKER_HEALTH_H_
#define EMBER_ROUTER_WORKER_HEALTH_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "router/worker_registry.h"

namespace ember::router {

enum class Health : std::uint8_t { kHealthy, kSlow, kErroring, kDead };
std::string_view HealthName(Health health);  // "healthy", "slow", ...

struct HealthOptions {
  double slow_factor = 3.0;
  double error_threshold = 0.5;
  std::chrono::seconds dead_retention{600};
};

class WorkerHealth {
 public:
  static constexpr std::size_t kWindow = 64;
  static constexpr std::size_t kMinSamples = 8;
  static constexpr std::size_t kKeepDead = 16;

  explicit WorkerHealth(HealthOptions options = {}) : options_(options) {}

  // One answer from `worker`: a result, or an error that is the worker's fault.
  void RecordAnswer(const std::string& worker, bool error);
  // The router removed `worker`.
  void RecordDead(const std::string& worker, std::string_view reason, Clock::time_point now);
  // Recomputes every live worker's state; logs each change once.
  void Update(const WorkerRegistry& registry, Clock::time_point now);

  // The state of a live worker as of the last Update (healthy if unknown).
  Health Of(std::string_view worker) const;

  struct Dead {
    std::string id;
    std::string reason;
    Clock::time_point at;
  };
  const std::deque<Dead>& dead() const { return dead_; }
  const std::map<std::string, Health, std::less<>>& live() const { return state_; }

 private:
  struct Window {
    std::deque<bool> errors;  // last kWindow answers, true = error
  };
  HealthOptions options_;
  std::map<std::string, Window, std::less<>> windows_;
  std::map<std::string, Health, std::less<>> state_;
  std::deque<Dead> dead_;  // newest last
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_WORKER_HEALTH_H_
