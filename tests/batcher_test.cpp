// Batch formation rules of worker/batcher.h, driven by a made-up clock.
#include "worker/batcher.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "worker/model_repository.h"

namespace ember::worker {
namespace {

using namespace std::chrono_literals;

struct Opts {
  std::size_t size = 32;
  Clock::duration delay = 2ms;
  std::size_t tokens = 16384;
  std::vector<std::size_t> preferred = {};
  std::size_t queue = 4096;
};
BatcherOptions Options(const Opts& o) {
  BatcherOptions options;
  options.max_batch_size = o.size;
  options.max_queue_delay = std::chrono::duration_cast<std::chrono::microseconds>(o.delay);
  options.max_batch_tokens = o.tokens;
  options.preferred_batch_sizes = o.preferred;
  options.max_queue = o.queue;
  return options;
}

class BatcherTest : public ::testing::Test {
 protected:
  // One single-text request of `tokens` tokens arriving at t0_ + `at`.
  BatchItem Item(std::uint64_t request, std::size_t tokens, Clock::duration at = 0us,
                 Clock::duration ttl = 1h) {
    return {request, 0, tokens, t0_ + at, t0_ + at + ttl};
  }
  static std::vector<std::uint64_t> Requests(const std::vector<BatchItem>& batch) {
    std::vector<std::uint64_t> out;
    for (const auto& b : batch) out.push_back(b.request);
    return out;
  }
  const Clock::time_point t0_ = Clock::time_point() + 1h;
};

TEST_F(BatcherTest, WaitsForDelayThenSendsWhatItHas) {
  Batcher b(Options({.size = 8, .delay = 2ms}));
  ASSERT_TRUE(b.Add({Item(1, 10), Item(2, 10, 500us)}));
  Clock::time_point wake;
  EXPECT_FALSE(b.Next(t0_ + 1ms, &wake));
  EXPECT_EQ(wake, t0_ + 2ms) << "wakes when the oldest text has waited max_queue_delay";
  auto batch = b.Next(t0_ + 2ms, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(Requests(*batch), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(b.size(), 0u);
  EXPECT_FALSE(b.Next(t0_ + 3ms, &wake));
  EXPECT_EQ(wake, Clock::time_point::max());
}

TEST_F(BatcherTest, FullBatchLeavesAtOnce) {
  Batcher b(Options({.size = 4, .delay = 1s}));
  for (std::uint64_t r = 1; r <= 6; ++r) ASSERT_TRUE(b.Add({Item(r, 10)}));
  Clock::time_point wake;
  auto batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(Requests(*batch), (std::vector<std::uint64_t>{1, 2, 3, 4})) << "oldest first";
  EXPECT_FALSE(b.Next(t0_, &wake)) << "two left: not full, not late";
}

TEST_F(BatcherTest, PreferredSizeLeavesAtOnceWithLargestPreferred) {
  Batcher b(Options({.size = 32, .delay = 1s, .preferred = {4, 8}}));
  for (std::uint64_t r = 1; r <= 6; ++r) ASSERT_TRUE(b.Add({Item(r, 10)}));
  Clock::time_point wake;
  auto batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 4u);
}

TEST_F(BatcherTest, TokenBudgetCapsPaddedTokens) {
  // Budget 100 padded tokens: four 20-token texts fit (80), a fifth does not.
  Batcher b(Options({.size = 32, .delay = 0us, .tokens = 100}));
  for (std::uint64_t r = 1; r <= 6; ++r) ASSERT_TRUE(b.Add({Item(r, 20)}));
  Clock::time_point wake;
  auto batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 5u);  // 5 x 20 = 100 fits exactly
  batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 1u);
}

TEST_F(BatcherTest, OversizedTextRunsAloneInsteadOfLooping) {
  // A text longer than the whole budget still runs (TEI's max-batch-tokens
  // smaller than the model's max length must not spin forever).
  Batcher b(Options({.size = 8, .delay = 0us, .tokens = 64}));
  ASSERT_TRUE(b.Add({Item(1, 300), Item(2, 10)}));
  Clock::time_point wake;
  auto batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(Requests(*batch), (std::vector<std::uint64_t>{1}));
  batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(Requests(*batch), (std::vector<std::uint64_t>{2}));
}

TEST_F(BatcherTest, FillsWithTextsOfSimilarLength) {
  // Oldest is 100 tokens; among 10, 95, 110, 12, 105 the batch of 3 takes the
  // nearest lengths, so short texts are not padded to 110.
  Batcher b(Options({.size = 3, .delay = 0us}));
  ASSERT_TRUE(b.Add({Item(1, 100)}));
  ASSERT_TRUE(b.Add({Item(2, 10, 1us)}));
  ASSERT_TRUE(b.Add({Item(3, 95, 2us)}));
  ASSERT_TRUE(b.Add({Item(4, 110, 3us)}));
  ASSERT_TRUE(b.Add({Item(5, 12, 4us)}));
  ASSERT_TRUE(b.Add({Item(6, 105, 5us)}));
  Clock::time_point wake;
  auto batch = b.Next(t0_, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(Requests(*batch), (std::vector<std::uint64_t>{1, 3, 6})) << "arrival order kept";
  batch = b.Next(t0_ + 1ms, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(Requests(*batch), (std::vector<std::uint64_t>{2, 4, 5}));
}

TEST_F(BatcherTest, OldestTextIsNeverStarved) {
  // A stream of short texts keeps arriving; the one long text still goes in
  // the next batch because it is the oldest.
  Batcher b(Options({.size = 4, .delay = 0us}));
  ASSERT_TRUE(b.Add({Item(1, 200)}));
  for (std::uint64_t r = 2; r <= 9; ++r) ASSERT_TRUE(b.Add({Item(r, 5, 1us)}));
  Clock::time_point wake;
  auto batch = b.Next(t0_ + 1ms, &wake);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->front().request, 1u);
}

TEST_F(BatcherTest, BoundedQueueRefusesWholeRequests) {
  Batcher b(Options({.queue = 4}));
  EXPECT_TRUE(b.Add({Item(1, 5), Item(1, 5), Item(1, 5)}));
  EXPECT_FALSE(b.Add({Item(2, 5), Item(2, 5)})) << "all of a request's texts, or none";
  EXPECT_EQ(b.size(), 3u);
  EXPECT_TRUE(b.Add({Item(3, 5)}));
  EXPECT_FALSE(b.Add({Item(4, 5)}));
}

TEST_F(BatcherTest, ExpiredTextsAreTakenOut) {
  Batcher b(Options({.delay = 1s}));
  ASSERT_TRUE(b.Add({Item(1, 5, 0us, 10ms), Item(2, 5, 0us, 50ms)}));
  EXPECT_TRUE(b.TakeExpired(t0_ + 5ms).empty());
  const auto expired = b.TakeExpired(t0_ + 10ms);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].request, 1u);
  EXPECT_EQ(b.size(), 1u);
}

