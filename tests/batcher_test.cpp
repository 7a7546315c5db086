// Batch formation rules of worker/batcher.h, driven by a made-up clock.
#include "worker/batcher.h"

#include <gtest/gtest.h>

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
