// MPNet's relative attention bias: every layer adds to the score of query i and key j a
// per-head value looked up by the bucket of their distance j - i (T5's bucketing, as HF's
// MPNetEncoder.relative_position_bucket: 32 buckets, half for each direction, exact below 8,
// logarithmic up to 128). Computed once at load for every distance a sequence of at most
// `span` tokens has, so that attention adds a contiguous row per query.
#ifndef EMBER_ENGINE_ENCODER_RELATIVE_ATTENTION_BIAS_H_
#define EMBER_ENGINE_ENCODER_RELATIVE_ATTENTION_BIAS_H_

#include <ATen/ATen.h>

#include <cstdint>

namespace ember::engine {

// The bucket of each distance -(span - 1) .. span - 1 (key minus query), int64 [2 * span - 1],
// with HF's ops in HF's order (float32 log and truncation), so that the buckets at the
// logarithmic part's edges are HF's.
at::Tensor RelativePositionBuckets(int64_t span);

// table [buckets, heads] (the checkpoint's relative_attention_bias) as float32 [heads,
// 2 * span - 1]: row h, column (j - i) + span - 1 is what head h adds to the score of query i
// and key j. Throws std::invalid_argument if the table has fewer than 32 rows.
at::Tensor RelativeAttentionBias(const at::Tensor& table, int64_t span);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_RELATIVE_ATTENTION_BIAS_H_
