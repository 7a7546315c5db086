// The ember router: a broker between clients (frontend ROUTER socket) and
// workers (backend ROUTER socket), in the manner of the ZeroMQ guide's
// Majordomo broker, with many requests in flight per worker.
//
// One thread owns both sockets and all state. Each client request gets a
// router-wide id; the router remembers who asked and what, so it can answer
// the right client, resend the work if its worker dies, and time it out.
// Every accepted request gets exactly one reply: a result or a typed error.
#ifndef EMBER_ROUTER_ROUTER_H_
#define EMBER_ROUTER_ROUTER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/error_code.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "router/embedding_cache.h"
#include "router/metrics_server.h"
#include "router/policy.h"
#include "router/redis_tier.h"
#include "router/router_metrics.h"
#include "router/router_options.h"
#include "router/worker_health.h"
#include "router/worker_registry.h"
#include "router/zap_handler.h"

namespace ember::router {

class Router {
 public:
  explicit Router(RouterOptions options);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Serves until `stop` becomes true.
  void Run(const std::atomic<bool>& stop);

 private:
  struct Pending {
    std::string client;  // routing id of the client
    std::uint64_t client_request_id = 0;
    std::string model;
    std::uint32_t version = 0;
    std::string body;    // the request body, kept for re-dispatch
    std::string worker;  // routing id of the worker it went to; empty while queued
    Clock::time_point deadline;
    Clock::time_point sent_at;      // of the current attempt, for latency
    Clock::time_point accepted_at;  // for end-to-end latency
    int attempts = 0;
    // With the cache on: the texts the worker gets (their vectors are stored
    // when it answers) and the request's truncate flag, part of the key.
    std::vector<std::string> texts{};
    bool truncate = true;
    // A partial hit: one slot per input of the client's request, the cached
    // vector or empty for a text the worker computes. `body` then asks only
    // for the misses, each distinct text once, pinned to the version the hits
    // came from; miss_of[i] is the index in `texts` of slot i's text.
    std::vector<std::vector<float>> hits{};
    std::vector<std::uint32_t> miss_of{};
    // With the Redis tier: `texts` missed the in-memory cache and are being
    // looked up in Redis under version `cache_version` (at most
    // cache_redis_wait); `hits` then has one slot per input. Not dispatched
    // until the answer or the wait runs out.
    bool awaiting_redis = false;
    std::uint32_t cache_version = 0;
  };

  // A load or unload sent to some workers, answered to the client when the
  // last of them replies (or dies, or the deadline passes).
  struct PendingControl {
    std::string client;
    std::uint64_t client_request_id = 0;
    bool implicit_targets = false;  // the client named no workers
    protocol::ControlReply reply;
    std::set<std::string> waiting;  // workers yet to answer
    Clock::time_point deadline;
  };

  // Requests of one model waiting for a worker with credit, oldest first.
  struct ModelQueue {
    std::deque<std::uint64_t> ids;  // may hold ids already answered (skipped)
    std::unique_ptr<Policy> policy;
  };

  void HandleFrontend();
  void HandleBackend();
  void HandleRequest(const std::string& client, const protocol::Message& message);
  void HandleControl(const std::string& client, const protocol::Message& message);
  void SendStatus(const std::string& client, std::uint64_t request_id);
  // Forwards a load or unload to its workers.
  void StartControl(const std::string& client, std::uint64_t request_id,
                    protocol::ControlRequest control);
  // Records one worker's answer to control `id`; replies when all are in.
  void RecordControl(std::uint64_t id, protocol::ControlResult result);
  void ExpireControls(Clock::time_point now);
  void HandleRegistration(const std::string& worker, const protocol::Message& message);
  // After a worker's update: forgets versions no worker has any more, and
  // fails requests queued for them.
  void ForgetRemoved(const std::vector<protocol::ModelInfo>& before, Clock::time_point now);
  void HandleWorkerMessage(const std::string& worker, const protocol::Message& message);
  void HandleResult(WorkerState& worker, const protocol::Message& message);
  // Looks the request's texts up in the cache: answers it at once when all
  // hit (returns true), or fills p's cache fields and rewrites its body.
  // With the Redis tier, may instead start a lookup (p.awaiting_redis):
  // the caller then must not dispatch it yet.
  bool ServeFromCache(std::uint64_t id, Pending& p, protocol::EmbedRequest& request);
  // Answers `p` when every input has a cached vector (returns true), else
  // leaves the misses in p.texts and rewrites p.body to ask for them only.
  bool SettleCacheLookup(Pending& p, protocol::EmbedRequest& request, std::uint32_t version,
                         std::vector<std::vector<float>> hits, std::vector<std::string> misses,
                         std::vector<std::uint32_t> miss_of);
  // The Redis tier answered (values, one per p.texts) or the wait ran out
  // (null): merges what it found, then answers or dispatches request `id`.
  void ResumeAfterRedis(std::uint64_t id, std::vector<std::vector<float>>* values);
  void HandleRedisResults();
  void ExpireRedisWaits(Clock::time_point now);
  // A worker's REPLY to `p`: stores its vectors in the cache, merges cached
  // ones in, records metrics; returns the body to send the client, or an
  // empty string when the reply is unusable.
  std::string CompleteReply(const Pending& p, const std::string& body);
  // Counts an answered request (and its latency when ok) in the metrics.
  void CountOutcome(const std::string& model, std::string_view outcome,
                    Clock::time_point accepted_at);
  // Every ~250 ms: worker health, and the metrics text for MetricsServer.
  void PublishMetrics(Clock::time_point now);

