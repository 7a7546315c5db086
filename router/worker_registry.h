// The router's table of live workers: what each serves, its load, and when it
// was last heard from. Owned and used by the router thread only.
#ifndef EMBER_ROUTER_WORKER_REGISTRY_H_
#define EMBER_ROUTER_WORKER_REGISTRY_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/messages.h"
#include "router/latency_tracker.h"

namespace ember::router {

using Clock = std::chrono::steady_clock;

// Router request ids sent to a worker, each with the texts it carries.
using InFlightMap = std::pmr::unordered_map<std::uint64_t, std::uint32_t>;

struct WorkerState {
  WorkerState() = default;
  // Its in_flight map allocates from `pool` (the registry's).
  explicit WorkerState(std::pmr::memory_resource* pool) : in_flight(pool) {}

  std::string id;  // the worker's ZeroMQ routing id
  std::string device;
  std::uint64_t session = 0;  // the worker process's READY session
  std::uint64_t rss_bytes = 0;
  std::vector<std::string> routers;  // the routers its READY says it is attached to
  // Its credit with this router, in texts (the unit of the worker's queue and batches;
  // docs/balancing.md "Credits").
  std::uint32_t capacity = 0;
  double weight = 1.0;  // for weighted round robin and adaptive
  std::vector<protocol::ModelInfo> models;
  // Router request ids sent to it and not answered (by it, or by its death), with their texts.
  // The registry builds each worker's map on its pool, so a dispatch costs no malloc; a
  // default-made WorkerState (tests) uses the heap. A request that times out in the router
  // keeps its credit here until the worker answers it: the worker still has it queued.
  InFlightMap in_flight;
  std::uint64_t in_flight_texts = 0;  // the sum of in_flight's texts: the credit in use
  // It answered OVERLOADED: its queue is fuller than this router's credit says (another
  // router's share, or a max-queue below its capacity). No requests until it answers one or
  // sends a heartbeat, so a full worker is not sent the same request again at wire speed.
  bool full = false;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  Clock::time_point last_seen;
  Clock::time_point registered;
  LatencyTracker latency;

  double error_rate() const {
    const auto total = completed + failed;
    return total == 0 ? 0.0 : static_cast<double>(failed) / static_cast<double>(total);
  }

  // Whether (model, version) is READY here: only those get requests.
  bool Serves(std::string_view model, std::uint32_t version) const;
  // Whether a request of `texts` texts fits its free credit. A request larger than the whole
  // credit goes to a worker with nothing in flight rather than wait for ever.
  bool HasCreditFor(std::uint32_t texts) const {
    return !full && (in_flight.empty() || in_flight_texts + texts <= capacity);
  }
  void Take(std::uint64_t request, std::uint32_t texts) {
    if (in_flight.try_emplace(request, texts).second) in_flight_texts += texts;
  }
  // Gives back the credit of `request`; false if it held none here.
  bool Release(std::uint64_t request) {
    const auto it = in_flight.find(request);
    if (it == in_flight.end()) return false;
    in_flight_texts -= it->second;
    in_flight.erase(it);
    return true;
  }
};

class WorkerRegistry {
 public:
  // Adds a worker, updates one whose models changed (READY with the same
  // session), or replaces the registration of one that restarted (a new
  // session). Returns the request ids a replaced registration still had in
  // flight: they will never be answered. So are those of an update whose READY
  // says what the worker holds (ReadyBody::holding, after a reconnect) that it
  // does not hold: their credit comes back here.
  std::vector<std::uint64_t> Register(const std::string& id, protocol::ReadyBody ready,
                                      Clock::time_point now);

  // Removes a worker; returns its in-flight request ids.
  std::vector<std::uint64_t> Remove(std::string_view id);

  WorkerState* Find(std::string_view id);

  // The version a request for (model, version) resolves to: `version` itself
  // if some worker has it READY, the highest READY version when `version` is
  // 0, or nullopt when no worker has it READY.
  std::optional<std::uint32_t> Resolve(std::string_view model, std::uint32_t version) const;

  // Workers serving (model, version), in a stable order (by id), into `out` (cleared first; a
  // caller that keeps it keeps its capacity, so the hot path allocates nothing).
  void Candidates(std::string_view model, std::uint32_t version, std::vector<WorkerState*>* out);

  // Ids of workers not heard from since `deadline`.
  std::vector<std::string> SilentSince(Clock::time_point deadline) const;

  const std::map<std::string, WorkerState, std::less<>>& workers() const { return workers_; }

 private:
  // Holds the nodes of every worker's in_flight map; declared first, so it outlives them.
  std::pmr::unsynchronized_pool_resource pool_;
  std::map<std::string, WorkerState, std::less<>> workers_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_WORKER_REGISTRY_H_
