#include "engine/encoder/cpu/cpu_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "engine/encoder/cpu/vector_clones.h"

namespace ember::engine {
namespace {

// Eigen's generic_fast_erf_float (also XLA's and TVM's float erf): x * P(x^2) / Q(x^2).
inline float ErfApprox(float a) {
  const float x = std::clamp(a, -4.0f, 4.0f);
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  p = x * p;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  return p / q;
}

inline float GeluErf(float v) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  return 0.5f * v * (1.0f + ErfApprox(v * kInvSqrt2));
}
inline float GeluTanh(float v) {
  constexpr float kSqrt2OverPi = 0.79788456080286536f;
  return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
}
inline float Silu(float v) { return v / (1.0f + std::exp(-v)); }

EMBER_VECTOR_CLONES
void BiasGeluErf(float* y, int64_t rows, int64_t n, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = GeluErf(row[c] + bias[c]);
  }
}

EMBER_VECTOR_CLONES
void BiasRelu(float* y, int64_t rows, int64_t n, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = std::max(row[c] + bias[c], 0.0f);
  }
}

// Not vectorised (std::tanh): gelu_tanh models are rare among embedding models.
void BiasGeluTanh(float* y, int64_t rows, int64_t n, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
    for (int64_t c = 0; c < n; ++c) row[c] = GeluTanh(row[c] + bias[c]);
  }
}

EMBER_VECTOR_CLONES
void GatedGeluErf(const float* y, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = y + r * 2 * n;
    float* row = out + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = GeluErf(in[c]) * in[n + c];
  }
}

EMBER_VECTOR_CLONES
void GatedRelu(const float* y, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = y + r * 2 * n;
    float* row = out + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = std::max(in[c], 0.0f) * in[n + c];
  }
}

EMBER_VECTOR_CLONES
void BiasSilu(float* y, int64_t rows, int64_t n, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = Silu(row[c] + bias[c]);
  }
}

EMBER_VECTOR_CLONES
void GatedSilu(const float* y, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = y + r * 2 * n;
    float* row = out + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = Silu(in[c]) * in[n + c];
  }
}

void GatedGeluTanh(const float* y, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = y + r * 2 * n;
    float* row = out + r * n;
    for (int64_t c = 0; c < n; ++c) row[c] = GeluTanh(in[c]) * in[n + c];
  }
}

}  // namespace

float FastErf(float x) { return ErfApprox(x); }

EMBER_VECTOR_CLONES
void AddBias(float* y, int64_t rows, int64_t n, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * n;
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] += bias[c];
  }
}

void BiasActivation(float* y, int64_t rows, int64_t n, const float* bias, Activation act) {
  switch (act) {
    case Activation::kGeluErf:
      return BiasGeluErf(y, rows, n, bias);
    case Activation::kGeluTanh:
      return BiasGeluTanh(y, rows, n, bias);
    case Activation::kRelu:
      return BiasRelu(y, rows, n, bias);
    case Activation::kSilu:
      return BiasSilu(y, rows, n, bias);
  }
}

void GatedActivation(const float* y, int64_t rows, int64_t n, Activation act, float* out) {
  switch (act) {
    case Activation::kGeluErf:
      return GatedGeluErf(y, rows, n, out);
    case Activation::kGeluTanh:
      return GatedGeluTanh(y, rows, n, out);
    case Activation::kRelu:
      return GatedRelu(y, rows, n, out);
    case Activation::kSilu:
      return GatedSilu(y, rows, n, out);
  }
}

EMBER_VECTOR_CLONES
void AddRows(float* x, const float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

EMBER_VECTOR_CLONES
void RotateHalf(float* x, int64_t ld, int64_t rows, int64_t heads, int64_t head_dim,
                const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* c = cos + r * half;
    const float* s = sin + r * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* x1 = x + r * ld + h * head_dim;
      float* x2 = x1 + half;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float a = x1[i], b = x2[i];
        x1[i] = a * c[i] - b * s[i];
        x2[i] = b * c[i] + a * s[i];
      }
    }
  }
}

EMBER_VECTOR_CLONES
void AddLayerNorm(float* x, const float* y, const float* bias, const float* gamma,
                  const float* beta, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    const float* add = y ? y + r * n : nullptr;
    // Sums in double: a row of large values with a small spread (an outlier dimension, or the
    // test's +1000 offset) loses its spread in a float sum whose order the compiler chooses.
    double sum = 0.0;
    if (add && bias) {
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < n; ++c) {
        row[c] += add[c] + bias[c];
        sum += row[c];
      }
    } else if (add || bias) {
      const float* one = add ? add : bias;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < n; ++c) {
        row[c] += one[c];
        sum += row[c];
      }
    } else {
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < n; ++c) sum += row[c];
    }
    // Two passes (mean, then squared deviations): no cancellation, unlike E[x^2] - E[x]^2.
    const double mean = sum / static_cast<double>(n);
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int64_t c = 0; c < n; ++c) {
      const double d = row[c] - mean;
      sq += d * d;
    }
    const auto inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) {
      row[c] = static_cast<float>(row[c] - mean) * inv * gamma[c] + beta[c];
    }
  }
}

EMBER_VECTOR_CLONES
void RmsNorm(float* x, const float* gamma, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    // Mean square in double, as AddLayerNorm's statistics; the scale rounded to float32 once,
    // as HF's float32 rsqrt.
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int64_t c = 0; c < n; ++c) sq += static_cast<double>(row[c]) * row[c];
    const auto inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) row[c] = gamma[c] * (row[c] * inv);
  }
}

EMBER_VECTOR_CLONES
void ToBf16(const float* x, int64_t n, uint16_t* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const auto u = std::bit_cast<uint32_t>(x[i]);
    y[i] = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
}

EMBER_VECTOR_CLONES
void FromBf16(const uint16_t* x, int64_t n, float* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = std::bit_cast<float>(static_cast<uint32_t>(x[i]) << 16);
}

}  // namespace ember::engine
