#include "router/worker_registry.h"

#include <algorithm>

namespace ember::router {
namespace {

std::vector<std::uint64_t> Ids(const InFlightMap& in_flight) {
  std::vector<std::uint64_t> ids;
  ids.reserve(in_flight.size());
  for (const auto& [id, texts] : in_flight) ids.push_back(id);
  return ids;
}

}  // namespace

bool WorkerState::Serves(std::string_view model, std::uint32_t version) const {
  return std::any_of(models.begin(), models.end(), [&](const protocol::ModelInfo& m) {
    return m.name == model && m.version == version && m.state == protocol::ModelState::kReady;
  });
}

std::vector<std::uint64_t> WorkerRegistry::Register(const std::string& id,
                                                    protocol::ReadyBody ready,
                                                    Clock::time_point now) {
  std::vector<std::uint64_t> orphans;
  auto it = workers_.find(id);
  // The same process telling us its models changed keeps its requests in
  // flight; a new process (or one that never says its session) starts over.
  const bool update =
      it != workers_.end() && ready.session != 0 && it->second.session == ready.session;
  if (!update) {
    orphans = Remove(id);
    // A pmr container keeps the resource it was built with: build the map on the pool.
    it = workers_.try_emplace(id, &pool_).first;
    it->second.registered = now;
  } else if (ready.holding) {
    // The same process over a fresh connection: what it answered while the old one was down
    // never came, and never will.
    std::sort(ready.holding->begin(), ready.holding->end());
    for (const std::uint64_t request : Ids(it->second.in_flight)) {
      if (std::binary_search(ready.holding->begin(), ready.holding->end(), request)) continue;
      it->second.Release(request);
      orphans.push_back(request);
    }
  }
  WorkerState& w = it->second;
  w.id = id;
  w.session = ready.session;
  w.device = std::move(ready.device);
  w.capacity = std::max<std::uint32_t>(ready.capacity, 1);
  w.weight = ready.weight > 0 ? ready.weight : 1.0;
  w.rss_bytes = ready.rss_bytes;
  w.routers = std::move(ready.routers);
  w.models = std::move(ready.models);
  w.last_seen = now;
  return orphans;
}

std::vector<std::uint64_t> WorkerRegistry::Remove(std::string_view id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return {};
  std::vector<std::uint64_t> orphans = Ids(it->second.in_flight);
  workers_.erase(it);
  return orphans;
}

WorkerState* WorkerRegistry::Find(std::string_view id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

std::optional<std::uint32_t> WorkerRegistry::Resolve(std::string_view model,
                                                     std::uint32_t version) const {
  std::optional<std::uint32_t> best;
  for (const auto& [id, w] : workers_) {
    for (const auto& m : w.models) {
      if (m.name != model || m.state != protocol::ModelState::kReady) continue;
      if (version != 0 && m.version == version) return version;
      if (version == 0 && (!best || m.version > *best)) best = m.version;
    }
  }
  return best;
}

void WorkerRegistry::Candidates(std::string_view model, std::uint32_t version,
                                std::vector<WorkerState*>* out) {
  out->clear();
  for (auto& [id, w] : workers_) {
    if (w.Serves(model, version)) out->push_back(&w);
  }
}

std::vector<std::string> WorkerRegistry::SilentSince(Clock::time_point deadline) const {
  std::vector<std::string> out;
  for (const auto& [id, w] : workers_) {
    if (w.last_seen < deadline) out.push_back(id);
  }
  return out;
}

}  // namespace ember::router
