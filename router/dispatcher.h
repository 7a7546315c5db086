// Sends accepted requests to workers: picks one that serves the model and has credit for the
// request's texts (by the model's balancing Policy), or queues the request in its model's
// bounded queue until credit frees up, or fails it with a typed error (OVERLOADED when the
// queue is full, UNAVAILABLE after max_attempts workers failed it). The bound sheds new
// requests only: one already admitted (bounced by a full worker, orphaned by a dead one, or
// taken from the queue) waits whatever the queue holds, so a client never hears OVERLOADED for
// the workers' doing. A worker that answers OVERLOADED does not fail the request: it goes back
// to the front of the queue.
//
// Hedging: a request a worker has held longer than its model's hedge time (hedge-after-p99 x
// the p99 of the model's last replies, at least hedge-min-ms) is sent once more, to another
// worker with free credit; whichever answers first answers the client, the other answer is
// dropped as late. So a worker that is stopped, dying or cut off costs its requests about the
// hedge time instead of the heartbeats' liveness (issue 36's chaos soak). A hedge takes credit
// like any request, never waits in the queue and does not count as an attempt. Owned by the router
// thread; requests live in the RequestTable, workers in the WorkerRegistry, and bytes go out
// through the Transport.
#ifndef EMBER_ROUTER_DISPATCHER_H_
#define EMBER_ROUTER_DISPATCHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/messages.h"
#include "router/latency_tracker.h"
#include "router/policy.h"
#include "router/request_table.h"
#include "router/router_options.h"
#include "router/send_order.h"
#include "router/transport.h"
#include "router/worker_registry.h"

namespace ember::router {

class Dispatcher {
 public:
  enum class Outcome { kSent, kQueued, kFailed };
  // Whether the queue's bound may refuse the request: only a new one is shed.
  enum class Admission { kNew, kAdmitted };

  // `unreachable(worker)` is called when a send to `worker` fails: the router drops it
  // (and re-dispatches what it had) before Dispatch tries the next worker.
  Dispatcher(const RouterOptions& options, WorkerRegistry& workers, RequestTable& requests,
             Transport& transport, std::function<void(const std::string&)> unreachable);

  // Sends request `id` to a worker, queues it, or fails it (and then forgets it).
  Outcome Dispatch(std::uint64_t id, Clock::time_point now, Admission admission = Admission::kNew);
  // Sends queued requests of `model` while workers have credit, oldest first.
  void DrainQueue(const std::string& model, Clock::time_point now);
  // Drains the queues of each model in `models` (which may belong to a worker that draining
  // drops: the names are copied first).
  void DrainQueues(const std::vector<protocol::ModelInfo>& models, Clock::time_point now);
  // `worker` answered request `id` with OVERLOADED: marks it full (WorkerState::full) and puts
  // the request back at the front of its model's queue (the queue's bound does not apply: it
  // was accepted), not counting the attempt. The caller drains the queues afterwards.
  void WorkerFull(WorkerState& worker, std::uint64_t id);
  // Sends again requests whose worker `from` is gone (embedding is idempotent); one whose
  // hedge is still out is left to the hedge.
  void Redispatch(const std::vector<std::uint64_t>& ids, const std::string& from,
                  Clock::time_point now);
  // Sends a hedge for every request held past its model's hedge time (see above).
  void Hedge(Clock::time_point now);
  // A worker answered a request for `model` `latency` after it was sent: the model's hedge time
  // follows its replies.
  void Answered(const std::string& model, std::chrono::microseconds latency);
  // Hedges sent so far.
  std::uint64_t hedges() const { return hedges_; }
  // Fails the queued requests for which `known(model, version)` is false with UNKNOWN_MODEL.
  void FailQueued(const std::function<bool(const std::string&, std::uint32_t)>& known,
                  Clock::time_point now);

  // Requests waiting per model (answered ones are not counted).
  std::map<std::string, std::size_t> QueueDepths() const;

 private:
  // Requests of one model waiting for a worker with credit, oldest first.
  struct ModelQueue {
    std::deque<std::uint64_t> ids;  // may hold ids already answered (skipped)
    std::unique_ptr<Policy> policy;
    SendOrder sent;         // requests sent to a worker, to hedge when they are due
    LatencyWindow latency;  // of the model's replies: its hedge time
    // The hedge time, from `latency` when last worked out (at most every 10 ms: Hedge runs on
    // every turn of the router's loop).
    Clock::duration hedge_after{};
    std::optional<Clock::time_point> hedge_after_at;
  };
  ModelQueue& QueueFor(const std::string& model);
  // Sends request `id` (held by p.worker) to another worker with credit; false if none has.
  bool SendHedge(std::uint64_t id, PendingRequest& p, Policy& policy, Clock::time_point now);

  const RouterOptions& options_;
  WorkerRegistry& workers_;
  RequestTable& requests_;
  Transport& transport_;
  const std::function<void(const std::string&)> unreachable_;
  std::unordered_map<std::string, ModelQueue> queues_;
  std::vector<WorkerState*> candidates_;  // Dispatch's scratch
  std::uint64_t hedges_ = 0;
};

// "no worker serves model 'm' version 2": the UNKNOWN_MODEL message for (model, version).
std::string UnknownModelMessage(const std::string& model, std::uint32_t version);

}  // namespace ember::router

#endif  // EMBER_ROUTER_DISPATCHER_H_
