// engine/encoder/cuda/cuda_kernels.h against their CPU references (the decoders' RMSNorm, RoPE
// and gated activation too, issue 37)
// (engine/encoder/cpu/cpu_kernels.h, engine/pooling.h) on fresh random inputs of several shapes (1
// row, odd widths, 512-token sequences) in float32, float16 and bfloat16, the LayerNorms in both
// row layouts (the warp one had not yet run on a GPU when it was written). Outputs are poisoned
// with NaN before each kernel runs, so an element it fails to write shows. Needs a GPU
// (EMBER_REQUIRE_CUDA=1 makes a missing one a failure); the seed of each run is printed with any
// failure.
#include "engine/encoder/cuda/cuda_kernels.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/encoder/cpu/cpu_kernels.h"
#include "engine/encoder/rotary_embedding.h"
#include "engine/pooling.h"
#include "tests/cuda_required.h"

namespace ember::engine {
namespace {

struct Case {
  at::ScalarType dtype;
  cuda::DType kernel_dtype;
  double rel;  // relative error of one rounding to the dtype, and then some
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return c10::toString(info.param.dtype);
}

class CudaKernels : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    EMBER_SKIP_WITHOUT_CUDA();
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }

  // Normal(mean, sd) values rounded to the case's dtype: float32 [shape] on the host (what the
  // reference sees) and the same values in the dtype on the GPU (what the kernel sees).
  std::pair<at::Tensor, at::Tensor> Random(std::vector<int64_t> shape, float mean = 0.0f,
                                           float sd = 1.0f) {
    at::Tensor host = at::empty(shape, at::kFloat);
    std::normal_distribution<float> dist(mean, sd);
    float* p = host.data_ptr<float>();
    for (int64_t i = 0; i < host.numel(); ++i) p[i] = dist(rng_);
    at::Tensor device = host.to(at::kCUDA, GetParam().dtype);
    return {device.to(at::kCPU, at::kFloat), device};
  }
  at::Tensor Poisoned(std::vector<int64_t> shape, at::ScalarType dtype) {
    return at::full(shape, std::numeric_limits<float>::quiet_NaN(),
                    at::TensorOptions().dtype(dtype).device(at::kCUDA));
  }
  static cudaStream_t Stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

  // Every element of got (any dtype, any device) within abs + rel * |want| of want (float32
  // host); NaN (an unwritten element) fails.
  void ExpectNear(const at::Tensor& got, const at::Tensor& want, double abs) {
    const at::Tensor g = got.to(at::kCPU, at::kFloat).contiguous();
    ASSERT_EQ(g.sizes(), want.sizes());
    const float* gp = g.data_ptr<float>();
    const float* wp = want.data_ptr<float>();
    const double rel = GetParam().rel;
    int64_t bad = 0, first = -1;
    double worst = 0;
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double err = std::abs(static_cast<double>(gp[i]) - wp[i]);
      const bool ok = std::isfinite(gp[i]) && err <= abs + rel * std::abs(wp[i]);
      if (!ok && bad++ == 0) first = i;
      if (std::isfinite(gp[i])) worst = std::max(worst, err);
    }
    EXPECT_EQ(bad, 0) << bad << " of " << g.numel() << " elements off; first at " << first
                      << ": got " << (first >= 0 ? gp[first] : 0.0f) << ", want "
                      << (first >= 0 ? wp[first] : 0.0f) << "; max abs err " << worst << " (seed "
                      << seed_ << ")";
  }

  unsigned seed_ = 0;
  std::mt19937 rng_;
};

// Lengths of the sequences in a packed batch: one token, odd lengths, a full 512.
const std::vector<std::vector<int64_t>> kBatches = {{1}, {7, 1, 33}, {512, 3, 100, 1}};

// Both row layouts (cuda_kernels.h RowLayout): kWarp takes widths up to 1024 and hands wider
// rows to kBlock, so 1536 runs the block kernel under both.
const cuda::RowLayout kLayouts[] = {cuda::RowLayout::kBlock, cuda::RowLayout::kWarp};

const char* LayoutName(cuda::RowLayout layout) {
  return layout == cuda::RowLayout::kWarp ? "warp" : "block";
}

