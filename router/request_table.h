// The router's accepted requests: who asked for what, where each one is, and when it must be
// answered. Every request that enters the table leaves it exactly once, by Reply,
// ForwardError or Fail, and each of those sends the client its one answer. Leaving does not
// give back the worker credit a request holds: only the worker's answer or its death does
// (router.cpp HandleResult, WorkerRegistry::Remove), since a request that timed out here is
// still in the worker's queue. Owned by the router thread.
#ifndef EMBER_ROUTER_REQUEST_TABLE_H_
#define EMBER_ROUTER_REQUEST_TABLE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory_resource>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/error_code.h"
#include "router/cached_embedding.h"
#include "router/router_metrics.h"
#include "router/transport.h"

namespace ember::router {

using Clock = std::chrono::steady_clock;

struct PendingRequest {
  std::string client{};  // routing id of the client
  std::uint64_t client_request_id = 0;
  std::string model{};
  std::uint32_t version = 0;
  // Texts the worker is asked for (the request's, or the cache's misses): the credit it takes.
  std::uint32_t text_count = 1;
  // The request body as the client's frame: each dispatch sends a copy() of it, which shares
  // the bytes (docs/performance.md "The router's own cost").
  zmq::message_t body{};
  std::string worker{};  // routing id of the worker it went to; empty while queued
  // The second worker a hedge went to (router/dispatcher.h), while it holds it; the first of
  // the two to answer answers the client.
  std::string hedge_worker{};
  Clock::time_point hedge_sent_at{};  // when the hedge left
  Clock::time_point deadline{};
  bool deadline_armed = false;      // ArmDeadline was called (the deadline heap holds it)
  Clock::time_point sent_at{};      // of the current attempt, for latency
  Clock::time_point accepted_at{};  // for end-to-end latency
  int attempts = 0;
  // With the cache on (router/cache_front.h): the texts the worker gets (their vectors are
  // stored when it answers) and the request's truncate flag, dimensions and prompt name, part
  // of the key.
  std::vector<std::string> texts{};
  bool truncate = true;
  std::uint32_t dimensions = 0;
  std::string prompt_name{};
  // A partial hit (or repeated texts): one slot per input of the client's request, the cached
  // vector or empty for a text the worker computes. `body` then asks only for the distinct
  // misses, pinned to the version the hits came from; miss_of[i] is the index in `texts` of
  // slot i's text.
  std::vector<CachedEmbedding> hits{};
  std::vector<std::uint32_t> miss_of{};
  // With the Redis tier: `texts` missed the in-memory cache and are being looked up in Redis
  // under version `cache_version`; `hits` then has one slot per input. Not dispatched until
  // the answer comes or the wait runs out.
  bool awaiting_redis = false;
  std::uint32_t cache_version = 0;
};

class RequestTable {
 public:
  RequestTable(Transport& transport, RouterMetrics& metrics);

  // Router-wide ids, shared with control operations so worker answers can tell them apart.
  std::uint64_t NewId() { return next_id_++; }

  PendingRequest& Add(std::uint64_t id, PendingRequest request);
  PendingRequest* Find(std::uint64_t id);
  bool Contains(std::uint64_t id) const { return pending_.contains(id); }
  std::size_t size() const { return pending_.size(); }
  std::vector<std::uint64_t> Ids() const;
  // Requests of `client` in the table.
  std::size_t InFlight(const std::string& client) const;

  // Fails request `id` with TIMEOUT once `deadline` passes (ExpireDeadlines).
  void ArmDeadline(std::uint64_t id, Clock::time_point deadline);
  // Fails every request whose deadline passed at `now`.
  void ExpireDeadlines(Clock::time_point now);
  // Entries in the deadline heap, live or stale (at most twice the table, plus a slack).
  std::size_t deadline_entries() const { return deadlines_.size(); }

  // Answers request `id` with REPLY `body` and forgets it.
  void Reply(std::uint64_t id, zmq::message_t body, Clock::time_point now);
  // Passes a worker's ERROR `body` (of `code`) to the client and forgets the request.
  void ForwardError(std::uint64_t id, ErrorCode code, zmq::message_t body, Clock::time_point now);
  // Fails request `id` with a typed error and forgets it; nothing if it is not in the table.
  void Fail(std::uint64_t id, ErrorCode code, const std::string& message, Clock::time_point now);

  // Refuses a request that never entered the table.
  void Refuse(const std::string& client, std::uint64_t client_request_id, const std::string& model,
              ErrorCode code, const std::string& message, Clock::time_point accepted_at);
  // An ERROR to a client outside any request (malformed messages, control refusals).
  void SendError(const std::string& client, std::uint64_t client_request_id, ErrorCode code,
                 const std::string& message);

 private:
  using PendingMap = std::pmr::unordered_map<std::uint64_t, PendingRequest>;
  void Forget(PendingMap::iterator it);
  void CountOutcome(const std::string& model, std::string_view outcome,
                    Clock::time_point accepted_at, Clock::time_point now);
  void CompactDeadlines();  // rebuilds deadlines_ from the live requests

  Transport& transport_;
  RouterMetrics& metrics_;
  std::uint64_t next_id_ = 1;
  // The nodes of both per-request maps come from this pool and go back to it when a request
  // leaves, so a request in steady state costs no malloc (docs/performance.md "No allocation
  // per request"). It keeps what the busiest moment needed, until the router exits.
  std::pmr::unsynchronized_pool_resource pool_;
  PendingMap pending_{&pool_};
  std::pmr::unordered_map<std::string, std::size_t> client_in_flight_{&pool_};  // by routing id
  // (deadline, id) min-heap (std::push_heap with std::greater). An answered request's entry
  // stays until it comes due and is skipped then, so without CompactDeadlines the heap would
  // hold one entry per request of the last `timeout` (a 30 s default at 70k req/s: 2 million,
  // ~35 MB); rebuilding it from the table whenever stale entries outnumber live ones bounds it
  // by the requests in flight, at an amortised O(1) per request.
  using DeadlineEntry = std::pair<Clock::time_point, std::uint64_t>;
  std::vector<DeadlineEntry> deadlines_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_REQUEST_TABLE_H_
