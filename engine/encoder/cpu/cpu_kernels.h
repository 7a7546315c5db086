// Float32 element-wise kernels of the fused CPU encoder (engine/encoder/cpu/cpu_encoder.h): the
// passes that ONNX Runtime fuses and LibTorch 1.13 runs as separate ops (bias + GELU, bias +
// residual + LayerNorm). Each is one pass over rows that are still in cache after the GEMM that
// produced them, with no allocation.
//
// Plain loops that the compiler vectorises; the .cpp builds each for x86-64-v4 (AVX-512),
// x86-64-v3 (AVX2 + FMA) and baseline x86-64 and picks one at load time (target_clones), so
// one binary runs everywhere and uses the widest vectors the CPU has. No LibTorch here.
#pragma once

#include <cstdint>

namespace ember::engine {

// A BERT config's hidden_act.
enum class Activation {
  kGeluErf,   // "gelu": x * (1 + erf(x / sqrt 2)) / 2
  kGeluTanh,  // "gelu_new" / "gelu_pytorch_tanh" / "gelu_fast": the tanh approximation
  kRelu,
  kSilu,  // "silu" / "swish": x * sigmoid(x) (the decoders' SwiGLU gate)
};

// erf(x) in float32: Eigen's rational approximation on [-4, 4] (clamped outside, where erf
// is +-1 in float32). Max abs error vs std::erf < 1e-6 over the whole line (checked by
// cpu_kernels_test); vectorises, unlike std::erf.
float FastErf(float x);

// Row-major y [rows x n]: y[r][c] += bias[c].
void AddBias(float* y, int64_t rows, int64_t n, const float* bias);

// Row-major y [rows x n]: y[r][c] = act(y[r][c] + bias[c]).
void BiasActivation(float* y, int64_t rows, int64_t n, const float* bias, Activation act);

// Row-major y [rows x 2n], out [rows x n]: out[r][c] = act(y[r][c]) * y[r][n + c] (a gated
// feed-forward's GLU: GeGLU with GELU, ReGLU with ReLU, SwiGLU with SiLU).
void GatedActivation(const float* y, int64_t rows, int64_t n, Activation act, float* out);

// x[i] += y[i] for n floats (a pre-norm layer's residual).
void AddRows(float* x, const float* y, int64_t n);

// Rotary position embedding in place (engine/encoder/rotary_embedding.h, "rotate half"): row r
// of x (rows `ld` floats apart) holds `heads` heads of head_dim floats from its start and sits at
// position r; cos and sin are [rows x head_dim / 2] from that position's row. In each head,
// (a, b) = (x[i], x[i + d/2]) becomes (a cos - b sin, b cos + a sin).
void RotateHalf(float* x, int64_t ld, int64_t rows, int64_t heads, int64_t head_dim,
                const float* cos, const float* sin);

// Row-major x, y [rows x n]: x[r] = LayerNorm(x[r] + y[r] + bias) * gamma + beta (statistics
// over the row, biased variance, eps inside the square root, as torch.nn.LayerNorm).
// y may be null (no residual); bias may be null.
void AddLayerNorm(float* x, const float* y, const float* bias, const float* gamma,
                  const float* beta, int64_t rows, int64_t n, float eps);

// Row-major x [rows x n]: x[r] = gamma * x[r] / sqrt(mean(x[r]^2) + eps), in place (RMSNorm as
// the decoders' (Qwen3RMSNorm, MistralRMSNorm): no mean subtracted, no bias).
void RmsNorm(float* x, const float* gamma, int64_t rows, int64_t n, float eps);

// n floats to bfloat16 (the upper 16 bits, rounded to nearest even; inputs are finite).
void ToBf16(const float* x, int64_t n, uint16_t* y);
// n bfloat16 to floats (exact).
void FromBf16(const uint16_t* x, int64_t n, float* y);

}  // namespace ember::engine
