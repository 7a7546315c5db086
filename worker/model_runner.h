// Runs one model version on a thread of its own.
//
// The socket thread hands it jobs (Submit never blocks on inference); the
// runner's thread takes every job waiting, up to max_batch_texts texts, runs
// them as one batch and pushes each job's reply, already encoded as protocol
// frames, to the worker's inproc results socket. A job whose batch fails is
// retried alone, so one bad input cannot fail its neighbours.
#ifndef EMBER_WORKER_MODEL_RUNNER_H_
#define EMBER_WORKER_MODEL_RUNNER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/messages.h"
#include "worker/backend.h"

namespace ember::worker {

struct Job {
  std::uint64_t request_id = 0;
  protocol::EmbedRequest request;
};

class ModelRunner {
 public:
  // `results_endpoint` is an inproc endpoint in `context` bound by the caller.
  ModelRunner(std::string worker_id, protocol::ModelInfo info, std::unique_ptr<Backend> backend,
              zmq::context_t& context, std::string results_endpoint, std::size_t max_batch_texts,
              double slowdown = 1.0);
  ~ModelRunner();  // runs the jobs already queued, then joins the thread
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  const protocol::ModelInfo& info() const { return info_; }

  // Queues a job. Thread-safe.
  void Submit(Job job);

 private:
  void Loop(zmq::context_t& context, const std::string& results_endpoint);
  std::vector<Job> TakeBatch();
  void RunBatch(std::vector<Job>& jobs, zmq::socket_t& results);
  void Reply(const Job& job, std::span<const float> vectors, zmq::socket_t& results);

  const std::string worker_id_;
  const protocol::ModelInfo info_;
  const std::unique_ptr<Backend> backend_;
  const std::size_t max_batch_texts_;
  const double slowdown_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // guarded by mu_
  bool stop_ = false;      // guarded by mu_
  std::thread thread_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_MODEL_RUNNER_H_
