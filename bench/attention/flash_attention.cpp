#include "bench/attention/flash_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/encoder/cpu/vector_clones.h"

namespace ember::bench {
namespace {

constexpr int64_t kQueryBlock = 8;  // queries whose running state stays in registers / L1
constexpr int64_t kKeyBlock = 64;   // keys scored at a time
constexpr int64_t kMaxHeadDim = 128;

// e^x for x <= 0 (scores minus their running max), vectorisable: 2^n * e^r with r in
// [-ln2/2, ln2/2] and a degree-6 polynomial (relative error < 2e-7); below -87 it is 0.
inline float ExpNonPositive(float x) {
  x = std::max(x, -87.0f);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// One head of one sequence of n rows: q, k, v at stride ld; kt scratch of hd * n floats.
EMBER_VECTOR_CLONES
void Head(const float* q, const float* k, const float* v, int64_t ld, int64_t n, int64_t hd,
          float* out, int64_t ld_out, float* kt) {
  // K transposed [hd x n], so a query's scores against a key block are unit-stride FMAs.
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t d = 0; d < hd; ++d) kt[d * n + j] = k[j * ld + d];
  }
  float s[kQueryBlock][kKeyBlock];
  float acc[kQueryBlock][kMaxHeadDim];
  float m[kQueryBlock], l[kQueryBlock];
  for (int64_t q0 = 0; q0 < n; q0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, n - q0);
    for (int64_t r = 0; r < rows; ++r) {
      m[r] = -std::numeric_limits<float>::infinity();
      l[r] = 0.0f;
#pragma omp simd
      for (int64_t d = 0; d < hd; ++d) acc[r][d] = 0.0f;
    }
    for (int64_t k0 = 0; k0 < n; k0 += kKeyBlock) {
      const int64_t keys = std::min(kKeyBlock, n - k0);
      for (int64_t r = 0; r < rows; ++r) {
        const float* qr = q + (q0 + r) * ld;
        float* sr = s[r];
#pragma omp simd
        for (int64_t j = 0; j < keys; ++j) sr[j] = 0.0f;
        for (int64_t d = 0; d < hd; ++d) {
          const float qd = qr[d];
          const float* ktd = kt + d * n + k0;
#pragma omp simd
          for (int64_t j = 0; j < keys; ++j) sr[j] += qd * ktd[j];
        }
        float block_max = m[r];
#pragma omp simd reduction(max : block_max)
        for (int64_t j = 0; j < keys; ++j) block_max = std::max(block_max, sr[j]);
        const float rescale = ExpNonPositive(m[r] - block_max);
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < keys; ++j) {
          sr[j] = ExpNonPositive(sr[j] - block_max);
          sum += sr[j];
        }
        l[r] = l[r] * rescale + sum;
        m[r] = block_max;
#pragma omp simd
        for (int64_t d = 0; d < hd; ++d) acc[r][d] *= rescale;
        for (int64_t j = 0; j < keys; ++j) {
          const float p = sr[j];
          const float* vj = v + (k0 + j) * ld;
#pragma omp simd
          for (int64_t d = 0; d < hd; ++d) acc[r][d] += p * vj[d];
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float inv = 1.0f / l[r];
      float* o = out + (q0 + r) * ld_out;
#pragma omp simd
      for (int64_t d = 0; d < hd; ++d) o[d] = acc[r][d] * inv;
    }
  }
}

}  // namespace

void FlashAttention(const float* qkv, std::span<const int64_t> starts,
                    std::span<const int64_t> lens, int64_t nh, int64_t hd, float* ctx) {
  if (hd > kMaxHeadDim) throw std::invalid_argument("FlashAttention: head dim over 128");
  const auto b = static_cast<int64_t>(lens.size());
  const int64_t h = nh * hd, ld = 3 * h;
  const int64_t longest = *std::max_element(lens.begin(), lens.end());
  at::parallel_for(0, b * nh, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> kt(static_cast<size_t>(hd * longest));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t bi = item / nh, head = item % nh;
      const int64_t start = starts[static_cast<size_t>(bi)], n = lens[static_cast<size_t>(bi)];
      const float* q = qkv + start * ld + head * hd;
      Head(q, q + h, q + 2 * h, ld, n, hd, ctx + start * h + head * hd, h, kt.data());
    }
  });
}

}  // namespace ember::bench
