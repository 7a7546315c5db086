// The fused CPU encoder's building blocks against double-precision references: the erf
// approximation, the LayerNorm, activation and bf16 conversion passes
// (engine/encoder/cpu/cpu_kernels.h) and the packed dense layer (engine/encoder/cpu/packed_dense.h:
// oneDNN when the build has it, else BLAS), including row counts across its 256-row blocks, bf16
// math and concurrent calls on one layer.
#include "engine/encoder/cpu/cpu_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "engine/encoder/cpu/cpu_encoder.h"
#include "engine/encoder/cpu/packed_dense.h"
#include "engine/encoder/rotary_embedding.h"

namespace ember::engine {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double GeluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(FastErf, WithinOneMillionthOfStdErfEverywhere) {
  double worst = 0.0;
  for (double x = -12.0; x <= 12.0; x += 1.0 / 4096) {
    worst = std::max(worst, std::abs(double{FastErf(static_cast<float>(x))} - std::erf(x)));
  }
  std::printf("FastErf: max abs error %.3g on [-12, 12]\n", worst);
  EXPECT_LT(worst, 1e-6);
  EXPECT_EQ(FastErf(100.0f), 1.0f);
  EXPECT_EQ(FastErf(-100.0f), -1.0f);
}

TEST(CpuKernels, BiasActivationMatchesDouble) {
  const int64_t rows = 5, n = 1536;  // not a multiple of any vector width: 1536 is, 5 rows are not
  const std::vector<float> x = Random(rows * n, 1, 6.0f), bias = Random(n, 2);
  for (Activation act :
       {Activation::kGeluErf, Activation::kGeluTanh, Activation::kRelu, Activation::kSilu}) {
    std::vector<float> y = x;
    BiasActivation(y.data(), rows, n, bias.data(), act);
    double worst = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        const double v = double{x[r * n + c]} + bias[c];
        double want = std::max(v, 0.0);
        if (act == Activation::kGeluErf) want = GeluErf(v);
        if (act == Activation::kSilu) want = v / (1 + std::exp(-v));
        if (act == Activation::kGeluTanh) {
          want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        }
        worst = std::max(worst, std::abs(y[r * n + c] - want));
      }
    }
    EXPECT_LT(worst, 5e-6) << "activation " << static_cast<int>(act);
  }
}

TEST(CpuKernels, GatedActivationMatchesDouble) {
  const int64_t rows = 7, n = 1152;  // ModernBERT-base's intermediate size
  const std::vector<float> y = Random(rows * 2 * n, 11, 6.0f);
  for (Activation act :
       {Activation::kGeluErf, Activation::kGeluTanh, Activation::kRelu, Activation::kSilu}) {
    std::vector<float> out(rows * n, std::nanf(""));  // poisoned: every element must be written
    GatedActivation(y.data(), rows, n, act, out.data());
    double worst = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        const double v = y[r * 2 * n + c], gate = y[r * 2 * n + n + c];
        double a = std::max(v, 0.0);
        if (act == Activation::kGeluErf) a = GeluErf(v);
        if (act == Activation::kSilu) a = v / (1 + std::exp(-v));
        if (act == Activation::kGeluTanh) {
          a = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        }
        worst = std::max(worst, std::abs(out[r * n + c] - a * gate));
      }
    }
    EXPECT_LT(worst, 3e-5) << "activation " << static_cast<int>(act);
  }
}

