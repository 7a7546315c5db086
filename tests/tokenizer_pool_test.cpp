// worker/tokenizer_pool.h: every index exactly once, concurrent Runs, real parallelism, and
// the no-thread pool.
#include "worker/tokenizer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace ember::worker {
namespace {

using namespace std::chrono_literals;

TEST(TokenizerPool, EveryIndexRunsExactlyOnce) {
  TokenizerPool pool(3);
  std::vector<std::atomic<int>> calls(10'000);
  pool.Run(calls.size(), [&](std::size_t i) { ++calls[i]; });
  EXPECT_TRUE(std::ranges::all_of(calls, [](const auto& c) { return c == 1; }));
  pool.Run(0, [](std::size_t) { ADD_FAILURE() << "no work, no call"; });
}

// Several models' schedulers share the pool: their Runs overlap and each gets all its work.
TEST(TokenizerPool, ConcurrentRunsEachCompleteTheirOwn) {
  TokenizerPool pool(2);
  constexpr int kRunners = 4;
  std::vector<std::vector<std::atomic<int>>> calls(kRunners);
  for (auto& c : calls) c = std::vector<std::atomic<int>>(2'000);
  std::vector<std::thread> runners;
  for (int r = 0; r < kRunners; ++r) {
    runners.emplace_back([&, r] {
      for (int round = 0; round < 20; ++round) {
        pool.Run(100,
                 [&](std::size_t i) { ++calls[r][static_cast<std::size_t>(round) * 100 + i]; });
      }
    });
  }
  for (auto& t : runners) t.join();
  for (const auto& c : calls) {
    EXPECT_TRUE(std::ranges::all_of(c, [](const auto& n) { return n == 1; }));
  }
}

// Slow tasks (a tokenizer on long texts) run side by side: with 4 threads and the caller, 10
// tasks of 30 ms overlap (sleeping needs no core, so this holds on a 2-core machine too).
TEST(TokenizerPool, TasksRunInParallel) {
  TokenizerPool pool(4);
  std::atomic<int> running{0}, most{0};
  pool.Run(10, [&](std::size_t) {
    const int now = ++running;
    int seen = most;
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(30ms);
    --running;
  });
  EXPECT_GE(most.load(), 2);
}

TEST(TokenizerPool, WithoutThreadsTheCallerDoesEverything) {
  TokenizerPool pool(0);
  EXPECT_EQ(pool.threads(), 0);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  pool.Run(5, [&](std::size_t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++calls;
  });
  EXPECT_EQ(calls, 5);
}

}  // namespace
}  // namespace ember::worker
