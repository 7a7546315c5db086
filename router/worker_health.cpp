#include "router/worker_health.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace ember::router {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool SharesModel(const WorkerState& a, const WorkerState& b) {
  for (const auto& m : a.models) {
    if (m.state != protocol::ModelState::kReady) continue;
    if (b.Serves(m.name, m.version)) return true;
  }
  return false;
}

}  // namespace

std::string_view HealthName(Health health) {
  switch (health) {
    case Health::kHealthy:
      return "healthy";
    case Health::kSlow:
      return "slow";
    case Health::kErroring:
      return "erroring";
    case Health::kDead:
      return "dead";
  }
  return "healthy";
}

void WorkerHealth::RecordAnswer(const std::string& worker, bool error) {
  auto& errors = windows_[worker].errors;
  errors.push_back(error);
  if (errors.size() > kWindow) errors.pop_front();
}

void WorkerHealth::RecordDead(const std::string& worker, std::string_view reason,
                              Clock::time_point now) {
  const auto it = state_.find(worker);
  const Health before = it == state_.end() ? Health::kHealthy : it->second;
  spdlog::warn("event=worker_health worker={} from={} to=dead reason=\"{}\"", worker,
               HealthName(before), reason);
  if (it != state_.end()) state_.erase(it);
  windows_.erase(worker);
  std::erase_if(dead_, [&](const Dead& d) { return d.id == worker; });
  dead_.push_back({worker, std::string(reason), now});
  while (dead_.size() > kKeepDead) dead_.pop_front();
}

void WorkerHealth::Update(const WorkerRegistry& registry, Clock::time_point now) {
  while (!dead_.empty() && now - dead_.front().at > options_.dead_retention) dead_.pop_front();
  const auto& workers = registry.workers();
  // Workers that came back are no longer dead.
  std::erase_if(dead_, [&](const Dead& d) { return workers.contains(d.id); });
  std::erase_if(state_, [&](const auto& entry) { return !workers.contains(entry.first); });
  for (const auto& [id, w] : workers) {
    Health health = Health::kHealthy;
    if (auto win = windows_.find(id); win != windows_.end()) {
      const auto& errors = win->second.errors;
      const auto failed = static_cast<double>(std::count(errors.begin(), errors.end(), true));
      if (errors.size() >= kMinSamples &&
          failed / static_cast<double>(errors.size()) > options_.error_threshold) {
        health = Health::kErroring;
      }
    }
    if (health == Health::kHealthy && w.latency.samples() >= kMinSamples) {
      std::vector<double> peers;
      for (const auto& [other_id, other] : workers) {
        if (other_id == id || other.latency.samples() < kMinSamples) continue;
        if (SharesModel(w, other)) peers.push_back(other.latency.PercentileMs(0.5));
      }
      const double median = Median(std::move(peers));
      if (median > 0 && w.latency.PercentileMs(0.5) > options_.slow_factor * median) {
        health = Health::kSlow;
      }
    }
    auto [it, added] = state_.try_emplace(id, Health::kHealthy);
    if (it->second != health) {
      spdlog::warn("event=worker_health worker={} from={} to={} p50_ms={:.2f} error_rate={:.2f}",
                   id, HealthName(it->second), HealthName(health), w.latency.PercentileMs(0.5),
                   w.error_rate());
      it->second = health;
    }
  }
}

Health WorkerHealth::Of(std::string_view worker) const {
  auto it = state_.find(worker);
  return it == state_.end() ? Health::kHealthy : it->second;
}

}  // namespace ember::router
