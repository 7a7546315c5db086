#include "engine/encoder/relative_attention_bias.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ember::engine {
namespace {

// HF's MPNetEncoder.compute_position_bias always passes num_buckets=32 and max_distance=128,
// whatever relative_attention_num_buckets the config has (that only sizes the table).
constexpr int64_t kBuckets = 32;
constexpr int64_t kMaxDistance = 128;

}  // namespace

at::Tensor RelativePositionBuckets(int64_t span) {
  // relative_position = memory - context; HF buckets n = -relative_position.
  const at::Tensor relative = at::arange(-(span - 1), span, at::kLong);
  at::Tensor n = relative.neg();
  const int64_t half = kBuckets / 2;
  at::Tensor bucket = n.lt(0).to(at::kLong) * half;
  n = n.abs();
  const int64_t max_exact = half / 2;
  const at::Tensor is_small = n.lt(max_exact);
  at::Tensor large =
      (n.to(at::kFloat) / max_exact)
          .log()
          .div(std::log(static_cast<double>(kMaxDistance) / static_cast<double>(max_exact)))
          .mul(half - max_exact)
          .to(at::kLong)
          .add(max_exact);
  large = at::minimum(large, at::full_like(large, half - 1));
  return bucket + at::where(is_small, n, large);
}

at::Tensor RelativeAttentionBias(const at::Tensor& table, int64_t span) {
  if (table.dim() != 2 || table.size(0) < kBuckets) {
    throw std::invalid_argument("the relative attention bias table needs " +
                                std::to_string(kBuckets) + " rows, has " +
                                std::to_string(table.dim() == 2 ? table.size(0) : 0));
  }
  return table.to(at::kFloat).index_select(0, RelativePositionBuckets(span)).t().contiguous();
}

}  // namespace ember::engine
