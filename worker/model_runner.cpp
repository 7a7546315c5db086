#include "worker/model_runner.h"

#include <spdlog/spdlog.h>

#include <zmq_addon.hpp>

#include "common/error_code.h"
#include "common/protocol.h"

namespace ember::worker {
namespace {

void SendError(zmq::socket_t& results, std::uint64_t request_id, ErrorCode code,
               const std::string& message) {
  zmq::send_multipart(results,
                      protocol::Encode(protocol::Command::kError, request_id,
                                       protocol::Encode(protocol::ErrorBody{code, message})));
}

}  // namespace

ModelRunner::ModelRunner(std::string worker_id, protocol::ModelInfo info,
                         std::unique_ptr<Backend> backend, zmq::context_t& context,
                         std::string results_endpoint, std::size_t max_batch_texts, double slowdown)
    : worker_id_(std::move(worker_id)),
      info_(std::move(info)),
      backend_(std::move(backend)),
      max_batch_texts_(std::max<std::size_t>(max_batch_texts, 1)),
      slowdown_(std::max(slowdown, 1.0)) {
  thread_ = std::thread(
      [this, &context, endpoint = std::move(results_endpoint)] { Loop(context, endpoint); });
}

ModelRunner::~ModelRunner() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ModelRunner::Submit(Job job) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

std::vector<Job> ModelRunner::TakeBatch() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
  std::vector<Job> batch;
  std::size_t texts = 0;
  // Greedy: everything waiting, up to the text budget (always at least one
  // job, so a request larger than the budget still runs). Jobs share a batch
  // only if they agree on truncation, which the backend applies per batch.
  while (!queue_.empty() &&
         (batch.empty() || (texts + queue_.front().request.inputs.size() <= max_batch_texts_ &&
                            queue_.front().request.truncate == batch.front().request.truncate))) {
    texts += queue_.front().request.inputs.size();
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return batch;
}

void ModelRunner::Loop(zmq::context_t& context, const std::string& results_endpoint) {
  zmq::socket_t results(context, zmq::socket_type::push);
  results.set(zmq::sockopt::linger, 0);
  results.connect(results_endpoint);
  for (;;) {
    std::vector<Job> batch = TakeBatch();
    if (batch.empty()) return;  // stopping and drained
    RunBatch(batch, results);
  }
}

void ModelRunner::RunBatch(std::vector<Job>& jobs, zmq::socket_t& results) {
  std::vector<std::string> texts;
  for (auto& job : jobs) {
    for (auto& t : job.request.inputs) texts.push_back(std::move(t));
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<float> vectors = backend_->Embed(texts, jobs.front().request.truncate);
    const auto took = std::chrono::steady_clock::now() - start;
    spdlog::debug("model {}: {} texts in {} us", info_.name, texts.size(),
                  std::chrono::duration_cast<std::chrono::microseconds>(took).count());
    if (slowdown_ > 1.0) std::this_thread::sleep_for(took * (slowdown_ - 1.0));
    const std::size_t dim = static_cast<std::size_t>(backend_->dim());
    std::size_t row = 0;
    for (const auto& job : jobs) {
      const std::size_t n = job.request.inputs.size();
      Reply(job, std::span(vectors).subspan(row * dim, n * dim), results);
      row += n;
    }
    return;
  } catch (const std::exception& e) {
    if (jobs.size() == 1) {
      const auto* typed = dynamic_cast<const Error*>(&e);
      const ErrorCode code = typed ? typed->code() : ErrorCode::kInternal;
      if (!typed) spdlog::error("model {} failed: {}", info_.name, e.what());
      SendError(results, jobs.front().request_id, code, e.what());
      return;
    }
  }
  // Some input in the batch failed: give each job its own answer. The texts
  // were moved out above, so put each job's back first.
  std::size_t next = 0;
  for (auto& job : jobs) {
    for (auto& t : job.request.inputs) t = std::move(texts[next++]);
    std::vector<Job> single;
    single.push_back(std::move(job));
    RunBatch(single, results);
  }
}

void ModelRunner::Reply(const Job& job, std::span<const float> vectors, zmq::socket_t& results) {
  protocol::EmbedReply reply;
  reply.model = info_.name;
  reply.version = info_.version;
  reply.worker = worker_id_;
  reply.dim = info_.dim;
  reply.count = static_cast<std::uint32_t>(job.request.inputs.size());
  reply.data.assign(vectors.begin(), vectors.end());
  zmq::send_multipart(results, protocol::Encode(protocol::Command::kReply, job.request_id,
                                                protocol::Encode(reply)));
}

}  // namespace ember::worker
