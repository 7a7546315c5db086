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
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int TokenizerPool::DefaultThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::size_t TokenizerPool::Drain(Work& work, std::unique_lock<std::mutex>& lock) {
  // One index at a time under the lock: a task (tokenizing a request's texts) takes
  // microseconds or more, so the lock is never what a thread waits on for long.
  std::size_t calls = 0;
  while (work.next < work.n) {
    const std::size_t i = work.next++;
    if (work.next == work.n) std::erase(queue_, &work);  // nothing left to hand out
    lock.unlock();
    (*work.task)(i);
    ++calls;
    lock.lock();
  }
  return calls;
}

void TokenizerPool::Run(std::size_t n, const std::function<void(std::size_t)>& task) {
  if (n == 0) return;
  Work work{.task = &task, .n = n};
  std::unique_lock lock(mu_);
  if (!threads_.empty() && n > 1) {
    queue_.push_back(&work);
    work_cv_.notify_all();
  }
  ++work.users;
  work.done += Drain(work, lock);
  --work.users;
  if (work.done == work.n && work.users == 0) done_cv_.notify_all();
  done_cv_.wait(lock, [&] { return work.done == work.n && work.users == 0; });
}

void TokenizerPool::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and nothing left to help with
    Work& work = *queue_.front();
    ++work.users;
    work.done += Drain(work, lock);
    --work.users;
    if (work.done == work.n && work.users == 0) done_cv_.notify_all();
  }
}

}  // namespace ember::worker
