// Which models the router keeps requests for: a (model, version) is known while some live
// worker has it READY or LOADING, and for model_retention after the last one left (a worker
// restarting), so requests wait for it instead of failing; during the startup grace, before
// workers had a chance to register, every model is. Owned by the router thread.
#ifndef EMBER_ROUTER_MODEL_CATALOG_H_
#define EMBER_ROUTER_MODEL_CATALOG_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/messages.h"
#include "router/worker_registry.h"

namespace ember::router {

class ModelCatalog {
 public:
  ModelCatalog(std::chrono::milliseconds retention, Clock::time_point grace_end)
      : retention_(retention), grace_end_(grace_end) {}

  bool Known(const std::string& model, std::uint32_t version, Clock::time_point now) const;
  bool InGrace(Clock::time_point now) const { return now < grace_end_; }
  // `worker` serves its models as of `now`.
  void Remember(const WorkerState& worker, Clock::time_point now);
  // After a worker's models changed from `before`: forgets versions no worker has any more.
  struct Forgotten {
    std::vector<std::pair<std::string, std::uint32_t>> versions;  // no worker has these now
    bool any = false;  // something known before is not now (queued requests may be orphaned)
  };
  Forgotten Forget(const std::vector<protocol::ModelInfo>& before, const WorkerRegistry& workers);

 private:
  const std::chrono::milliseconds retention_;
  const Clock::time_point grace_end_;
  // Last time each (model, version) had a live worker; version 0 = any.
  std::map<std::pair<std::string, std::uint32_t>, Clock::time_point> seen_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_MODEL_CATALOG_H_
