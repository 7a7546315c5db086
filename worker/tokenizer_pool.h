// A worker's tokenizer threads, shared by all its models: a ModelRunner posts each request it
// is handed here, and the task that tokenizes it also queues its texts for batching, so texts
// are tokenized on several cores at once (TEI runs one tokenizer worker per core) and no
// scheduler ever waits for a tokenizer. On one thread, or on the scheduler's, tokenization caps
// a GPU worker far below what its GPU can embed (issue 24). A model's Tokenizer is thread-safe
// (engine/tokenizer/tokenizer.h), which this needs. The queue is bounded by its callers: a
// ModelRunner posts a request only once it is admitted, its texts counted against the model's
// max-queue while they are tokenized (ModelRunner::Submit), so at most the sum of the models'
// max-queue texts wait here, and one model's flood is refused rather than queued.
#ifndef EMBER_WORKER_TOKENIZER_POOL_H_
#define EMBER_WORKER_TOKENIZER_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ember::worker {

class TokenizerPool {
 public:
  // `threads` threads; 0 makes Post run each task on the calling thread, before it returns.
  explicit TokenizerPool(int threads);
  ~TokenizerPool();  // runs every task still queued, then joins the threads
  TokenizerPool(const TokenizerPool&) = delete;
  TokenizerPool& operator=(const TokenizerPool&) = delete;

  // Queues `task` to run once on one of the pool's threads, oldest first. `task` must not
  // throw. Thread-safe: the models of a worker share the threads.
  void Post(std::function<void()> task);

  int threads() const { return static_cast<int>(threads_.size()); }

  // The default thread count: one per core, as TEI.
  static int DefaultThreads();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;               // queue_ gained a task, or stop_
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_TOKENIZER_POOL_H_
