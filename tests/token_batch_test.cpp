// engine/token_batch.h (the one batch shape every backend runs) and engine/pooling.h (the one
// definition of pooling and normalisation), on the CPU.
#include "engine/token_batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/pooling.h"
#include "engine/scores.h"

namespace ember::engine {
namespace {

TEST(TokenBatch, PacksSequencesBackToBack) {
  const TokenBatch b = TokenBatch::Of({{101, 7, 102}, {5}, {1, 2, 3, 4, 5, 6}});
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b.tokens(), 10u);
  EXPECT_EQ(b.max_length(), 6u);
  EXPECT_EQ(b.ids(), (std::vector<int32_t>{101, 7, 102, 5, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b.offsets(), (std::vector<int32_t>{0, 3, 4, 10}));  // cu_seqlens
  EXPECT_EQ(b.length(1), 1u);
  EXPECT_EQ(std::vector<int32_t>(b.sequence(2).begin(), b.sequence(2).end()),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(TokenBatch, PositionsRestartForEverySequence) {
  const TokenBatch b = TokenBatch::Of({{101, 7, 102}, {5}, {1, 2, 3, 4}});
  std::vector<int32_t> positions(b.tokens(), -1);
  b.Positions(positions.data());
  EXPECT_EQ(positions, (std::vector<int32_t>{0, 1, 2, 0, 0, 1, 2, 3}));
}

TEST(TokenBatch, EmptyBatchAndEmptySequence) {
  TokenBatch b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.offsets(), std::vector<int32_t>{0});
  b.Add(std::vector<int32_t>{});  // kept: refusing it is the backend's job
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.length(0), 0u);
}

TEST(TokenBatch, PairsKeepWhereTheirSecondSegmentStarts) {
  TokenBatch b;
  b.Add(std::vector<int32_t>{101, 7, 102});
  EXPECT_FALSE(b.has_pairs());
  b.Add(std::vector<int32_t>{101, 7, 102, 8, 9, 102}, 3);
  EXPECT_TRUE(b.has_pairs());
  EXPECT_EQ(b.second_start(0), 0u);
  EXPECT_EQ(b.second_start(1), 3u);
}

TEST(Scores, SigmoidOfOneLogitSoftmaxOfSeveral) {
  std::vector<float> one = {0.0f};
  ActivateScores(one);
  EXPECT_FLOAT_EQ(one[0], 0.5f);
  one = {2.0f};
  ActivateScores(one);
  EXPECT_FLOAT_EQ(one[0], static_cast<float>(1 / (1 + std::exp(-2.0))));
  std::vector<float> three = {1000.0f, 1000.0f, -1000.0f};  // no overflow: shifted by the max
  ActivateScores(three);
  EXPECT_FLOAT_EQ(three[0], 0.5f);
  EXPECT_FLOAT_EQ(three[1], 0.5f);
  EXPECT_FLOAT_EQ(three[2], 0.0f);
}

TEST(Pooling, MeanClsAndNormalizeOverPackedRows) {
  // Two sequences of dim 2 packed back to back: rows 0-1 and row 2.
  const std::vector<float> rows = {1, 2, 3, 6, 3, 4};
  const std::vector<int64_t> starts = {0, 2}, lens = {2, 1};
  std::vector<float> out(4);
  PoolRows(rows.data(), 2, starts, lens, Pooling::kMean, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 4, 3, 4}));
  PoolRows(rows.data(), 2, starts, lens, Pooling::kCls, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4}));
  PoolRows(rows.data(), 2, starts, lens, Pooling::kMean, true, out.data());
  EXPECT_FLOAT_EQ(out[0], static_cast<float>(2 / std::sqrt(20.0)));
  EXPECT_FLOAT_EQ(out[3], 0.8f);
  // A zero vector stays zero (divided by kNormalizeEps, not by 0).
  const std::vector<float> zero = {0, 0};
  PoolRows(zero.data(), 2, std::vector<int64_t>{0}, std::vector<int64_t>{1}, Pooling::kMean, true,
           out.data());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
}

}  // namespace
}  // namespace ember::engine
