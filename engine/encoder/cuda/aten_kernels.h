// The kernels of cuda_kernels.h on ATen tensors of the device, enqueued on its current stream:
// what the ATen forward on CUDA (encoder_model.cpp) calls in place of several ATen ops each.
// The decoders' three run there only with EncoderOptions::cuda_decoder_kernels (config.toml
// `cuda-decoder-kernels = true`): off by default until they have passed their CUDA tests
// (tests/cuda_kernels_test.cpp) on a GPU.
#ifndef EMBER_ENGINE_ENCODER_CUDA_ATEN_KERNELS_H_
#define EMBER_ENGINE_ENCODER_CUDA_ATEN_KERNELS_H_

#include <ATen/ATen.h>

#include <cstdint>

#include "engine/encoder/cpu/cpu_kernels.h"  // Activation
#include "engine/encoder/cuda/cuda_kernels.h"

namespace ember::engine::cuda {

// The kernels' dtype of float32, float16 and bfloat16; throws std::invalid_argument otherwise.
DType KernelType(at::ScalarType t);

// RMSNorm of each row of x [rows, n] (contiguous, CUDA) by gamma [n]: a new tensor.
at::Tensor RmsNormRows(const at::Tensor& x, const at::Tensor& gamma, double eps);

// In place on qkv [rows, width] (contiguous, CUDA), whose rows start with `q_heads` query heads
// then `kv_heads` key heads of head_dim: Qwen3's per-head norms (q_gamma, k_gamma [head_dim];
// undefined: none), then RoPE at positions (int32 [rows], CUDA) from cos and sin (float32
// [positions, head_dim / 2], CUDA; undefined: none).
void NormAndRotateHeads(at::Tensor& qkv, std::int64_t q_heads, std::int64_t kv_heads,
                        std::int64_t head_dim, const at::Tensor& q_gamma, const at::Tensor& k_gamma,
                        double eps, const at::Tensor& positions, const at::Tensor& cos,
                        const at::Tensor& sin);

// act(inner[:, :n]) * inner[:, n:] of inner [rows, 2n] (contiguous, CUDA): [rows, n].
at::Tensor GatedActivationRows(const at::Tensor& inner, Activation act);

}  // namespace ember::engine::cuda

#endif  // EMBER_ENGINE_ENCODER_CUDA_ATEN_KERNELS_H_
