// The ember worker's socket side: one DEALER per router it is given (worker/router_link.h), in
// the manner of the ZeroMQ guide's Paranoid Pirate worker, with many requests in flight.
//
// Several routers (--router A --router B) serve the same workers, so that losing one loses
// nothing: the worker registers with and heartbeats each, answers each request on the link it
// came by, and shares its capacity between the live links as credits, so that no router can
// over-commit it. The rule (docs/balancing.md "Credits across routers"): each live router is
// announced capacity / live routers; when a router joins or falls silent the worker announces
// the new shares on every link. Job and control ids are the worker's own (two routers may
// both send request 17) and are mapped back to each router's id on the way out. A version
// taken out of service is freed once every live router has acknowledged the READY that
// announced it.
//
// The thread that calls Run() owns the DEALERs, an inproc PULL socket on which the model
// runners push finished replies, and one on which the loader signals finished loads; it never
// runs or loads a model itself, so heartbeats flow while inference or a load is busy.
//
// Which versions exist, and the rules by which they load, serve, drain and go, are
// ModelLifecycle's (worker/model_lifecycle.h); this class carries out what it decides: runs
// loads on the AsyncLoader's thread, keeps one ModelRunner per serving version, and tells the
// routers. Models given by path (--model) load through the same path as repository ones: in
// the background, warmed up, while heartbeats flow.
#ifndef EMBER_WORKER_WORKER_H_
#define EMBER_WORKER_WORKER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/curve.h"
#include "common/protocol.h"
#include "engine/backend.h"
#include "worker/async_loader.h"
#include "worker/model_lifecycle.h"
#include "worker/model_repository.h"
#include "worker/model_runner.h"
#include "worker/router_link.h"

namespace ember::worker {

struct WorkerOptions {
  // Router backends to register with; each gets a share of `capacity`.
  std::vector<std::string> routers = {"tcp://127.0.0.1:5556"};
  std::string id;  // ZeroMQ routing id; must be unique in the cluster
  std::string device = "cpu";
  // Texts in flight (sent by routers, not yet answered), shared by the routers as credits: the
  // unit of the batcher's queue and batches, so that a model whose max-queue is at least this
  // never refuses a router's request as OVERLOADED (docs/balancing.md "Credits").
  std::uint32_t capacity = 4096;
  double weight = 1.0;  // relative speed announced to the router
  // Makes every batch take `slowdown` times as long (by sleeping), to emulate
  // slower hardware in balancing benchmarks and tests. 1 = off.
  double slowdown = 1.0;
  // Threads that tokenize for every model (TokenizerPool); 0: one per core.
  int tokenizer_threads = 0;
  // Batches each model runs at once (RunnerOptions); 0: Backend::batches_in_flight().
  int batches_in_flight = 0;
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;  // heartbeats the router may miss before we reconnect
  // How long a stopping worker answers the requests it holds before it leaves them to the
  // routers (Run).
  std::chrono::milliseconds shutdown_grace{10'000};
  curve::ClientKeys curve;  // CURVE keys (docs/security.md); empty: off
};

// Where the worker's models come from, and how they are opened.
struct ModelSource {
  std::unique_ptr<ModelRepository> repository;  // null: nothing can be loaded
  // (model, version) to load as soon as the worker runs.
  std::vector<std::pair<std::string, std::uint32_t>> startup;
  // Opens and warms a version (engine::LoadModel + WarmUp in ember-worker); a parameter so
  // that serving code stays free of the engine.
  AsyncLoader::LoadFn load;
};

class Worker {
 public:
  Worker(WorkerOptions options, ModelSource source);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until `stop` becomes true; then, for at most WorkerOptions::shutdown_grace,
  // refuses new requests (OVERLOADED, which routers send elsewhere) and answers those it
  // holds; then says DISCONNECT to every router, which send again what is left. The
  // destructor drops that rest uncomputed (ModelRunner::Abandon).
  void Run(const std::atomic<bool>& stop);

 private:
  using Clock = std::chrono::steady_clock;
  // Where a job or control came from: the link, and the id that router gave it.
  struct Origin {
    std::size_t link = 0;
    std::uint64_t id = 0;
  };

  // What every READY says at `now` but the capacity share: our models, memory and routers.
  protocol::ReadyBody ReadyNow(Clock::time_point now) const;
  // The first READY over a fresh connection of one link, with sequence number `seq`: our
  // models, that router's share, and the requests we hold for it (ReadyBody::holding).
  void SendReady(std::size_t link, std::uint64_t seq);
  void SendReady(std::size_t link, std::uint64_t seq, protocol::ReadyBody& ready,
                 Clock::time_point now);
  // READY on every link (a new state, or new capacity shares); stamps drains it announces.
  void AnnounceAll();
  std::uint32_t ShareFor(std::size_t link, Clock::time_point now) const;
  std::size_t LiveLinks(Clock::time_point now) const;
  // Passes on to the lifecycle what every live router has acknowledged.
  void UpdateAcked(Clock::time_point now);
  void HandleRouter(std::size_t link);
  void HandleRequest(std::size_t link, const protocol::Message& message);
  void HandleControl(std::size_t link, const protocol::Message& message);
  void FinishLoads();
  // Carries out what the lifecycle decided, in its order (model_lifecycle.h).
  void Apply(Effects effects);
  void ForwardResults();
  void SendError(const Origin& to, ErrorCode code, const std::string& message);
  void SendResult(std::uint64_t control_id, const protocol::ControlResult& result);

  WorkerOptions options_;
  const std::uint64_t session_;
  zmq::context_t context_;
  zmq::socket_t results_;                           // PULL, bound to an inproc endpoint
  zmq::socket_t loads_;                             // PULL: the loader's "load finished" cue
  std::vector<std::unique_ptr<RouterLink>> links_;  // one per router, in the order given
  std::unique_ptr<ModelRepository> repository_;
  std::vector<ModelKey> startup_;
  ModelLifecycle lifecycle_;
  // Shared by every runner (and kept alive by them while they drain).
  std::shared_ptr<TokenizerPool> tokenizers_;
  std::map<ModelKey, std::unique_ptr<ModelRunner>> runners_;  // serving and draining versions
  // A finished load, until the lifecycle says to serve (or drop) it.
  struct LoadedVersion {
    engine::Model model;
    BatcherOptions batcher;
  };
  std::map<ModelKey, LoadedVersion> loaded_;
  std::unordered_map<std::uint64_t, Origin> jobs_;      // our job id -> its request
  std::unordered_map<std::uint64_t, Origin> controls_;  // our control id -> its request
  std::uint64_t next_id_ = 0;                           // our job and control ids
  std::uint64_t ready_seq_ = 0;                         // the last READY sent, on any link
  std::size_t live_announced_ = 0;  // live links when shares were last announced
  bool stopping_ = false;           // Run's stop came: answering what we hold
  Clock::time_point leave_at_{};    // ... until then at the latest
  // Last: destroyed first, so no load finishes into a half-destroyed worker.
  std::unique_ptr<AsyncLoader> loader_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_WORKER_H_
