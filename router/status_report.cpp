#include "router/status_report.h"

namespace ember::router {
namespace {

constexpr std::string_view kRouterVersion = "ember-router 0.1";

}  // namespace

protocol::StatusReply StatusOf(const StatusInputs& in) {
  protocol::StatusReply status;
  status.router_version = kRouterVersion;
  status.requests = in.accepted;
  for (const auto& [id, w] : in.workers.workers()) {
    protocol::WorkerStatus ws;
    ws.id = id;
    ws.device = w.device;
    ws.models = w.models;
    ws.capacity = w.capacity;
    ws.in_flight = static_cast<std::uint32_t>(w.in_flight.size());
    ws.completed = w.completed;
    ws.failed = w.failed;
    ws.last_seen_ms = static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(in.now - w.last_seen).count());
    ws.weight = w.weight;
    ws.ewma_ms = w.latency.ewma_ms();
    ws.p50_ms = w.latency.PercentileMs(0.5);
    ws.p99_ms = w.latency.PercentileMs(0.99);
    ws.rss_bytes = w.rss_bytes;
    ws.routers = w.routers;
    ws.health = std::string(HealthName(in.health.Of(id)));
    status.workers.push_back(std::move(ws));
  }
  std::map<std::string, protocol::ModelStatus> models;
  for (const auto& [id, w] : in.workers.workers()) {
    for (const auto& m : w.models) {
      auto& ms = models[m.name];
      ms.name = m.name;
      ++ms.workers;
    }
  }
  for (const auto& [name, depth] : in.queued) {
    auto& ms = models[name];
    ms.name = name;
    ms.queued = static_cast<std::uint32_t>(depth);
  }
  for (auto& [name, ms] : models) {
    ms.policy = PolicyKindName(in.options.ForModel(name).policy);
    status.models.push_back(std::move(ms));
  }
  return status;
}

std::string DescribeModels(const std::vector<protocol::ModelInfo>& models) {
  std::string list;
  for (const auto& m : models) {
    list += (list.empty() ? "" : ", ") + m.name + ":" + std::to_string(m.version) + " " +
            std::string(protocol::ModelStateName(m.state));
  }
  return list;
}

}  // namespace ember::router