TEST(CpuKernels, RotateHalfMatchesTheAtenReference) {
  // Queries and keys of 2 x 12 heads of 64 in rows of a qkv buffer (3 x 768 floats apart), at
  // positions 0..rows-1, against ApplyRotary (the ATen forward's form, HF's ops).
  const int64_t rows = 300, heads = 24, hd = 64, ld = 3 * 12 * hd;
  const RotaryTable table = MakeRotaryTable(160000.0, hd, 8192);
  std::vector<float> x = Random(rows * ld, 12, 3.0f);
  const at::Tensor want = ApplyRotary(
      at::from_blob(x.data(), {rows, ld}).narrow(1, 0, heads * hd).reshape({rows, heads, hd}),
      table);
  const std::vector<float> before = x;
  RotateHalf(x.data(), ld, rows, heads, hd, table.cos.data_ptr<float>(),
             table.sin.data_ptr<float>());
  const at::Tensor got =
      at::from_blob(x.data(), {rows, ld}).narrow(1, 0, heads * hd).reshape({rows, heads, hd});
  EXPECT_LT((got - want).abs().max().item<float>(), 1e-5f);
  // The values (the rest of each row) are left alone.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = heads * hd; c < ld; ++c) ASSERT_EQ(x[r * ld + c], before[r * ld + c]);
  }
  // Position 0 is no rotation; a later one is.
  for (int64_t c = 0; c < heads * hd; ++c) ASSERT_FLOAT_EQ(x[c], before[c]);
  EXPECT_GT(std::abs(x[5 * ld] - before[5 * ld]), 1e-3f);
}

TEST(CpuKernels, RmsNormMatchesDouble) {
  // Rows of Qwen3-0.6B's hidden size and rows of one head (its q/k norms), an offset included
  // so that a mean subtracted (a LayerNorm) would show.
  for (const int64_t n : {int64_t{1024}, int64_t{128}, int64_t{61}}) {
    const int64_t rows = 9;
    std::vector<float> x = Random(rows * n, 21, 4.0f);
    for (float& v : x) v += 2.0f;
    const std::vector<float> gamma = Random(n, 22), before = x;
    RmsNorm(x.data(), gamma.data(), rows, n, 1e-6f);
    double worst = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      double sq = 0.0;
      for (int64_t c = 0; c < n; ++c) sq += double{before[r * n + c]} * before[r * n + c];
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(n) + 1e-6);
      for (int64_t c = 0; c < n; ++c) {
        worst = std::max(worst, std::abs(x[r * n + c] - gamma[c] * before[r * n + c] * inv));
      }
    }
    EXPECT_LT(worst, 2e-6) << "n " << n;
  }
}

TEST(CpuAttention, GroupedCausalAndWindowedMatchTheAtenReference) {
  // Five packed sequences (1, 37, 70, 300 and 600 tokens) of 4 query heads over 2 key/value
  // heads of 16 (a decoder's grouped-query attention, queries wider than a key row), against
  // softmax(QK^T + mask) V in ATen with the keys and values repeated per query head. Masked
  // sequences past 256 tokens take the banded path (blocks of queries scoring only the keys
  // they see); a 200-token window spans several of its blocks.
  const AttentionHeads shape{.heads = 4, .kv_heads = 2, .head_dim = 16};
  const std::vector<int64_t> lens{1, 37, 70, 300, 600}, starts{0, 1, 38, 108, 408};
  const int64_t rows = 1008, ld = shape.row_width(), qw = shape.q_width(), kvw = shape.kv_width();
  std::vector<float> qkv = Random(rows * ld, 31, 1.5f);
  const at::Tensor all = at::from_blob(qkv.data(), {rows, ld});
  for (const AttentionMask mask :
       {AttentionMask{}, AttentionMask{.causal = true}, AttentionMask{.window = 8},
        AttentionMask{8, true}, AttentionMask{.window = 200}, AttentionMask{200, true}}) {
    std::vector<float> ctx(rows * qw, std::nanf(""));  // poisoned: every row must be written
    CpuAttention(qkv.data(), starts, lens, shape, ctx.data(), {}, mask);
    double worst = 0.0;
    for (size_t s = 0; s < lens.size(); ++s) {
      const int64_t n = lens[s];
      const at::Tensor seq = all.narrow(0, starts[s], n).to(at::kDouble);
      const auto heads = [&](int64_t first, int64_t count) {
        return seq.narrow(1, first, count * 16).view({n, count, 16}).transpose(0, 1);
      };
      const at::Tensor q = heads(0, 4), k = heads(qw, 2).repeat_interleave(2, 0),
                       v = heads(qw + kvw, 2).repeat_interleave(2, 0);
      const at::Tensor pos = at::arange(n, at::kLong);
      const at::Tensor distance = pos.unsqueeze(0) - pos.unsqueeze(1);  // key - query
      at::Tensor hidden = at::zeros({n, n}, at::kBool);
      if (mask.causal) hidden = hidden.logical_or(distance > 0);
      if (mask.window > 0) hidden = hidden.logical_or(distance.abs() > mask.window);
      const at::Tensor scores = at::matmul(q, k.transpose(1, 2)).masked_fill(hidden, -INFINITY);
      const at::Tensor want =
          at::matmul(at::softmax(scores, -1), v).transpose(0, 1).reshape({n, qw});
      const at::Tensor got = at::from_blob(ctx.data() + starts[s] * qw, {n, qw}).to(at::kDouble);
      worst = std::max(worst, (got - want).abs().max().item<double>());
    }
    EXPECT_LT(worst, 1e-5) << "window " << mask.window << " causal " << mask.causal;
  }
}

