// Pooling and normalisation of a batch's last hidden states into one vector per sequence, the
// one definition every backend follows (sentence-transformers' Pooling + Normalize modules):
//  - mean: the average of the sequence's token states (every row given is a real token: the
//    rows of a sequence are exactly its tokens, so no mask and no guard against 0 tokens is
//    needed; sequences are never empty);
//  - cls: the first token's state;
//  - last token: the last token's state (the decoders' embedding: its causal attention has seen
//    the whole text, the end-of-text token the tokenizer appends);
//  - normalize: divided by max(L2 norm, 1e-12), as torch.nn.functional.normalize.
// CPU backends call PoolRows; the CUDA encoder's kernel (engine/encoder/cuda/cuda_kernels.h) is
// tested against it. Header-only, free of any runtime.
#ifndef EMBER_ENGINE_POOLING_H_
#define EMBER_ENGINE_POOLING_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace ember::engine {

enum class Pooling {
  kAuto,       // the folder's sentence-transformers pooling config; mean if there is none
  kMean,       // mean over the sequence's tokens (sentence-transformers "mean_tokens")
  kCls,        // the first token's ([CLS]) last hidden state
  kLastToken,  // the last token's last hidden state (sentence-transformers "lasttoken")
};

// The norm below which normalisation divides by this instead (torch's F.normalize eps).
inline constexpr double kNormalizeEps = 1e-12;

// Divides `row` by max(its L2 norm, kNormalizeEps), summing in double.
inline void NormalizeRow(std::span<float> row) {
  double sq = 0;
  for (const float x : row) sq += static_cast<double>(x) * x;
  const double inv = 1.0 / std::max(std::sqrt(sq), kNormalizeEps);
  for (float& x : row) x = static_cast<float>(x * inv);
}

// Sequence i's token states are rows [starts[i], starts[i] + lens[i]) of `rows` (row-major,
// `dim` floats per row; lens[i] >= 1). Writes out[i * dim ...] for each i. Accumulates in double.
inline void PoolRows(const float* rows, std::int64_t dim, std::span<const std::int64_t> starts,
                     std::span<const std::int64_t> lens, Pooling pooling, bool normalize,
                     float* out) {
  std::vector<double> sum(pooling == Pooling::kMean ? static_cast<std::size_t>(dim) : 0);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const float* first = rows + starts[i] * dim;
    float* o = out + static_cast<std::int64_t>(i) * dim;
    if (pooling == Pooling::kCls) {
      std::copy_n(first, dim, o);
    } else if (pooling == Pooling::kLastToken) {
      std::copy_n(first + (lens[i] - 1) * dim, dim, o);
    } else {
      std::fill(sum.begin(), sum.end(), 0.0);
      for (std::int64_t t = 0; t < lens[i]; ++t) {
        for (std::int64_t c = 0; c < dim; ++c)
          sum[static_cast<std::size_t>(c)] += first[t * dim + c];
      }
      const double inv = 1.0 / static_cast<double>(lens[i]);
      for (std::int64_t c = 0; c < dim; ++c) {
        o[c] = static_cast<float>(sum[static_cast<std::size_t>(c)] * inv);
      }
    }
    if (normalize) NormalizeRow(std::span(o, static_cast<std::size_t>(dim)));
  }
}

}  // namespace ember::engine

#endif  // EMBER_ENGINE_POOLING_H_
