#include "router/model_catalog.h"

namespace ember::router {
namespace {

// Whether a worker's model version makes requests for it worth keeping: READY serves them,
// LOADING will (requests wait for it).
bool CountsAsKnown(const protocol::ModelInfo& m) {
  return m.state == protocol::ModelState::kReady || m.state == protocol::ModelState::kLoading;
}

}  // namespace

bool ModelCatalog::Known(const std::string& model, std::uint32_t version,
                         Clock::time_point now) const {
  // A router that just started has not heard from its workers yet: let requests wait for them
  // to register rather than refusing every model.
  if (InGrace(now)) return true;
  auto it = seen_.find({model, version});
  return it != seen_.end() && now - it->second <= retention_;
}

void ModelCatalog::Remember(const WorkerState& worker, Clock::time_point now) {
  for (const auto& m : worker.models) {
    if (!CountsAsKnown(m)) continue;
    seen_[{m.name, m.version}] = now;
    seen_[{m.name, 0}] = now;
  }
}

ModelCatalog::Forgotten ModelCatalog::Forget(const std::vector<protocol::ModelInfo>& before,
                                             const WorkerRegistry& workers) {
  Forgotten forgotten;
  for (const auto& m : before) {
    bool version_left = false, model_left = false;
    for (const auto& [id, w] : workers.workers()) {
      for (const auto& other : w.models) {
        if (other.name != m.name || !CountsAsKnown(other)) continue;
        model_left = true;
        version_left |= other.version == m.version;
      }
    }
    if (!version_left) {
      forgotten.any |= seen_.erase({m.name, m.version}) > 0;
      forgotten.versions.emplace_back(m.name, m.version);
    }
    if (!model_left) forgotten.any |= seen_.erase({m.name, 0}) > 0;
  }
  return forgotten;
}

}  // namespace ember::router