TEST(CpuKernels, AddLayerNormMatchesDouble) {
  const int64_t rows = 7, n = 384;
  // An offset far larger than the spread: the one-pass E[x^2] - E[x]^2 would lose it.
  std::vector<float> x = Random(rows * n, 3);
  for (float& v : x) v += 1000.0f;
  const std::vector<float> y = Random(rows * n, 4), bias = Random(n, 5), gamma = Random(n, 6, 2.0f),
                           beta = Random(n, 7);
  for (int variant = 0; variant < 3; ++variant) {
    const float* add = variant == 2 ? nullptr : y.data();
    const float* b = variant == 0 ? bias.data() : nullptr;
    std::vector<float> got = x;
    AddLayerNorm(got.data(), add, b, gamma.data(), beta.data(), rows, n, 1e-12f);
    double worst = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> v(static_cast<size_t>(n));
      double mean = 0.0, var = 0.0;
      for (int64_t c = 0; c < n; ++c) {
        v[c] = double{x[r * n + c]} + (add ? add[r * n + c] : 0.0) + (b ? b[c] : 0.0);
        mean += v[c] / static_cast<double>(n);
      }
      for (int64_t c = 0; c < n; ++c) var += (v[c] - mean) * (v[c] - mean) / static_cast<double>(n);
      for (int64_t c = 0; c < n; ++c) {
        const double want = (v[c] - mean) / std::sqrt(var + 1e-12) * gamma[c] + beta[c];
        worst = std::max(worst, std::abs(got[r * n + c] - want));
      }
    }
    // float32 has ~6e-5 resolution at 1000: that, times gamma (<= 2) over a spread of ~0.6.
    EXPECT_LT(worst, 5e-4) << "variant " << variant;
  }
}

// y = act(x W + b) in double.
std::vector<double> DenseReference(const std::vector<float>& x, int64_t rows,
                                   const std::vector<float>& wt, const std::vector<float>& bias,
                                   int64_t in, int64_t out, std::optional<Activation> act) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = bias[o];
      for (int64_t k = 0; k < in; ++k) s += double{x[r * in + k]} * wt[k * out + o];
      y[r * out + o] = act ? GeluErf(s) : s;
    }
  }
  return y;
}

double MaxAbs(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return worst;
}

TEST(PackedDense, MatchesDoubleAcrossRowBlocks) {
  const int64_t in = 384, out = 160;
  const std::vector<float> wt = Random(in * out, 11, 0.1f), bias = Random(out, 12);
  for (std::optional<Activation> act : {std::optional<Activation>{}, {Activation::kGeluErf}}) {
    const PackedDense dense(wt.data(), bias.data(), in, out, act);
    EXPECT_EQ(dense.in(), in);
    EXPECT_EQ(dense.out(), out);
    EXPECT_GE(dense.bytes(), static_cast<uint64_t>((in + 1) * out) * sizeof(float));
    for (int64_t rows : {1, 7, 255, 256, 257, 600}) {
      const std::vector<float> x = Random(rows * in, static_cast<uint32_t>(rows));
      std::vector<float> y(rows * out, -1.0f);
      dense.Apply(x.data(), rows, y.data());
      const double worst = MaxAbs(y, DenseReference(x, rows, wt, bias, in, out, act));
      EXPECT_LT(worst, 1e-5) << rows << " rows, " << dense.kernel();
    }
  }
}

