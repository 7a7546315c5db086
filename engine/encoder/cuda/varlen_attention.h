// Self-attention over a packed token stream (engine/token_batch.h), each sequence attending only
// to its own tokens: LibTorch's variable-length flash attention kernel for float16 / bfloat16,
// its memory-efficient (CUTLASS) one for float32, which flash has no kernel for. Neither ever
// materialises the scores. Shared by the CUDA encoder (cuda_encoder.h) and decoder
// (cuda_decoder.h).
#ifndef EMBER_ENGINE_ENCODER_CUDA_VARLEN_ATTENTION_H_
#define EMBER_ENGINE_ENCODER_CUDA_VARLEN_ATTENTION_H_

#include <ATen/ATen.h>

#include <cstdint>

namespace ember::engine::cuda {

// Which keys a query sees besides its own sequence's bound.
struct AttentionMask {
  bool causal = false;  // only itself and the tokens before it
  // > 0: only keys at most `window` positions from the query (with causal: before it).
  // float16 / bfloat16 only; float32 throws std::invalid_argument.
  int64_t window = 0;
};

// q [tokens, heads, head_dim], k and v [tokens, kv_heads, head_dim] (kv_heads divides heads:
// grouped-query attention; views of a QKV GEMM's output with the last dimension contiguous are
// fine), q pre-scaled (the kernels' scale is 1); cu_seqlens int32 [sequences + 1] on the device,
// max_len the longest sequence. Returns the context [tokens, heads, head_dim] in q's dtype.
at::Tensor VarlenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& cu_seqlens, int64_t max_len, AttentionMask mask = {});

}  // namespace ember::engine::cuda

#endif  // EMBER_ENGINE_ENCODER_CUDA_VARLEN_ATTENTION_H_
