// Load-balancing policies: which of the workers that serve a model gets the
// next request. The router asks its policy once per dispatch; a policy sees
// only workers that serve the model and have credit left.
#ifndef EMBER_ROUTER_POLICY_H_
#define EMBER_ROUTER_POLICY_H_

#include <memory>
#include <span>
#include <string_view>

#include "router/worker_registry.h"

namespace ember::router {

class Policy {
 public:
  virtual ~Policy() = default;

  // Picks one of `candidates`, which is never empty and is in a stable order.
  virtual WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates) = 0;
};

// Cycles through the candidates, one counter per model.
std::unique_ptr<Policy> MakeRoundRobinPolicy();

}  // namespace ember::router

#endif  // EMBER_ROUTER_POLICY_H_
