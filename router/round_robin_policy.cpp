#include <string>
#include <unordered_map>

#include "router/policy.h"

namespace ember::router {
namespace {

class RoundRobinPolicy final : public Policy {
 public:
  WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates) override {
    std::size_t& next = next_[std::string(model)];
    WorkerState* chosen = candidates[next % candidates.size()];
    ++next;
    return chosen;
  }

 private:
  std::unordered_map<std::string, std::size_t> next_;
};

}  // namespace

std::unique_ptr<Policy> MakeRoundRobinPolicy() { return std::make_unique<RoundRobinPolicy>(); }

}  // namespace ember::router
