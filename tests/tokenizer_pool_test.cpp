// worker/tokenizer_pool.h: every task exactly once, tasks from several threads, real
// parallelism, the queue run out at destruction, and the no-thread pool.
#include "worker/tokenizer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace ember::worker {
namespace {

using namespace std::chrono_literals;

// Counts finished tasks and waits (bounded) for a number of them.
class Done {
 public:
  void Add() {
    std::lock_guard lock(mu_);
    ++n_;
    cv_.notify_all();
  }
  bool WaitFor(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return n_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

TEST(TokenizerPool, EveryTaskRunsExactlyOnce) {
  TokenizerPool pool(3);
  std::vector<std::atomic<int>> calls(10'000);
  Done done;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    pool.Post([&, i] {
      ++calls[i];
      done.Add();
    });
  }
  ASSERT_TRUE(done.WaitFor(static_cast<int>(calls.size())));
  EXPECT_TRUE(std::ranges::all_of(calls, [](const auto& c) { return c == 1; }));
}

// Several models share the pool: tasks posted from several threads all run, once.
TEST(TokenizerPool, TasksFromSeveralThreadsAllRun) {
  TokenizerPool pool(2);
  constexpr int kPosters = 4, kEach = 2'000;
  std::vector<std::atomic<int>> calls(kPosters * kEach);
  Done done;
  std::vector<std::thread> posters;
  for (int r = 0; r < kPosters; ++r) {
    posters.emplace_back([&, r] {
      for (int i = 0; i < kEach; ++i) {
        pool.Post([&, k = static_cast<std::size_t>(r * kEach + i)] {
          ++calls[k];
          done.Add();
        });
      }
    });
  }
  for (auto& t : posters) t.join();
  ASSERT_TRUE(done.WaitFor(kPosters * kEach));
  EXPECT_TRUE(std::ranges::all_of(calls, [](const auto& n) { return n == 1; }));
}

// Slow tasks (a tokenizer on long texts) run side by side: with 4 threads, 10 tasks of 30 ms
// overlap (sleeping needs no core, so this holds on a 2-core machine too).
TEST(TokenizerPool, TasksRunInParallel) {
  TokenizerPool pool(4);
  std::atomic<int> running{0}, most{0};
  Done done;
  for (int i = 0; i < 10; ++i) {
    pool.Post([&] {
      const int now = ++running;
      int seen = most;
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(30ms);
      --running;
      done.Add();
    });
  }
  ASSERT_TRUE(done.WaitFor(10));
  EXPECT_GE(most.load(), 2);
}

// A ModelRunner counts on it: what was posted runs, even when the pool goes first.
TEST(TokenizerPool, DestructionRunsWhatIsQueued) {
  std::atomic<int> calls{0};
  {
    TokenizerPool pool(1);
    for (int i = 0; i < 100; ++i) {
      pool.Post([&] {
        std::this_thread::sleep_for(100us);
        ++calls;
      });
    }
  }
  EXPECT_EQ(calls.load(), 100);
}

TEST(TokenizerPool, WithoutThreadsTheCallerRunsEachTaskAtOnce) {
  TokenizerPool pool(0);
  EXPECT_EQ(pool.threads(), 0);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  for (int i = 0; i < 5; ++i) {
    pool.Post([&] {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      ++calls;
    });
    EXPECT_EQ(calls, i + 1);
  }
}

}  // namespace
}  // namespace ember::worker
