// Loads model versions on a thread of its own, one at a time, so the
// worker's socket thread keeps serving and heartbeating while a large model
// reads from disk and warms up (a load that blocked it for longer than the
// router's liveness would get the whole worker declared dead).
//
// One at a time because loads compete for memory: two big versions loading
// together could exhaust it where one after the other fits.
#ifndef EMBER_WORKER_ASYNC_LOADER_H_
#define EMBER_WORKER_ASYNC_LOADER_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/error_code.h"
#include "engine/model.h"
#include "worker/model_repository.h"

namespace ember::worker {

struct LoadResult {
  ModelSpec spec;
  engine::Model model;  // its backend null when the load failed
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
  std::chrono::milliseconds took{0};
};

class AsyncLoader {
 public:
  // Opens and warms a version (its tokenizer and backend); throws on failure.
  using LoadFn = std::function<engine::Model(const ModelSpec&)>;

  // After each load the thread pushes one empty message to `wake_endpoint`
  // (an inproc endpoint in `context`, bound by the caller): the cue to call
  // TakeDone().
  AsyncLoader(zmq::context_t& context, std::string wake_endpoint, LoadFn load);
  ~AsyncLoader();  // finishes the load in progress, drops queued ones
  AsyncLoader(const AsyncLoader&) = delete;
  AsyncLoader& operator=(const AsyncLoader&) = delete;

  void Start(ModelSpec spec);
  std::vector<LoadResult> TakeDone();

 private:
  void Loop(zmq::context_t& context, const std::string& endpoint);

  const LoadFn load_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ModelSpec> queue_;   // guarded by mu_
  std::vector<LoadResult> done_;  // guarded by mu_
  bool stop_ = false;             // guarded by mu_
  std::thread thread_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_ASYNC_LOADER_H_
