#include "engine/encoder/cuda/varlen_attention.h"

#include <optional>
#include <stdexcept>
#include <tuple>

namespace ember::engine::cuda {

at::Tensor VarlenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& cu_seqlens, int64_t max_len, AttentionMask mask) {
  if (q.scalar_type() == at::kFloat) {
    if (mask.window > 0) {
      throw std::invalid_argument("VarlenAttention: a sliding window needs float16 or bfloat16");
    }
    // The memory-efficient kernel takes the packed stream as one "batch" of [1, tokens, heads,
    // head_dim] and as many key heads as query heads: grouped ones are repeated for it.
    const int64_t groups = q.size(1) / k.size(1);
    const auto heads = [&](const at::Tensor& t) {
      return (groups == 1 ? t : t.repeat_interleave(groups, 1)).unsqueeze(0);
    };
    // custom_mask_type 1: causal from the top left of each sequence's block (its query and key
    // spans are one).
    auto out = at::_efficient_attention_forward(
        q.unsqueeze(0), heads(k), heads(v), /*bias=*/std::nullopt, cu_seqlens, cu_seqlens, max_len,
        max_len, /*dropout_p=*/0.0, /*custom_mask_type=*/mask.causal ? 1 : 0,
        /*compute_log_sumexp=*/false, /*scale=*/1.0);
    return std::get<0>(out).squeeze(0);
  }
  // Flash attention reads grouped keys and values as they are, and counts the causal mask and
  // the window from each sequence's own start.
  std::optional<int64_t> left, right;
  if (mask.window > 0) {
    left = mask.window;
    right = mask.causal ? 0 : mask.window;
  }
  auto out = at::_flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, max_len, max_len,
                                          /*dropout_p=*/0.0, /*is_causal=*/mask.causal,
                                          /*return_debug_mask=*/false, /*scale=*/1.0, left, right);
  return std::get<0>(out);
}

}  // namespace ember::engine::cuda
