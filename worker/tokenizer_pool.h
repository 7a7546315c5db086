// A worker's tokenizer threads, shared by all its models: a ModelRunner's scheduler hands it
// the requests of an intake and waits, so that texts are tokenized on several cores at once
// (TEI runs one tokenizer worker per core). On one thread, tokenization caps a GPU worker far
// below what its GPU can embed (issue 24). Backend::Tokenize is thread-safe, which this needs.
#ifndef EMBER_WORKER_TOKENIZER_POOL_H_
#define EMBER_WORKER_TOKENIZER_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ember::worker {

class TokenizerPool {
 public:
  // `threads` helper threads; 0 makes Run work on the calling thread alone.
  explicit TokenizerPool(int threads);
  ~TokenizerPool();  // joins the threads; no Run may be in progress
  TokenizerPool(const TokenizerPool&) = delete;
  TokenizerPool& operator=(const TokenizerPool&) = delete;

  // Calls task(i) once for every i in [0, n), on the pool's threads and the calling thread,
  // and returns when every call has returned. `task` must not throw. Thread-safe: the Runs of
  // several models share the threads, oldest first.
  void Run(std::size_t n, const std::function<void(std::size_t)>& task);

  int threads() const { return static_cast<int>(threads_.size()); }

  // The default thread count: one per core, as TEI.
  static int DefaultThreads();

 private:
  // One Run's work. It lives on the Run's stack: Run returns only when no thread uses it.
  struct Work {
    const std::function<void(std::size_t)>* task;
    std::size_t n;
    std::size_t next = 0;  // the next index to hand out; guarded by mu_
    std::size_t done = 0;  // calls that returned; guarded by mu_
    int users = 0;         // threads working on it; guarded by mu_
  };
  // Takes indices of `work` until none are left; returns how many calls it made.
  std::size_t Drain(Work& work, std::unique_lock<std::mutex>& lock);
  void Loop();

  std::mutex mu_;
  std::condition_variable work_cv_;  // queue_ gained work, or stop_
  std::condition_variable done_cv_;  // some Work finished
  std::deque<Work*> queue_;          // Works with indices left; guarded by mu_
  bool stop_ = false;                // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_TOKENIZER_POOL_H_
