#include "router/policy.h"

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <unordered_map>

namespace ember::router {
namespace {

constexpr std::array<std::pair<PolicyKind, std::string_view>, 5> kNames = {{
    {PolicyKind::kRoundRobin, "round_robin"},
    {PolicyKind::kWeightedRoundRobin, "weighted_round_robin"},
    {PolicyKind::kLeastConnections, "least_connections"},
    {PolicyKind::kResponseTime, "response_time"},
    {PolicyKind::kAdaptive, "adaptive"},
}};

// Per-model rotation, shared by the policies that break ties by turn.
class Rotation {
 public:
  std::size_t Next(std::string_view model) { return next_[std::string(model)]++; }

 private:
  std::unordered_map<std::string, std::size_t> next_;
};

class RoundRobinPolicy final : public Policy {
 public:
  WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates,
                      Clock::time_point) override {
    return candidates[rotation_.Next(model) % candidates.size()];
  }

 private:
  Rotation rotation_;
};

// Smooth weighted round robin (as in nginx): each pick adds every
// candidate's weight to its running score and takes the highest, which then
// pays back the total. Picks interleave instead of coming in runs.
class WeightedRoundRobinPolicy final : public Policy {
 public:
  WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates,
                      Clock::time_point) override {
    auto& scores = scores_[std::string(model)];
    double total = 0;
    WorkerState* best = nullptr;
    double best_score = -std::numeric_limits<double>::infinity();
    for (WorkerState* w : candidates) {
      double& score = scores[w->id];
      score += w->weight;
      total += w->weight;
      if (score > best_score) {
        best_score = score;
        best = w;
      }
    }
    scores[best->id] -= total;
    return best;
  }

 private:
  std::unordered_map<std::string, std::unordered_map<std::string, double>> scores_;
};

// Picks the minimum of `cost` over the candidates; ties go by rotation so that
// equal workers share the load.
template <class Cost>
WorkerState* ArgMin(std::span<WorkerState* const> candidates, std::size_t turn, Cost cost) {
  WorkerState* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    WorkerState* w = candidates[(turn + i) % candidates.size()];
    const double c = cost(*w);
    if (c < best_cost) {
      best_cost = c;
      best = w;
    }
  }
  return best;
}

class LeastConnectionsPolicy final : public Policy {
 public:
  WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates,
                      Clock::time_point) override {
    return ArgMin(candidates, rotation_.Next(model),
                  [](const WorkerState& w) { return static_cast<double>(w.in_flight.size()); });
  }

 private:
  Rotation rotation_;
};

// A worker with no samples yet is assumed as fast as the fastest known one,
// so it gets traffic (and so samples) without being flooded.
double FastestKnown(std::span<WorkerState* const> candidates, auto latency) {
  double fastest = std::numeric_limits<double>::infinity();
  for (const WorkerState* w : candidates) {
    if (!w->latency.empty()) fastest = std::min(fastest, latency(*w));
  }
  return std::isinf(fastest) ? 1.0 : fastest;
}

class ResponseTimePolicy final : public Policy {
 public:
  WorkerState* Choose(std::string_view model, std::span<WorkerState* const> candidates,
                      Clock::time_point) override {
    auto ewma = [](const WorkerState& w) { return w.latency.ewma_ms(); };
    const double unknown = FastestKnown(candidates, ewma);
    return ArgMin(candidates, rotation_.Next(model),
                  [&](const WorkerState& w) { return w.latency.empty() ? unknown : ewma(w); });
  }

 private:
  Rotation rotation_;
};

// Power of two choices over peak-EWMA latency x (in flight + 1): cheap, and it
// avoids both a slow worker (latency term) and herding onto the one that
// merely looks fastest (load term, random pairs).
class AdaptivePolicy final : public Policy {
 public:
  explicit AdaptivePolicy(std::uint64_t seed) : rng_(seed) {}

  WorkerState* Choose(std::string_view, std::span<WorkerState* const> candidates,
                      Clock::time_point now) override {
    if (candidates.size() == 1) return candidates[0];
    auto peak = [now](const WorkerState& w) { return w.latency.PeakEwmaMs(now); };
    const double unknown = FastestKnown(candidates, peak);
    auto cost = [&](const WorkerState& w) {
      return (w.latency.empty() ? unknown : peak(w)) / std::max(w.weight, 1e-9) *
             static_cast<double>(w.in_flight.size() + 1);
    };
    std::uniform_int_distribution<std::size_t> pick(0, candidates.size() - 1);
    const std::size_t a = pick(rng_);
    std::size_t b = pick(rng_);
    if (b == a) b = (a + 1) % candidates.size();
    return cost(*candidates[b]) < cost(*candidates[a]) ? candidates[b] : candidates[a];
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

std::optional<PolicyKind> ParsePolicyKind(std::string_view name) {
  for (const auto& [kind, n] : kNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

std::string_view PolicyKindName(PolicyKind kind) {
  for (const auto& [k, n] : kNames) {
    if (k == kind) return n;
  }
  return "round_robin";
}

std::unique_ptr<Policy> MakePolicy(PolicyKind kind, std::uint64_t seed) {
  switch (kind) {
    case PolicyKind::kRoundRobin:
      return std::make_unique<RoundRobinPolicy>();
    case PolicyKind::kWeightedRoundRobin:
      return std::make_unique<WeightedRoundRobinPolicy>();
    case PolicyKind::kLeastConnections:
      return std::make_unique<LeastConnectionsPolicy>();
    case PolicyKind::kResponseTime:
      return std::make_unique<ResponseTimePolicy>();
    case PolicyKind::kAdaptive:
      return std::make_unique<AdaptivePolicy>(seed);
  }
  return std::make_unique<RoundRobinPolicy>();
}

}  // namespace ember::router
