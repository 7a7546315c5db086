#include "worker/tokenizer_pool.h"

#include <algorithm>

#include "common/thread_name.h"

namespace ember::worker {

TokenizerPool::TokenizerPool(int threads) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      NameThisThread("ember-tokenize");
      Loop();
    });
  }
}

TokenizerPool::~TokenizerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int TokenizerPool::DefaultThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void TokenizerPool::Post(std::function<void()> task) {
  if (threads_.empty()) {
    task();
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void TokenizerPool::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and nothing left to run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace ember::worker
