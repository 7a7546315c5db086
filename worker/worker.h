// The ember worker's socket side: a DEALER connected to the router's backend,
// in the manner of the ZeroMQ guide's Paranoid Pirate worker, but with many
// requests in flight (up to `capacity`, which the router enforces).
//
// The thread that calls Run() owns the DEALER socket and an inproc PULL
// socket on which the model runners push finished replies; it never runs a
// model itself, so heartbeats flow while inference is busy.
#ifndef EMBER_WORKER_WORKER_H_
#define EMBER_WORKER_WORKER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/protocol.h"
#include "worker/backend.h"
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
  int liveness = 3;  // heartbeats the router may miss before we reconnect
};

struct LoadedModel {
  protocol::ModelInfo info;  // dim is filled in from the backend
  std::unique_ptr<Backend> backend;
  BatcherOptions batcher;
};

class Worker {
 public:
  Worker(WorkerOptions options, std::vector<LoadedModel> models);
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
  void ForwardResults();
  void SendError(std::uint64_t request_id, ErrorCode code, const std::string& message);
  ModelRunner* FindRunner(const std::string& model, std::uint32_t version);

  WorkerOptions options_;
  zmq::context_t context_;
  zmq::socket_t results_;                  // PULL, bound to an inproc endpoint
  std::unique_ptr<zmq::socket_t> router_;  // DEALER; replaced on reconnect
  std::vector<std::unique_ptr<ModelRunner>> runners_;
  std::chrono::steady_clock::time_point router_seen_;
  std::chrono::milliseconds reconnect_delay_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_WORKER_H_