TEST_P(CudaKernels, EmbedLayerNormMatchesCpu) {
  constexpr int64_t kVocab = 97, kMaxPos = 512;
  for (const cuda::RowLayout layout : kLayouts) {
    for (const int64_t n : {384, 33, 1024, 1536}) {  // 1536: the block kernel, past the warp one
      for (const auto& lens : kBatches) {
        std::vector<int32_t> ids, positions;
        std::uniform_int_distribution<int32_t> id(0, kVocab - 1);
        for (const int64_t len : lens) {
          for (int32_t p = 0; p < len; ++p) {
            ids.push_back(id(rng_));
            positions.push_back(p);
          }
        }
        const auto tokens = static_cast<int64_t>(ids.size());
        auto [word, word_d] = Random({kVocab, n});
        auto [pos, pos_d] = Random({kMaxPos, n});
        auto [type0, type0_d] = Random({n});
        auto [gamma, gamma_d] = Random({n}, 1.0f, 0.2f);
        auto [beta, beta_d] = Random({n}, 0.0f, 0.2f);
        const at::Tensor ids_d = at::tensor(ids, at::kInt).to(at::kCUDA);
        const at::Tensor pos_ids_d = at::tensor(positions, at::kInt).to(at::kCUDA);
        at::Tensor out = Poisoned({tokens, n}, GetParam().dtype);
        cuda::EmbedLayerNorm(GetParam().kernel_dtype, ids_d.data_ptr<int32_t>(),
                             pos_ids_d.data_ptr<int32_t>(), tokens, n, word_d.data_ptr(),
                             pos_d.data_ptr(), type0_d.data_ptr(), gamma_d.data_ptr(),
                             beta_d.data_ptr(), 1e-12f, out.data_ptr(), Stream(), layout);

        at::Tensor want = at::empty({tokens, n}, at::kFloat);
        for (int64_t t = 0; t < tokens; ++t) {
          float* row = want.data_ptr<float>() + t * n;
          std::copy_n(word.data_ptr<float>() + ids[static_cast<size_t>(t)] * n, n, row);
          AddLayerNorm(row, pos.data_ptr<float>() + positions[static_cast<size_t>(t)] * n,
                       type0.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(), 1,
                       n, 1e-12f);
        }
        SCOPED_TRACE(std::string(LayoutName(layout)) + ", hidden " + std::to_string(n) +
                     ", tokens " + std::to_string(tokens));
        ExpectNear(out, want, 2e-5);
      }
    }
  }
}

TEST_P(CudaKernels, AddLayerNormMatchesCpu) {
  for (const cuda::RowLayout layout : kLayouts) {
    for (const int64_t n : {384, 33, 1024, 1536}) {
      for (const int64_t rows : {1, 7, 512, 1001}) {
        for (const bool with_y : {true, false}) {
          for (const bool with_bias : {true, false}) {
            auto [x, x_d] = Random({rows, n});
            auto [y, y_d] = Random({rows, n});
            auto [bias, bias_d] = Random({n}, 0.0f, 0.5f);
            auto [gamma, gamma_d] = Random({n}, 1.0f, 0.2f);
            auto [beta, beta_d] = Random({n}, 0.0f, 0.2f);
            // In place (x is its output): AddLayerNormWritesEveryElement checks coverage.
            cuda::AddLayerNorm(GetParam().kernel_dtype, x_d.data_ptr(),
                               with_y ? y_d.data_ptr() : nullptr,
                               with_bias ? bias_d.data_ptr() : nullptr, gamma_d.data_ptr(),
                               beta_d.data_ptr(), rows, n, 1e-12f, Stream(), layout);
            at::Tensor want = x.clone();
            AddLayerNorm(want.data_ptr<float>(), with_y ? y.data_ptr<float>() : nullptr,
                         with_bias ? bias.data_ptr<float>() : nullptr, gamma.data_ptr<float>(),
                         beta.data_ptr<float>(), rows, n, 1e-12f);
            SCOPED_TRACE(std::string(LayoutName(layout)) + ", n " + std::to_string(n) + ", rows " +
                         std::to_string(rows) + (with_y ? ", residual" : "") +
                         (with_bias ? ", bias" : ""));
            ExpectNear(x_d, want, 2e-5);
          }
        }
      }
    }
  }
}

// AddLayerNorm works in place, so poisoning its output would poison its input: instead, a
// poisoned row must not survive (every element of every row is written).
TEST_P(CudaKernels, AddLayerNormWritesEveryElement) {
  constexpr int64_t kRows = 9, kN = 385;
  for (const cuda::RowLayout layout : kLayouts) {
    SCOPED_TRACE(LayoutName(layout));
    at::Tensor x = Poisoned({kRows, kN}, GetParam().dtype);
    x.narrow(0, 0, kRows - 1).normal_();  // the last row stays NaN: its output must be NaN too
    auto [gamma, gamma_d] = Random({kN}, 1.0f, 0.2f);
    auto [beta, beta_d] = Random({kN}, 0.0f, 0.2f);
    cuda::AddLayerNorm(GetParam().kernel_dtype, x.data_ptr(), nullptr, nullptr, gamma_d.data_ptr(),
                       beta_d.data_ptr(), kRows - 1, kN, 1e-12f, Stream(), layout);
    const at::Tensor h = x.to(at::kCPU, at::kFloat);
    EXPECT_TRUE(at::isfinite(h.narrow(0, 0, kRows - 1)).all().item<bool>());
    EXPECT_TRUE(at::isnan(h.narrow(0, kRows - 1, 1)).all().item<bool>())
        << "a row past `rows` was written";
  }
}