TEST(CpuKernels, FromBf16IsExact) {
  std::vector<float> x = Random(1000, 41, 50.0f);
  std::vector<uint16_t> half(x.size());
  ToBf16(x.data(), static_cast<int64_t>(x.size()), half.data());
  std::vector<float> back(x.size(), std::nanf(""));  // poisoned
  FromBf16(half.data(), static_cast<int64_t>(half.size()), back.data());
  const at::Tensor want = at::from_blob(x.data(), {1000}).to(at::kBFloat16).to(at::kFloat);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(back[i], want[static_cast<int64_t>(i)].item<float>()) << i;
  }
}

TEST(CpuKernels, ToBf16RoundsToNearestEven) {
  const std::vector<float> x{
      1.0f, 1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f, 1.0f + 0x1p-9f + 0x1p-8f, -2.5f, 0.0f};
  std::vector<uint16_t> y(x.size());
  ToBf16(x.data(), static_cast<int64_t>(x.size()), y.data());
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(y, (std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC020, 0x0000}));
}

TEST(PackedDense, Bf16MathIsCloseAndReallyBf16) {
  const int64_t in = 384, out = 160, rows = 300;
  const std::vector<float> wt = Random(in * out, 31, 0.1f), bias = Random(out, 32);
  if (!PackedDense::Supports(PackedDense::Math::kBf16)) {
    // Built without oneDNN, or a CPU without its fast bf16 kernels: refused, never slow.
    EXPECT_THROW(PackedDense(wt.data(), bias.data(), in, out, Activation::kGeluErf,
                             PackedDense::Math::kBf16),
                 std::runtime_error);
    GTEST_SKIP() << "no fast bf16 here (no oneDNN, or no AVX-512): checked the refusal only";
  }
  const std::vector<float> x = Random(rows * in, 33);
  const PackedDense dense(wt.data(), bias.data(), in, out, Activation::kGeluErf,
                          PackedDense::Math::kBf16);
  EXPECT_LT(dense.bytes(), static_cast<uint64_t>(in * out) * sizeof(float));  // bf16 weights
  std::vector<float> y(rows * out);
  dense.Apply(x.data(), rows, y.data());
  const double worst = MaxAbs(y, DenseReference(x, rows, wt, bias, in, out, Activation::kGeluErf));
  std::printf("bf16 dense [%lld x %lld], %lld rows: max abs diff %.3g\n",
              static_cast<long long>(in), static_cast<long long>(out), static_cast<long long>(rows),
              worst);
  // Outputs are ~1 in size; bf16 keeps 8 bits of mantissa, so ~1e-2 over 384 products. A
  // float32 GEMM would be within 1e-5.
  EXPECT_LT(worst, 5e-2);
  EXPECT_GT(worst, 1e-4);
}

TEST(PackedDense, ConcurrentCallsOnOneLayerAreIndependent) {
  // oneDNN's library-managed scratchpad is shared between concurrent executions of one
  // primitive; with it, this gave errors of ~0.25. Each call must bring its own.
  const int64_t in = 384, out = 1536, rows = 64;
  const std::vector<float> wt = Random(in * out, 21, 0.1f), bias = Random(out, 22);
  const PackedDense dense(wt.data(), bias.data(), in, out, Activation::kGeluErf);
  const std::vector<float> xa = Random(rows * in, 23), xb = Random(rows * in, 24);
  const auto want_a = DenseReference(xa, rows, wt, bias, in, out, Activation::kGeluErf);
  const auto want_b = DenseReference(xb, rows, wt, bias, in, out, Activation::kGeluErf);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> ya(rows * out), yb(rows * out);
    std::thread ta([&] {
      for (int i = 0; i < 10; ++i) dense.Apply(xa.data(), rows, ya.data());
    });
    std::thread tb([&] {
      for (int i = 0; i < 10; ++i) dense.Apply(xb.data(), rows, yb.data());
    });
    ta.join();
    tb.join();
    ASSERT_LT(MaxAbs(ya, want_a), 1e-5) << "round " << round;
    ASSERT_LT(MaxAbs(yb, want_b), 1e-5) << "round " << round;
  }
}

}  // namespace
}  // namespace ember::engine
