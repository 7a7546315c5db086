// The router's answer to CONTROL "status" / "list": its view of every worker (models and their
// states, load, latency, health) and of every model (workers, queue, policy).
#ifndef EMBER_ROUTER_STATUS_REPORT_H_
#define EMBER_ROUTER_STATUS_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/messages.h"
#include "router/router_options.h"
#include "router/worker_health.h"
#include "router/worker_registry.h"

namespace ember::router {

struct StatusInputs {
  const WorkerRegistry& workers;
  const WorkerHealth& health;                        // Update()d by the caller
  const std::map<std::string, std::size_t>& queued;  // by model
  const RouterOptions& options;
  std::uint64_t accepted = 0;  // requests received
  Clock::time_point now;
};

protocol::StatusReply StatusOf(const StatusInputs& in);

// "m:1 READY, m:2 LOADING", for logs.
std::string DescribeModels(const std::vector<protocol::ModelInfo>& models);

}  // namespace ember::router

#endif  // EMBER_ROUTER_STATUS_REPORT_H_