TEST_P(CudaKernels, BiasActivationMatchesCpu) {
  for (const Activation act : {Activation::kGeluErf, Activation::kGeluTanh, Activation::kRelu}) {
    for (const int64_t n : {1536, 37}) {
      for (const int64_t rows : {1, 7, 513}) {
        auto [y, y_d] = Random({rows, n}, 0.0f, 2.0f);
        auto [bias, bias_d] = Random({n});
        cuda::BiasActivation(GetParam().kernel_dtype, y_d.data_ptr(), rows, n, bias_d.data_ptr(),
                             act, Stream());
        at::Tensor want = y.clone();
        BiasActivation(want.data_ptr<float>(), rows, n, bias.data_ptr<float>(), act);
        SCOPED_TRACE("activation " + std::to_string(static_cast<int>(act)) + ", n " +
                     std::to_string(n) + ", rows " + std::to_string(rows));
        ExpectNear(y_d, want, 2e-5);
      }
    }
  }
}

TEST_P(CudaKernels, PoolRowsMatchesCpu) {
  for (const int64_t dim : {384, 33, 1024}) {
    for (const auto& lens : kBatches) {
      std::vector<int32_t> offsets{0};
      std::vector<int64_t> starts, lengths;
      for (const int64_t len : lens) {
        starts.push_back(offsets.back());
        lengths.push_back(len);
        offsets.push_back(offsets.back() + static_cast<int32_t>(len));
      }
      const auto seqs = static_cast<int64_t>(lens.size());
      auto [hidden, hidden_d] = Random({offsets.back(), dim});
      const at::Tensor offsets_d = at::tensor(offsets, at::kInt).to(at::kCUDA);
      for (const Pooling pooling : {Pooling::kMean, Pooling::kCls, Pooling::kLastToken}) {
        for (const bool normalize : {true, false}) {
          at::Tensor out = Poisoned({seqs, dim}, at::kFloat);
          cuda::PoolRows(GetParam().kernel_dtype, hidden_d.data_ptr(), dim,
                         offsets_d.data_ptr<int32_t>(), seqs, pooling, normalize,
                         out.data_ptr<float>(), Stream());
          at::Tensor want = at::empty({seqs, dim}, at::kFloat);
          PoolRows(hidden.data_ptr<float>(), dim, starts, lengths, pooling, normalize,
                   want.data_ptr<float>());
          SCOPED_TRACE("dim " + std::to_string(dim) + ", sequences " + std::to_string(seqs) +
                       (pooling == Pooling::kCls         ? ", cls"
                        : pooling == Pooling::kLastToken ? ", last token"
                                                         : ", mean") +
                       (normalize ? ", normalised" : ""));
          // float32 output from float32 sums of dtype inputs: only the summation order differs.
          const at::Tensor got = out.to(at::kCPU);
          const float* gp = got.data_ptr<float>();
          const float* wp = want.data_ptr<float>();
          double worst = 0;
          bool finite = true;
          for (int64_t i = 0; i < got.numel(); ++i) {
            finite = finite && std::isfinite(gp[i]);
            worst = std::max(worst, std::abs(static_cast<double>(gp[i]) - wp[i]));
          }
          EXPECT_TRUE(finite) << "an element was not written (seed " << seed_ << ")";
          EXPECT_LE(worst, 2e-5) << "(seed " << seed_ << ")";
        }
      }
    }
  }
}

