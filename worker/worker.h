// The ember worker's socket side: a DEALER connected to the router's backend,
// in the manner of the ZeroMQ guide's Paranoid Pirate worker, but with many
// requests in flight (up to `capacity`, which the router enforces).
//
// The thread that calls Run() owns the DEALER socket, an inproc PULL socket on
// which the model runners push finished replies, and one on which the loader
// signals finished loads; it never runs or loads a model itself, so
// heartbeats flow while inference or a load is busy.
//
// Model versions live in slots: LOADING (on the loader thread), READY
// (receiving requests), UNLOADING (draining), FAILED (kept to show why). A
// hot swap loads version N+1 beside N; when N+1 is warm it becomes READY and
// N UNLOADING in one READY update to the router, so new requests go to N+1
// at once. N is freed only when the router has acknowledged that update
// (nothing more can arrive for N) and its last request is answered.
#ifndef EMBER_WORKER_WORKER_H_
#define EMBER_WORKER_WORKER_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/curve.h"
#include "common/protocol.h"
#include "worker/async_loader.h"
#include "worker/backend.h"
#include "worker/model_repository.h"
#include "worker/model_runner.h"

namespace ember::worker {

struct WorkerOptions {
  std::string router = "tcp://127.0.0.1:5556";
  std::string id;  // ZeroMQ routing id; must be unique in the cluster
  std::string device = "cpu";
  std::uint32_t capacity = 256;  // requests in flight the router may send
  double weight = 1.0;           // relative speed announced to the router
  // Makes every batch take `slowdown` times as long (by sleeping), to emulate
  // slower hardware in balancing benchmarks and tests. 1 = off.
  double slowdown = 1.0;
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;         // heartbeats the router may miss before we reconnect
  curve::ClientKeys curve;  // CURVE keys (docs/security.md); empty: off
};

struct LoadedModel {
  protocol::ModelInfo info;  // dim is filled in from the backend
  std::unique_ptr<Backend> backend;
  BatcherOptions batcher;
};

// Where load commands find models, and how they are opened.
struct RepositorySource {
  std::unique_ptr<ModelRepository> repository;
  // (model, version) to load as soon as the worker runs.
  std::vector<std::pair<std::string, std::uint32_t>> startup;
  // Opens and warms a version (LoadBackend + WarmUp in ember-worker); a
  // parameter so this file stays free of the LibTorch backends.
  AsyncLoader::LoadFn load;
};

class Worker {
 public:
  // Serves `models` (already loaded) and, when `source.repository` is set,
  // what load commands ask of it.
  Worker(WorkerOptions options, std::vector<LoadedModel> models, RepositorySource source = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until `stop` becomes true, then says DISCONNECT to the router.
  void Run(const std::atomic<bool>& stop);

 private:
  using Key = std::pair<std::string, std::uint32_t>;  // (model, version)
  struct Slot {
    protocol::ModelInfo info;
    std::unique_ptr<ModelRunner> runner;        // set once READY
    std::vector<std::uint64_t> load_waiters;    // control ids answered when the load ends
    std::vector<std::uint64_t> unload_waiters;  // ... when the slot is freed
    std::uint64_t unload_seq = 0;               // the READY update that announced UNLOADING
    std::chrono::steady_clock::time_point unloading_since;
  };
  // An unload of several versions is answered when the last one is freed.
  struct UnloadReply {
    std::size_t remaining = 0;
    protocol::ControlResult result;
  };

  void Connect();
  void SendReady();
  void HandleRouter();
  void HandleRequest(const protocol::Message& message);
  void HandleControl(const protocol::Message& message);
  void Load(const std::string& model, std::uint32_t version, std::uint64_t control_id);
  void Unload(const std::string& model, std::uint32_t version, std::uint64_t control_id);
  void FinishLoads();
  // Starts unloading versions of `model` beyond its policy's limit, keeping
  // `keep_first` and then the newest. Returns whether any slot changed (the
  // caller then sends READY).
  bool Retire(const std::string& model, std::uint32_t keep_first);
  // Takes a draining slot back into service, failing unloads that wait on it.
  void CancelUnload(Slot& slot);
  // Frees UNLOADING slots the router can no longer send to and that are idle.
  void FreeDrained(std::chrono::steady_clock::time_point now);
  void ForwardResults();
  void SendError(std::uint64_t request_id, ErrorCode code, const std::string& message);
  void SendResult(std::uint64_t control_id, const protocol::ControlResult& result);
  ModelRunner* FindRunner(const std::string& model, std::uint32_t version);

  WorkerOptions options_;
  const std::uint64_t session_;
  zmq::context_t context_;
  zmq::socket_t results_;                  // PULL, bound to an inproc endpoint
  zmq::socket_t loads_;                    // PULL: the loader's "load finished" cue
  std::unique_ptr<zmq::socket_t> router_;  // DEALER; replaced on reconnect
  std::unique_ptr<ModelRepository> repository_;
  std::vector<Key> startup_;
  std::map<Key, Slot> slots_;
  std::map<std::uint64_t, UnloadReply> unload_replies_;  // by control id
  std::uint64_t ready_seq_ = 0;                          // request id of the last READY sent
  std::uint64_t ready_acked_ = 0;                        // highest READY the router acknowledged
  std::chrono::steady_clock::time_point router_seen_;
  std::chrono::milliseconds reconnect_delay_;
  // Last: destroyed first, so no load finishes into a half-destroyed worker.
  std::unique_ptr<AsyncLoader> loader_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_WORKER_H_
