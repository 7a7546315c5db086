// The CUDA encoder's own kernels (engine/encoder/cuda/cuda_encoder.h): the element-wise passes
// that ATen would run as several ops with a round trip through GPU memory each. Each one has a
// CPU reference with the same contract, which tests/cuda_kernels_test.cpp holds it to:
//   EmbedLayerNorm  <- gather + AddLayerNorm (engine/encoder/cpu/cpu_kernels.h)
//   AddLayerNorm    <- AddLayerNorm (same file)
//   BiasActivation  <- BiasActivation (same file)
//   PoolRows        <- PoolRows (engine/pooling.h)
//   RmsNorm, RotateHalf, GatedActivation <- the same names in cpu_kernels.h: the decoders'
//                      RMSNorm (and Qwen3's per-head q/k norms), RoPE and SwiGLU, used by the
//                      ATen forward on CUDA only with EncoderOptions::cuda_decoder_kernels (off
//                      by default: not yet run on a GPU)
// Activations are in the compute dtype (float32, float16 or bfloat16); every kernel computes
// in float32 and reduces in float32 with a two-pass variance. Rows are one sequence's tokens
// packed back to back (engine/token_batch.h): no padding anywhere.
//
// Every function enqueues on `stream` and returns; a launch error throws std::runtime_error
// naming the kernel (errors of the kernel's execution surface at the next synchronisation).
// Pointers are device pointers. Free of LibTorch; compiled by nvcc for EMBER_CUDA_ARCHITECTURES.
#ifndef EMBER_ENGINE_ENCODER_CUDA_CUDA_KERNELS_H_
#define EMBER_ENGINE_ENCODER_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/encoder/cpu/cpu_kernels.h"  // Activation
#include "engine/pooling.h"                  // Pooling

namespace ember::engine::cuda {

enum class DType { kFloat32, kFloat16, kBFloat16 };

// How the LayerNorm kernels map rows to threads.
enum class RowLayout {
  // One 128/256-thread block per row, the row in shared memory; any width up to 12,288.
  kBlock,
  // One warp per row, the row in registers, 4 rows per block (widths up to 1024; wider rows
  // take kBlock). Fewer barriers and blocks. Both passed their CUDA tests on an H200
  // (2026-12-04); warp measured 1-4% faster there (one round) and is the encoder's default.
  kWarp,
};

// Embeddings: out[t] = LayerNorm(word[ids[t]] + pos[positions[t]] + type0) * gamma + beta for
// t in [0, tokens); rows of `hidden` elements. ids and positions: int32 [tokens], in range
// (the caller checks). word [vocab, hidden], pos [max_pos, hidden], type0, gamma, beta [hidden].
void EmbedLayerNorm(DType dtype, const std::int32_t* ids, const std::int32_t* positions,
                    std::int64_t tokens, std::int64_t hidden, const void* word, const void* pos,
                    const void* type0, const void* gamma, const void* beta, float eps, void* out,
                    cudaStream_t stream, RowLayout layout = RowLayout::kBlock);

// x [rows, n] in place: x[r] = LayerNorm(x[r] + y[r] + bias) * gamma + beta. y [rows, n] and
// bias [n] may be null. x and y must not overlap.
void AddLayerNorm(DType dtype, void* x, const void* y, const void* bias, const void* gamma,
                  const void* beta, std::int64_t rows, std::int64_t n, float eps,
                  cudaStream_t stream, RowLayout layout = RowLayout::kBlock);

// y [rows, n] in place: y[r][c] = act(y[r][c] + bias[c]).
void BiasActivation(DType dtype, void* y, std::int64_t rows, std::int64_t n, const void* bias,
                    Activation act, cudaStream_t stream);

// hidden [tokens, dim]; sequence i is rows [offsets[i], offsets[i+1]) (int32 [sequences + 1],
// each sequence non-empty). out: float32 [sequences, dim], pooled (kMean, kCls or kLastToken;
// kAuto is kMean) and, if normalize, divided by max(L2 norm, kNormalizeEps).
void PoolRows(DType dtype, const void* hidden, std::int64_t dim, const std::int32_t* offsets,
              std::int64_t sequences, Pooling pooling, bool normalize, float* out,
              cudaStream_t stream);

// RMSNorm of `groups` groups of n elements per row: group g of row r is x[r * ld + g * n, ...
// + n), written to the same place in out (out == x: in place), as gamma * x / sqrt(mean(x^2) +
// eps) with gamma float32 [n]. A decoder's norms: ld = n, one group; Qwen3's q norms: ld the qkv
// row, a group per query head of head_dim.
void RmsNorm(DType dtype, const void* x, void* out, std::int64_t ld, std::int64_t rows,
             std::int64_t groups, std::int64_t n, const float* gamma, float eps,
             cudaStream_t stream);

// RoPE in place ("rotate half", as cpu_kernels.h RotateHalf): row r of x (`ld` elements apart)
// holds `heads` heads of head_dim from its start and sits at positions[r] (int32 [rows]); cos
// and sin are float32 [positions x head_dim / 2] (rotary_embedding.h's tables).
void RotateHalf(DType dtype, void* x, std::int64_t ld, std::int64_t rows, std::int64_t heads,
                std::int64_t head_dim, const std::int32_t* positions, const float* cos,
                const float* sin, cudaStream_t stream);

// y [rows, 2n] -> out [rows, n]: out[r][c] = act(y[r][c]) * y[r][n + c] (SwiGLU with kSilu).
void GatedActivation(DType dtype, const void* y, std::int64_t rows, std::int64_t n, Activation act,
                     void* out, cudaStream_t stream);

}  // namespace ember::engine::cuda

#endif  // EMBER_ENGINE_ENCODER_CUDA_CUDA_KERNELS_H_