// Issue 37: the decoders' RMSNorm, in rows (a layer's norm) and in groups of head_dim within
// wider rows (Qwen3's per-head q/k norms, the rest of the row untouched).
TEST_P(CudaKernels, RmsNormMatchesCpu) {
  for (const auto& [rows, groups, n, ld] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1024, 1024},
        {7, 1, 37, 37},
        {513, 1, 4096, 4096},
        {9, 16, 128, 16 * 128 + 2 * 8 * 128}}) {
    auto [x, x_d] = Random({rows, ld}, 0.5f, 2.0f);
    auto [gamma, gamma_d] = Random({n}, 1.0f, 0.2f);
    const at::Tensor gamma_f = gamma_d.to(at::kFloat);
    at::Tensor out_d = Poisoned({rows, ld}, GetParam().dtype);
    out_d.narrow(1, groups * n, ld - groups * n).copy_(x_d.narrow(1, groups * n, ld - groups * n));
    cuda::RmsNorm(GetParam().kernel_dtype, x_d.data_ptr(), out_d.data_ptr(), ld, rows, groups, n,
                  gamma_f.data_ptr<float>(), 1e-6f, Stream());
    at::Tensor want = x.clone();
    for (int64_t r = 0; r < rows; ++r) {
      RmsNorm(want.data_ptr<float>() + r * ld, gamma.data_ptr<float>(), groups, n, 1e-6f);
    }
    SCOPED_TRACE("rows " + std::to_string(rows) + ", groups " + std::to_string(groups) + " of " +
                 std::to_string(n));
    ExpectNear(out_d, want, 1e-5);
    // In place gives the same.
    cuda::RmsNorm(GetParam().kernel_dtype, x_d.data_ptr(), x_d.data_ptr(), ld, rows, groups, n,
                  gamma_f.data_ptr<float>(), 1e-6f, Stream());
    ExpectNear(x_d, want, 1e-5);
  }
}

// RoPE of the first heads of each row at its position; the rest of the row untouched.
TEST_P(CudaKernels, RotateHalfMatchesCpu) {
  for (const auto& [rows, heads, head_dim, ld] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 64, 64},
        {33, 24, 128, 24 * 128 + 8 * 128},
        {600, 6, 64, 10 * 64}}) {
    const RotaryTable table = MakeRotaryTable(1e6, head_dim, rows);
    auto [x, x_d] = Random({rows, ld});
    const at::Tensor positions =
        at::arange(rows, at::TensorOptions().dtype(at::kInt)).to(at::kCUDA);
    const at::Tensor cos = table.cos.to(at::kCUDA, at::kFloat).contiguous();
    const at::Tensor sin = table.sin.to(at::kCUDA, at::kFloat).contiguous();
    cuda::RotateHalf(GetParam().kernel_dtype, x_d.data_ptr(), ld, rows, heads, head_dim,
                     positions.data_ptr<int32_t>(), cos.data_ptr<float>(), sin.data_ptr<float>(),
                     Stream());
    at::Tensor want = x.clone();
    const at::Tensor cos_h = table.cos.to(at::kFloat).contiguous();
    const at::Tensor sin_h = table.sin.to(at::kFloat).contiguous();
    RotateHalf(want.data_ptr<float>(), ld, rows, heads, head_dim, cos_h.data_ptr<float>(),
               sin_h.data_ptr<float>());
    SCOPED_TRACE("rows " + std::to_string(rows) + ", heads " + std::to_string(heads));
    ExpectNear(x_d, want, 1e-5);
  }
}

TEST_P(CudaKernels, GatedActivationMatchesCpu) {
  for (const Activation act : {Activation::kSilu, Activation::kGeluErf}) {
    for (const auto& [rows, n] : {std::pair<int64_t, int64_t>{1, 11}, {7, 3072}, {513, 37}}) {
      auto [y, y_d] = Random({rows, 2 * n}, 0.0f, 2.0f);
      at::Tensor out_d = Poisoned({rows, n}, GetParam().dtype);
      cuda::GatedActivation(GetParam().kernel_dtype, y_d.data_ptr(), rows, n, act, out_d.data_ptr(),
                            Stream());
      at::Tensor want = at::empty({rows, n}, at::kFloat);
      GatedActivation(y.data_ptr<float>(), rows, n, act, want.data_ptr<float>());
      SCOPED_TRACE("activation " + std::to_string(static_cast<int>(act)) + ", rows " +
                   std::to_string(rows) + ", n " + std::to_string(n));
      ExpectNear(out_d, want, 2e-5);
    }
  }
}

TEST_P(CudaKernels, RowsWiderThanSharedMemoryAreRefused) {
  at::Tensor x = Poisoned({1, 16}, GetParam().dtype);
  EXPECT_THROW(cuda::AddLayerNorm(GetParam().kernel_dtype, x.data_ptr(), nullptr, nullptr,
                                  x.data_ptr(), x.data_ptr(), 1, 1 << 20, 1e-12f, Stream()),
               std::runtime_error);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaKernels,
                         ::testing::Values(Case{at::kFloat, cuda::DType::kFloat32, 1e-6},
                                           Case{at::kHalf, cuda::DType::kFloat16, 2e-3},
                                           Case{at::kBFloat16, cuda::DType::kBFloat16, 1.6e-2}),
                         CaseName);

}  // namespace
}  // namespace ember::engine
