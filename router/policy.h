// Load-balancing policies: which of the workers that serve a model gets the
// next request. The router asks its policy once per dispatch; a policy only
// sees workers that serve the model and have credit left.
#ifndef EMBER_ROUTER_POLICY_H_
#define EMBER_ROUTER_POLICY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "router/worker_registry.h"

namespace ember::router {

class Policy {
 public:
  virtual ~Policy() = default;

  // Picks one of `candidates`, which is never empty and is in a stable order
  // (by worker id). `now` is the dispatch time, for latency decay.
  virtual WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates,
                              Clock::time_point now) = 0;
};

enum class PolicyKind {
  kRoundRobin,          // "round_robin": each candidate in turn
  kWeightedRoundRobin,  // "weighted_round_robin": in proportion to worker weight
  kLeastConnections,    // "least_connections": fewest requests in flight
  kResponseTime,        // "response_time": lowest latency EWMA
  kAdaptive,            // "adaptive": power of two choices on peak EWMA x (in flight + 1)
};

std::optional<PolicyKind> ParsePolicyKind(std::string_view name);
std::string_view PolicyKindName(PolicyKind kind);

// `seed` feeds the adaptive policy's random choices (fixed in tests).
std::unique_ptr<Policy> MakePolicy(PolicyKind kind, std::uint64_t seed = 0x656d626572);

}  // namespace ember::router

#endif  // EMBER_ROUTER_POLICY_H_