TEST_F(BatcherTest, RemoveDropsEveryTextOfARequest) {
  Batcher b(Options({}));
  ASSERT_TRUE(b.Add({Item(1, 5), Item(1, 6)}));
  ASSERT_TRUE(b.Add({Item(2, 5)}));
  EXPECT_EQ(b.Remove(1), 2u);
  EXPECT_EQ(b.size(), 1u);
}

TEST_F(BatcherTest, FullByTextsOrByTokens) {
  Batcher texts(Options({.size = 3}));
  ASSERT_TRUE(texts.Add({Item(1, 5), Item(2, 5)}));
  EXPECT_FALSE(texts.Full());
  ASSERT_TRUE(texts.Add({Item(3, 5)}));
  EXPECT_TRUE(texts.Full());
  Batcher tokens(Options({.tokens = 100}));
  ASSERT_TRUE(tokens.Add({Item(1, 10), Item(2, 40)}));
  EXPECT_FALSE(tokens.Full()) << "2 x 40 padded tokens of 100";
  ASSERT_TRUE(tokens.Add({Item(3, 20)}));
  EXPECT_TRUE(tokens.Full()) << "3 x 40 padded tokens";
}

// The indexes behind the batcher (by arrival, length, deadline and request) agree under a
// random mix of adds, batches, expiries and removals: every text leaves exactly once, each
// batch holds the oldest text and keeps to its limits, and size() is what is left.
TEST_F(BatcherTest, RandomMixLosesAndRepeatsNothing) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  Batcher b(Options({.size = 16, .delay = 1ms, .tokens = 600, .queue = 500}));
  std::map<std::pair<std::uint64_t, std::uint32_t>, int> seen;  // (request, index) -> times out
  std::set<std::pair<std::uint64_t, std::uint32_t>> queued;
  auto leave = [&](const BatchItem& item) {
    ++seen[{item.request, item.index}];
    queued.erase({item.request, item.index});
  };
  Clock::time_point now = t0_;
  std::uint64_t next_request = 1;
  for (int step = 0; step < 5000; ++step) {
    now += std::chrono::microseconds(rng() % 300);
    switch (rng() % 5) {
      case 0:
      case 1: {  // a request of 1-8 texts, some with deadlines
        const std::uint64_t request = next_request++;
        const auto texts = 1 + rng() % 8;
        const auto ttl =
            rng() % 3 == 0 ? std::chrono::microseconds(rng() % 5000) : std::chrono::hours(1);
        std::vector<BatchItem> items;
        for (std::uint32_t i = 0; i < texts; ++i) {
          items.push_back({request, i, 1 + rng() % 120, now, now + ttl});
        }
        if (b.Add(items)) {
          for (const auto& item : items) queued.insert({item.request, item.index});
        }
        break;
      }
      case 2: {
        Clock::time_point wake;
        const std::optional<std::uint64_t> oldest =
            queued.empty() ? std::nullopt : std::optional(queued.begin()->first);
        if (auto batch = b.Next(now, &wake)) {
          ASSERT_FALSE(batch->empty());
          ASSERT_LE(batch->size(), 16u);
          std::size_t longest = 0;
          for (const auto& item : *batch) longest = std::max(longest, item.tokens);
          if (batch->size() > 1) {
            EXPECT_LE(batch->size() * longest, 600u);
          }
          // Request ids grow with arrival, so the oldest text's request is the smallest queued.
          EXPECT_EQ(batch->front().request, *oldest) << "the oldest text is in the batch";
          for (const auto& item : *batch) leave(item);
        }
        break;
      }
      case 3:
        for (const auto& item : b.TakeExpired(now)) {
          EXPECT_LE(item.deadline, now);
          leave(item);
        }
        break;
      case 4:
        if (!queued.empty()) {
          const std::uint64_t request = queued.begin()->first + rng() % 4;
          std::size_t expected = 0;
          for (auto it = queued.lower_bound({request, 0});
               it != queued.end() && it->first == request;) {
            ++seen[*it];
            it = queued.erase(it);
            ++expected;
          }
          EXPECT_EQ(b.Remove(request), expected);
        }
        break;
    }
    ASSERT_EQ(b.size(), queued.size()) << "at step " << step;
  }
  for (const auto& item : b.Take()) leave(item);
  while (b.size() > 0) {
    for (const auto& item : b.Take()) leave(item);
  }
  EXPECT_TRUE(queued.empty());
  for (const auto& [text, times] : seen) ASSERT_EQ(times, 1) << "request " << text.first;
}

// max-batch-size and max-batch-tokens 0 pick by device; on a GPU nothing but the token
// budget caps a batch (a cap of 32 texts left an H200 half idle: issue 24).
TEST(BatcherDefaults, ZeroPicksByDevice) {
  BatcherOptions gpu;
  gpu.max_batch_size = 0;
  gpu.max_batch_tokens = 0;
  BatcherOptions cpu = gpu;
  ResolveByDevice("cuda:1", &gpu);
  EXPECT_EQ(gpu.max_batch_size, kGpuBatchTexts);
  EXPECT_EQ(gpu.max_batch_tokens, kGpuBatchTokens);
  ResolveByDevice("cpu", &cpu);
  EXPECT_EQ(cpu.max_batch_size, 32u);
  EXPECT_EQ(cpu.max_batch_tokens, 512u);
  BatcherOptions set;
  set.max_batch_size = 7;
  set.max_batch_tokens = 99;
  ResolveByDevice("cuda", &set);
  EXPECT_EQ(set.max_batch_size, 7u) << "what the user set stays";
  EXPECT_EQ(set.max_batch_tokens, 99u);
}

}  // namespace
}  // namespace ember::worker
