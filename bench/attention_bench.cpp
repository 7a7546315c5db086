// ember-attention-bench: the CPU encoder's attention (engine::CpuAttention: per-head GEMMs, the
// score block kept in L2) against a flash-style fused kernel (bench/attention/: online softmax,
// no score matrix), on the same random packed Q/K/V, in alternating rounds in one process
// (docs/performance.md "Fused attention").
//
//   ember-attention-bench [--threads 2] [--heads 12] [--head-dim 32] [--lengths 64,128,256,512]
//                         [--tokens 2048] [--rounds 3] [--min-seconds 0.3] [--json FILE]
//
// Each cell runs sequences of one length, as many as make up --tokens rows, and prints the
// median time per call of each kernel, their ratio (per round: median and range) and the
// largest difference between their outputs.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "bench/attention/flash_attention.h"
#include "engine/encoder/cpu/cpu_encoder.h"

namespace {

using Kernel = void (*)(const float*, std::span<const int64_t>, std::span<const int64_t>, int64_t,
                        int64_t, float*);

// Seconds per call: calls repeated for at least min_seconds (and 3 calls), the median.
// The encoder's attention without a relative bias, as a Kernel.
void GemmAttention(const float* qkv, std::span<const int64_t> starts, std::span<const int64_t> lens,
                   int64_t heads, int64_t head_dim, float* ctx) {
  ember::engine::CpuAttention(qkv, starts, lens, {heads, heads, head_dim}, ctx);
}
// The same with a decoder's causal mask.
void CausalGemmAttention(const float* qkv, std::span<const int64_t> starts,
                         std::span<const int64_t> lens, int64_t heads, int64_t head_dim,
                         float* ctx) {
  ember::engine::CpuAttention(qkv, starts, lens, {heads, heads, head_dim}, ctx, {},
                              {.window = 0, .causal = true});
}

double TimeCall(Kernel kernel, const std::vector<float>& qkv, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& lens, int64_t nh, int64_t hd, std::vector<float>& out,
                double min_seconds) {
  using Clock = std::chrono::steady_clock;
  kernel(qkv.data(), starts, lens, nh, hd, out.data());  // warm-up
  std::vector<double> times;
  const auto start = Clock::now();
  while (times.size() < 3 ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const auto t0 = Clock::now();
    kernel(qkv.data(), starts, lens, nh, hd, out.data());
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2),
                   times.end());
  return times[times.size() / 2];
}

double Median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember-attention-bench: CpuAttention vs a flash-style fused attention kernel"};
  int threads = 2, rounds = 3;
  int64_t heads = 12, head_dim = 32, tokens = 2048;
  std::vector<int64_t> lengths = {64, 128, 256, 512};
  double min_seconds = 0.3;
  std::string json_path;
  app.add_option("--threads", threads, "intra-op threads for both kernels");
  app.add_option("--heads", heads, "attention heads");
  app.add_option("--head-dim", head_dim, "dims per head (at most 128)");
  app.add_option("--lengths", lengths, "sequence lengths, one cell each")->delimiter(',');
  app.add_option("--tokens", tokens, "rows per call: tokens / length sequences (at least 1)");
  app.add_option("--rounds", rounds, "rounds; each runs every cell, alternating which goes first");
  app.add_option("--min-seconds", min_seconds, "time per kernel per cell per round");
  app.add_option("--json", json_path, "write the figures here");
  bool causal = false;
  app.add_flag("--causal", causal,
               "time CpuAttention with a causal mask alone (the flash kernel has no mask)");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);

  const int64_t h = heads * head_dim;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  nlohmann::json cells = nlohmann::json::array();
  std::printf("%6s %5s %12s %12s %10s %17s %10s\n", "length", "seqs", "gemm ms", "flash ms",
              "flash/gemm", "range (rounds)", "max diff");
  for (int64_t n : lengths) {
    const int64_t b = std::max<int64_t>(1, tokens / n);
    std::vector<int64_t> starts(static_cast<size_t>(b)), lens(static_cast<size_t>(b), n);
    for (int64_t i = 0; i < b; ++i) starts[static_cast<size_t>(i)] = i * n;
    // Queries pre-scaled by 1/sqrt(hd), as the encoder's QKV projection leaves them.
    std::vector<float> qkv(static_cast<size_t>(b * n * 3 * h));
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    for (size_t i = 0; i < qkv.size(); ++i) {
      const bool query = static_cast<int64_t>(i) % (3 * h) < h;
      qkv[i] = normal(rng) * (query ? 2.0f * scale : 1.0f);
    }
    std::vector<float> gemm_out(static_cast<size_t>(b * n * h)), flash_out(gemm_out.size());
    std::vector<double> gemm_s, flash_s, ratios;
    if (causal) {
      for (int r = 0; r < rounds; ++r) {
        gemm_s.push_back(TimeCall(CausalGemmAttention, qkv, starts, lens, heads, head_dim, gemm_out,
                                  min_seconds));
      }
      const auto [lo, hi] = std::minmax_element(gemm_s.begin(), gemm_s.end());
      std::printf("%6lld %5lld %12.3f (causal; rounds %.3f - %.3f)\n", static_cast<long long>(n),
                  static_cast<long long>(b), 1e3 * Median(gemm_s), 1e3 * *lo, 1e3 * *hi);
      cells.push_back({{"length", n}, {"sequences", b}, {"causal_gemm_ms", 1e3 * Median(gemm_s)}});
      continue;
    }
    for (int r = 0; r < rounds; ++r) {
      double g = 0, f = 0;
      if (r % 2 == 0) {
        g = TimeCall(GemmAttention, qkv, starts, lens, heads, head_dim, gemm_out, min_seconds);
        f = TimeCall(ember::bench::FlashAttention, qkv, starts, lens, heads, head_dim, flash_out,
                     min_seconds);
      } else {
        f = TimeCall(ember::bench::FlashAttention, qkv, starts, lens, heads, head_dim, flash_out,
                     min_seconds);
        g = TimeCall(GemmAttention, qkv, starts, lens, heads, head_dim, gemm_out, min_seconds);
      }
      gemm_s.push_back(g);
      flash_s.push_back(f);
      ratios.push_back(f / g);
    }
    float diff = 0;
    for (size_t i = 0; i < gemm_out.size(); ++i) {
      diff = std::max(diff, std::abs(gemm_out[i] - flash_out[i]));
    }
    const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
    std::printf("%6lld %5lld %12.3f %12.3f %10.3f %8.3f - %-6.3f %10.2e\n",
                static_cast<long long>(n), static_cast<long long>(b), 1e3 * Median(gemm_s),
                1e3 * Median(flash_s), Median(ratios), *lo, *hi, static_cast<double>(diff));
    cells.push_back({{"length", n},
                     {"sequences", b},
                     {"gemm_ms", 1e3 * Median(gemm_s)},
                     {"flash_ms", 1e3 * Median(flash_s)},
                     {"flash_over_gemm_median", Median(ratios)},
                     {"flash_over_gemm_min", *lo},
                     {"flash_over_gemm_max", *hi},
                     {"max_abs_diff", diff}});
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << nlohmann::json{{"threads", threads}, {"heads", heads},   {"head_dim", head_dim},
                        {"tokens", tokens},   {"rounds", rounds}, {"cells", cells}}
             .dump(2)
      << "\n";
  }
  return 0;
}
