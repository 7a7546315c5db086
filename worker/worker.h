// The ember worker's socket side: a DEALER connected to the router's backend,
// in the manner of the ZeroMQ guide's Paranoid Pirate worker, but with many
// requests in flight (up to `capacity`, which the router enforces).
//
// The thread that calls Run() owns the DEALER socket, an inproc PULL socket on
// which the model runners push finished replies, and one on which the loader
// signals finished loads; it never runs or loads a model itself, so
// heartbeats flow while inference or a load is busy.
//
// Which versions exist, and the rules by which they load, serve, drain and go, are
// ModelLifecycle's (worker/model_lifecycle.h); this class carries out what it decides: runs
// loads on the AsyncLoader's thread, keeps one ModelRunner per serving version, and tells the
// router. Models given by path (--model) load through the same path as repository ones: in
// the background, warmed up, while heartbeats flow.
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
#include "engine/backend.h"
#include "worker/async_loader.h"
#include "worker/model_lifecycle.h"
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

// Where the worker's models come from, and how they are opened.
struct ModelSource {
  std::unique_ptr<ModelRepository> repository;  // null: nothing can be loaded
  // (model, version) to load as soon as the worker runs.
  std::vector<std::pair<std::string, std::uint32_t>> startup;
  // Opens and warms a version (engine::LoadBackend + WarmUp in ember-worker); a parameter so
  // that serving code stays free of the engine.
  AsyncLoader::LoadFn load;
};

class Worker {
 public:
  Worker(WorkerOptions options, ModelSource source);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Serves until `stop` becomes true, then says DISCONNECT to the router.
  void Run(const std::atomic<bool>& stop);

 private:
  void Connect();
  void SendReady();
  void HandleRouter();
  void HandleRequest(const protocol::Message& message);
  void HandleControl(const protocol::Message& message);
  void FinishLoads();
  // Carries out what the lifecycle decided, in its order (model_lifecycle.h).
  void Apply(Effects effects);
  void ForwardResults();
  void SendError(std::uint64_t request_id, ErrorCode code, const std::string& message);
  void SendResult(std::uint64_t control_id, const protocol::ControlResult& result);

  WorkerOptions options_;
  const std::uint64_t session_;
  zmq::context_t context_;
  zmq::socket_t results_;                  // PULL, bound to an inproc endpoint
  zmq::socket_t loads_;                    // PULL: the loader's "load finished" cue
  std::unique_ptr<zmq::socket_t> router_;  // DEALER; replaced on reconnect
  std::unique_ptr<ModelRepository> repository_;
  std::vector<ModelKey> startup_;
  ModelLifecycle lifecycle_;
  std::map<ModelKey, std::unique_ptr<ModelRunner>> runners_;  // serving and draining versions
  // A finished load, until the lifecycle says to serve (or drop) it.
  struct LoadedVersion {
    std::unique_ptr<engine::Backend> backend;
    BatcherOptions batcher;
  };
  std::map<ModelKey, LoadedVersion> loaded_;
  std::uint64_t ready_seq_ = 0;  // request id of the last READY sent
  std::chrono::steady_clock::time_point router_seen_;
  std::chrono::milliseconds reconnect_delay_;
  // Last: destroyed first, so no load finishes into a half-destroyed worker.
  std::unique_ptr<AsyncLoader> loader_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_WORKER_H_