  // Sends pending request `id` to a worker, queues it until one has credit,
  // or fails it with a typed error.
  void Dispatch(std::uint64_t id);
  // Sends queued requests of `model` while workers have credit.
  void DrainQueue(const std::string& model);
  void DrainQueues(std::vector<protocol::ModelInfo> models);
  ModelQueue& QueueFor(const std::string& model);
  // Whether requests for (model, version) may wait for a worker: some live
  // worker serves it, or one did within model_retention.
  bool Known(const std::string& model, std::uint32_t version, Clock::time_point now) const;
  void RememberModels(const WorkerState& worker, Clock::time_point now);
  // After the startup grace: fails queued requests for models nobody serves.
  void FailUnknownQueued(Clock::time_point now);
  // Forgets an answered request.
  void Forget(std::unordered_map<std::uint64_t, Pending>::iterator it);
  // Fails request `id` with a typed error and forgets it.
  void Fail(std::uint64_t id, ErrorCode code, const std::string& message);
  // Removes a worker and re-dispatches what it had in flight.
  void DropWorker(const std::string& id, const char* why);
  void Redispatch(const std::vector<std::uint64_t>& ids);

  void SendError(const std::string& client, std::uint64_t request_id, ErrorCode code,
                 const std::string& message);
  void HeartbeatWorkers(Clock::time_point now);
  void PurgeSilentWorkers(Clock::time_point now);
  void ExpireDeadlines(Clock::time_point now);

  RouterOptions options_;
  zmq::context_t context_;
  // With CURVE on: admits only allow-listed keys. Declared between the
  // context and the sockets: it must exist before they accept connections.
  std::unique_ptr<ZapHandler> zap_;
  zmq::socket_t frontend_;
  zmq::socket_t backend_;
  WorkerRegistry workers_;
  std::unordered_map<std::string, ModelQueue> queues_;
  // Last time each (model, version) had a live worker; version 0 = any.
  std::map<std::pair<std::string, std::uint32_t>, Clock::time_point> model_seen_;

  std::uint64_t next_id_ = 1;
  std::uint64_t requests_ = 0;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::map<std::uint64_t, PendingControl> controls_;  // by router id, shared with pending_
  std::unordered_map<std::string, std::size_t> client_in_flight_;  // by client routing id
  // (deadline, id) min-heap; entries of answered requests are skipped lazily.
  using DeadlineEntry = std::pair<Clock::time_point, std::uint64_t>;
  std::priority_queue<DeadlineEntry, std::vector<DeadlineEntry>, std::greater<>> deadlines_;
  Clock::time_point next_heartbeat_;
  Clock::time_point startup_grace_end_;  // Known() is lenient until then

  WorkerHealth health_;
  RouterMetrics metrics_;
  std::unique_ptr<EmbeddingCache> cache_;  // null when cache_bytes is 0
  std::unique_ptr<RedisTier> redis_;       // null when cache_redis is empty
  // (give up at, id) of requests awaiting Redis; one wait for all, so FIFO
  // order is deadline order.
  std::deque<std::pair<Clock::time_point, std::uint64_t>> redis_waits_;
  std::unique_ptr<MetricsServer> metrics_server_;  // null when metrics_listen is empty
  Clock::time_point next_metrics_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_ROUTER_H_
