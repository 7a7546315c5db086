#include "router/dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

namespace ember::router {

std::string UnknownModelMessage(const std::string& model, std::uint32_t version) {
  std::string what = "no worker serves model '" + model + "'";
  if (version != 0) what += " version " + std::to_string(version);
  return what;
}

namespace {

// The time left until the router answers TIMEOUT, rounded up to whole milliseconds and at least
// 1 (protocol.h frame 4; 0: no deadline armed). A request past its deadline is answered before
// it could be sent, so at least 1 ms is never a lie by more than the rounding.
std::chrono::milliseconds Budget(const PendingRequest& p, Clock::time_point now) {
  if (!p.deadline_armed) return std::chrono::milliseconds(0);
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(p.deadline - now);
  return std::clamp(left, std::chrono::milliseconds(1),
                    std::chrono::milliseconds(std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

Dispatcher::Dispatcher(const RouterOptions& options, WorkerRegistry& workers,
                       RequestTable& requests, Transport& transport,
                       std::function<void(const std::string&)> unreachable)
    : options_(options),
      workers_(workers),
      requests_(requests),
      transport_(transport),
      unreachable_(std::move(unreachable)) {}

Dispatcher::ModelQueue& Dispatcher::QueueFor(const std::string& model) {
  ModelQueue& q = queues_[model];
  if (!q.policy) q.policy = MakePolicy(options_.ForModel(model).policy);
  return q;
}

Dispatcher::Outcome Dispatcher::Dispatch(std::uint64_t id, Clock::time_point now,
                                         Admission admission) {
  for (;;) {
    // Looked up again on every try: dropping an unreachable worker may re-dispatch (and so
    // re-hash) other requests.
    PendingRequest* p = requests_.Find(id);
    if (p == nullptr) return Outcome::kFailed;
    ModelQueue& queue = QueueFor(p->model);
    if (p->attempts >= options_.max_attempts) {
      requests_.Fail(id, ErrorCode::kUnavailable,
                     "request failed on " + std::to_string(p->attempts) + " workers", now);
      return Outcome::kFailed;
    }
    // A member, so its capacity stays: a dispatch allocates nothing. A nested Dispatch (via
    // unreachable_ below) refills it, but this loop reads it only before that call.
    std::vector<WorkerState*>& candidates = candidates_;
    candidates.clear();
    if (const auto version = workers_.Resolve(p->model, p->version)) {
      workers_.Candidates(p->model, *version, &candidates);
    }
    const std::uint32_t texts = p->text_count;
    std::erase_if(candidates, [texts](const WorkerState* w) { return !w->HasCreditFor(texts); });
    if (candidates.empty()) {
      // Every worker is busy (or none is up right now): wait in the model's queue, bounded
      // for new requests, until credit frees up or the deadline passes.
      const std::size_t limit = options_.ForModel(p->model).max_queue;
      if (admission == Admission::kNew && queue.ids.size() >= limit) {
        std::erase_if(queue.ids, [this](std::uint64_t q) { return !requests_.Contains(q); });
      }
      if (admission == Admission::kNew && queue.ids.size() >= limit) {
        requests_.Fail(id, ErrorCode::kOverloaded,
                       "queue for model '" + p->model + "' is full (" + std::to_string(limit) +
                           " requests waiting); retry later",
                       now);
        return Outcome::kFailed;
      }
      queue.ids.push_back(id);
      spdlog::debug("request {} for {} queued ({} waiting)", id, p->model, queue.ids.size());
      return Outcome::kQueued;
    }
    WorkerState* worker = queue.policy->Choose(p->model, candidates, now);
    ++p->attempts;
    zmq::message_t body;
    body.copy(p->body);  // shares the client's bytes; p keeps them for a re-dispatch
    if (transport_.RequestToWorker(worker->id, id, std::move(body), Budget(*p, now))) {
      p->worker = worker->id;
      p->sent_at = now;
      worker->Take(id, texts);
      if (options_.ForModel(p->model).hedge_after_p99 > 0) queue.sent.push({now, id});
      spdlog::debug("request {} for {} sent to '{}' ({} in flight there)", id, p->model, worker->id,
                    worker->in_flight.size());
      return Outcome::kSent;
    }
    // The worker vanished (or its queue is full): take it out and try another.
    const std::string gone = worker->id;
    unreachable_(gone);
  }
}

void Dispatcher::DrainQueue(const std::string& model, Clock::time_point now) {
  auto it = queues_.find(model);
  if (it == queues_.end()) return;
  std::deque<std::uint64_t>& ids = it->second.ids;
  while (!ids.empty()) {
    const std::uint64_t id = ids.front();
    ids.pop_front();
    if (!requests_.Contains(id)) continue;  // answered (timed out) while queued
    // Queued again means no worker had credit after all: back to the front, to keep FIFO
    // order, and stop.
    if (Dispatch(id, now, Admission::kAdmitted) == Outcome::kQueued) {
      if (!ids.empty() && ids.back() == id) ids.pop_back();
      ids.push_front(id);
      return;
    }
  }
}

void Dispatcher::DrainQueues(const std::vector<protocol::ModelInfo>& models,
                             Clock::time_point now) {
  // Draining may drop the worker `models` belongs to: first copy the names of the queues with
  // anything waiting (usually none, and then nothing is copied).
  std::vector<std::string> waiting;
  for (const auto& m : models) {
    if (auto it = queues_.find(m.name); it != queues_.end() && !it->second.ids.empty()) {
      waiting.push_back(m.name);
    }
  }
  for (const auto& model : waiting) DrainQueue(model, now);
}

void Dispatcher::WorkerFull(WorkerState& worker, std::uint64_t id) {
  worker.full = true;
  PendingRequest* p = requests_.Find(id);
  if (p == nullptr) return;
  if (p->hedge_worker == worker.id) {  // the hedge was refused: the first worker still has it
    p->hedge_worker.clear();
    return;
  }
  if (p->worker != worker.id) return;
  if (!p->hedge_worker.empty()) {  // the hedge carries it on
    p->worker = std::exchange(p->hedge_worker, {});
    return;
  }
  p->worker.clear();
  --p->attempts;  // the worker did not fail it
  QueueFor(p->model).ids.push_front(id);
  spdlog::debug("request {} for {} back in the queue: worker '{}' is full", id, p->model,
                worker.id);
}

void Dispatcher::Redispatch(const std::vector<std::uint64_t>& ids, const std::string& from,
                            Clock::time_point now) {
  for (std::uint64_t id : ids) {
    PendingRequest* p = requests_.Find(id);
    if (p == nullptr) continue;
    if (p->hedge_worker == from) {  // the hedge died: the first worker still has it
      p->hedge_worker.clear();
      continue;
    }
    if (p->worker != from) continue;  // queued, or sent elsewhere meanwhile
    if (!p->hedge_worker.empty()) {   // the hedge carries it on
      p->worker = std::exchange(p->hedge_worker, {});
      continue;
    }
    p->worker.clear();
    Dispatch(id, now, Admission::kAdmitted);
  }
}

void Dispatcher::Answered(const std::string& model, std::chrono::microseconds latency) {
  if (auto it = queues_.find(model); it != queues_.end()) {
    it->second.latency.Record(std::chrono::duration<double, std::milli>(latency).count());
  }
}

void Dispatcher::Hedge(Clock::time_point now) {
  for (auto& [model, queue] : queues_) {
    if (queue.sent.empty()) continue;
    if (!queue.hedge_after_at || now < *queue.hedge_after_at ||
        now - *queue.hedge_after_at >= std::chrono::milliseconds(10)) {
      const ModelOptions& options = options_.ForModel(model);
      const auto p99 = std::chrono::duration<double, std::milli>(options.hedge_after_p99 *
                                                                 queue.latency.PercentileMs(0.99));
      queue.hedge_after = std::max<Clock::duration>(
          options.hedge_min, std::chrono::duration_cast<Clock::duration>(p99));
      queue.hedge_after_at = now;
    }
    const Clock::duration after = queue.hedge_after;
    while (!queue.sent.empty() && queue.sent.front().sent + after <= now) {
      const SendOrder::Entry due = queue.sent.front();
      queue.sent.pop();
      PendingRequest* p = requests_.Find(due.id);
      // Answered, queued again, sent again since (its own entry), or hedged already.
      if (p == nullptr || p->worker.empty() || p->sent_at != due.sent || !p->hedge_worker.empty()) {
        continue;
      }
      SendHedge(due.id, *p, *queue.policy, now);
    }
  }
}

bool Dispatcher::SendHedge(std::uint64_t id, PendingRequest& p, Policy& policy,
                           Clock::time_point now) {
  std::vector<WorkerState*>& candidates = candidates_;
  candidates.clear();
  if (const auto version = workers_.Resolve(p.model, p.version)) {
    workers_.Candidates(p.model, *version, &candidates);
  }
  const std::uint32_t texts = p.text_count;
  std::erase_if(candidates,
                [&](const WorkerState* w) { return w->id == p.worker || !w->HasCreditFor(texts); });
  if (candidates.empty()) return false;
  WorkerState* worker = policy.Choose(p.model, candidates, now);
  zmq::message_t body;
  body.copy(p.body);
  // A failed send is left alone: heartbeats tell whether that worker is gone.
  if (!transport_.RequestToWorker(worker->id, id, std::move(body), Budget(p, now))) return false;
  p.hedge_worker = worker->id;
  p.hedge_sent_at = now;
  worker->Take(id, texts);
  ++hedges_;
  spdlog::debug(
      "request {} for {} hedged: '{}' held it {} ms; sent to '{}' too", id, p.model, p.worker,
      std::chrono::duration_cast<std::chrono::milliseconds>(now - p.sent_at).count(), worker->id);
  return true;
}

void Dispatcher::FailQueued(const std::function<bool(const std::string&, std::uint32_t)>& known,
                            Clock::time_point now) {
  for (auto& [model, queue] : queues_) {
    for (std::uint64_t id : queue.ids) {
      const PendingRequest* p = requests_.Find(id);
      if (p == nullptr || known(model, p->version)) continue;
      requests_.Fail(id, ErrorCode::kUnknownModel, UnknownModelMessage(model, p->version), now);
    }
  }
}

std::map<std::string, std::size_t> Dispatcher::QueueDepths() const {
  std::map<std::string, std::size_t> depths;
  for (const auto& [name, q] : queues_) {
    depths[name] = static_cast<std::size_t>(std::count_if(
        q.ids.begin(), q.ids.end(), [this](std::uint64_t id) { return requests_.Contains(id); }));
  }
  return depths;
}

}  // namespace ember::router
