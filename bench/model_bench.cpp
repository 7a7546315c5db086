// ember-model-bench: CPU throughput of the LibTorch BERT encoder (engine/encoder/encoder_model.h)
// and the GEMM roofline it runs against.
//
// For every thread count it
//   1. measures LibTorch fp32 (and, if it runs, bf16) matmul GFLOP/s for the shapes the encoder
//      uses ([B*L x 384] x [384 x 1536], ...) and a square 1024^3, and the fp32 encoder's own
//      dense layer (engine/encoder/cpu/packed_dense.h: weights packed at load, oneDNN if built with
//      it) on the same shapes; the best fp32 figure is the "GEMM peak" of that thread count;
//   2. times EncoderModel::Embed (the serving path) on seeded random token-id sequences of exactly
//      the given lengths, for every batch x length cell, and reports sentences/s, tokens/s,
//      achieved GFLOP/s (analytic model FLOPs / time) and the fraction of the GEMM peak;
//   3. times one end-to-end cell, tokenizer + model (LoadModel: its Tokenizer::Encode for each
//      text, then Backend::Embed), on a batch of short English sentences, next to the model alone
//      and the tokenizer alone on the same texts, so the tokenizer's share shows.
// Prints readable tables and, with --json, writes every figure to a file.
//
// Model FLOPs per sequence of length L (multiply-add = 2 FLOPs; embeddings, LayerNorm, softmax,
// GELU and pooling are not counted):
//   dense:     2 * layers * L * (4*h^2 + 2*h*ffn)    (Q, K, V, attention output; FFN in and out)
//   attention: 2 * layers * 2 * L^2 * h             (Q K^T and P V)

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/random_ids.h"
#include "engine/backend.h"
#include "engine/backend_factory.h"
#include "engine/encoder/cpu/packed_dense.h"
#include "engine/encoder/encoder_model.h"

#ifndef EMBER_MINILM_DIR
#define EMBER_MINILM_DIR "models/minilm-l6-random"
#endif

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace ew = ember::engine;

// all-MiniLM-L6-v2 dimensions, read back from config.json so another BERT folder also works.
struct Arch {
  int64_t layers = 6, hidden = 384, heads = 12, ffn = 1536;
};

Arch ReadArch(const std::string& dir) {
  Arch a;
  std::ifstream in(dir + "/config.json");
  if (!in) return a;
  const json c = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (c.is_discarded()) return a;
  a.layers = c.value("num_hidden_layers", a.layers);
  a.hidden = c.value("hidden_size", a.hidden);
  a.heads = c.value("num_attention_heads", a.heads);
  a.ffn = c.value("intermediate_size", a.ffn);
  return a;
}

double FlopsPerSequence(const Arch& a, int64_t len) {
  const double l = static_cast<double>(len), h = static_cast<double>(a.hidden);
  const double dense = 2.0 * a.layers * l * (4.0 * h * h + 2.0 * h * a.ffn);
  const double attention = 2.0 * a.layers * 2.0 * l * l * h;
  return dense + attention;
}

// The 1/5/15-minute load averages when the run started: other processes skew the figures.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        return name;
      }
    }
  }
  return "unknown";
}

// Runs fn once as warm-up, then repeatedly until at least min_seconds have passed and at least
// min_iters calls were made. Returns per-call seconds.
template <typename Fn>
std::vector<double> Repeat(Fn&& fn, double min_seconds, int min_iters) {
  fn();
  std::vector<double> times;
  const auto start = Clock::now();
  while (true) {
    const auto t0 = Clock::now();
    fn();
    const auto t1 = Clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
    const double total = std::chrono::duration<double>(t1 - start).count();
    if (static_cast<int>(times.size()) >= min_iters && total >= min_seconds) break;
  }
  return times;
}

double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct GemmResult {
  std::string name;
  std::string dtype;
  int64_t batch = 1, m = 0, k = 0, n = 0;  // batch > 1: batched matmul
  double gflops = 0;                       // best of the timed calls
  double gflops_mean = 0;                  // total FLOPs / total time
  int iters = 0;
  std::string error;
};

// Best and mean GFLOP/s of calls that each did `flops` and took `times` seconds.
void SetSpeed(GemmResult& r, double flops, const std::vector<double>& times) {
  r.iters = static_cast<int>(times.size());
  r.gflops = flops / *std::min_element(times.begin(), times.end()) / 1e9;
  r.gflops_mean = flops * static_cast<double>(times.size()) / Sum(times) / 1e9;
}

GemmResult TimeGemm(const std::string& name, at::ScalarType dtype, int64_t batch, int64_t m,
                    int64_t k, int64_t n, double min_seconds) {
  GemmResult r;
  r.name = name;
  r.dtype = c10::toString(dtype);
  r.batch = batch;
  r.m = m;
  r.k = k;
  r.n = n;
  try {
    c10::InferenceMode guard;
    at::manual_seed(1);
    const auto opts = at::TensorOptions().dtype(dtype);
    at::Tensor a = batch > 1 ? at::randn({batch, m, k}, opts) : at::randn({m, k}, opts);
    at::Tensor b = batch > 1 ? at::randn({batch, k, n}, opts) : at::randn({k, n}, opts);
    at::Tensor c;
    const auto times = Repeat([&] { c = at::matmul(a, b); }, min_seconds, 3);
    SetSpeed(r, 2.0 * static_cast<double>(batch * m * k * n), times);
  } catch (const std::exception& e) {
    r.error = e.what();
    r.error = r.error.substr(0, r.error.find('\n'));
  }
  return r;
}

// The fused encoder's dense layer (bias, no activation) on an [m x k] input, [k x n] weights.
GemmResult TimePacked(const std::string& name, int64_t m, int64_t k, int64_t n,
                      double min_seconds) {
  GemmResult r;
  r.name = name;
  r.m = m;
  r.k = k;
  r.n = n;
  try {
    at::manual_seed(1);
    const at::Tensor w = at::randn({k, n}), bias = at::randn({n}), x = at::randn({m, k});
    at::Tensor y = at::empty({m, n});
    const ew::PackedDense dense(w.data_ptr<float>(), bias.data_ptr<float>(), k, n, std::nullopt);
    r.dtype = std::string("Float packed (") + dense.kernel() + ")";
    const auto times =
        Repeat([&] { dense.Apply(x.data_ptr<float>(), m, y.data_ptr<float>()); }, min_seconds, 3);
    SetSpeed(r, 2.0 * static_cast<double>(m * k * n), times);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

struct Cell {
  std::string kind;  // "model" (EncoderModel::Embed on ids), "e2e" (tokenizer + model), ...
  int threads;
  int64_t batch, length;
  int iters;
  double seconds_total, latency_ms_mean, latency_ms_median, latency_ms_min;
  double sentences_per_s, tokens_per_s, gflop_per_batch, gflops, roofline;
};

Cell MakeCell(const std::string& kind, int threads, int64_t batch, int64_t length,
              int64_t real_tokens, double gflop_per_batch, const std::vector<double>& times,
              double peak) {
  Cell c{};
  c.kind = kind;
  c.threads = threads;
  c.batch = batch;
  c.length = length;
  c.iters = static_cast<int>(times.size());
  c.seconds_total = Sum(times);
  c.latency_ms_mean = 1e3 * c.seconds_total / c.iters;
  c.latency_ms_median = 1e3 * Median(times);
  c.latency_ms_min = 1e3 * *std::min_element(times.begin(), times.end());
  c.sentences_per_s = static_cast<double>(batch) * c.iters / c.seconds_total;
  c.tokens_per_s = static_cast<double>(real_tokens) * c.iters / c.seconds_total;
  c.gflop_per_batch = gflop_per_batch;
  c.gflops = gflop_per_batch * c.iters / c.seconds_total;
  c.roofline = peak > 0 ? c.gflops / peak : 0;
  return c;
}

json ToJson(const Cell& c) {
  return {{"kind", c.kind},
          {"threads", c.threads},
          {"batch", c.batch},
          {"length", c.length},
          {"iterations", c.iters},
          {"seconds", c.seconds_total},
          {"sentences_per_s", c.sentences_per_s},
          {"tokens_per_s", c.tokens_per_s},
          {"gflop_per_batch", c.gflop_per_batch},
          {"achieved_gflops", c.gflops},
          {"roofline_fraction", c.roofline},
          {"latency_ms_mean", c.latency_ms_mean},
          {"latency_ms_median", c.latency_ms_median},
          {"latency_ms_min", c.latency_ms_min}};
}

void PrintCellHeader() {
  std::printf("%-7s %4s %5s %6s %12s %12s %9s %8s %11s %11s\n", "kind", "thr", "batch", "len",
              "sentences/s", "tokens/s", "GFLOP/s", "%peak", "lat ms mean", "lat ms min");
}

void PrintCell(const Cell& c) {
  std::printf("%-7s %4d %5lld %6lld %12.1f %12.0f %9.1f %7.1f%% %11.2f %11.2f\n", c.kind.c_str(),
              c.threads, static_cast<long long>(c.batch), static_cast<long long>(c.length),
              c.sentences_per_s, c.tokens_per_s, c.gflops, 100.0 * c.roofline, c.latency_ms_mean,
              c.latency_ms_min);
  std::fflush(stdout);
}

// `count` short English sentences ("The quick fox jumps over the lazy dog.": 9 words), seeded.
std::vector<std::string> Sentences(size_t count, uint32_t seed) {
  static const char* kAdj[] = {"quick", "old",  "small", "happy", "red",  "young",
                               "tall",  "dark", "green", "cold",  "warm", "big"};
  static const char* kNoun[] = {"fox",  "man",  "dog",   "cat",  "girl",  "bird",
                                "boat", "tree", "horse", "city", "house", "car"};
  static const char* kVerb[] = {"jumps", "looks", "walks", "runs",  "moves", "waits",
                                "falls", "turns", "sits",  "stays", "rests", "lives"};
  static const char* kPrep[] = {"over", "near", "behind", "under", "beside", "past"};
  std::mt19937 rng(seed);
  auto pick = [&](auto& arr) {
    return std::string(arr[std::uniform_int_distribution<size_t>(0, std::size(arr) - 1)(rng)]);
  };
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    out.push_back("The " + pick(kAdj) + " " + pick(kNoun) + " " + pick(kVerb) + " " + pick(kPrep) +
                  " the " + pick(kAdj) + " " + pick(kNoun) + ".");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember-model-bench: BERT encoder sentences/s on this CPU and the GEMM roofline"};
  std::string model_dir = EMBER_MINILM_DIR;
  std::vector<int> threads_list{1, 2};
  std::vector<int64_t> batches{1, 8, 32, 128};
  std::vector<int64_t> lengths{16, 64, 256};
  double min_seconds = 1.0;
  double gemm_seconds = 0.5;
  int64_t e2e_batch = 32;
  bool no_gemm = false, no_bf16 = false, no_e2e = false;
  std::string json_path;
  app.add_option("--model", model_dir, "BERT folder (config.json, model.safetensors, vocab.txt)")
      ->capture_default_str();
  app.add_option("--threads", threads_list, "comma-separated LibTorch thread counts")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--batches", batches, "comma-separated batch sizes")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--lengths", lengths, "comma-separated sequence lengths (ids incl. CLS/SEP)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--min-seconds", min_seconds,
                 "per cell: time at least this long and at least 3 calls, after 1 warm-up")
      ->capture_default_str();
  app.add_option("--gemm-seconds", gemm_seconds, "per GEMM shape, same rule")
      ->capture_default_str();
  app.add_option("--e2e-batch", e2e_batch, "batch of the tokenizer + model cell")
      ->capture_default_str();
  app.add_flag("--no-gemm", no_gemm, "skip the GEMM roofline measurement");
  app.add_flag("--no-bf16", no_bf16, "skip the bf16 GEMM measurement");
  app.add_flag("--no-e2e", no_e2e, "skip the tokenizer + model cell");
  bool baseline_aten = false;
  app.add_flag("--baseline-aten", baseline_aten,
               "also time every cell on the ATen forward (padded, unfused) and print the ratio");
  std::vector<int64_t> mixed;
  app.add_option("--mixed", mixed,
                 "LO,HI: also cells of each batch size whose lengths are uniform in [LO, HI]")
      ->delimiter(',')
      ->expected(2);
  bool e2e_only = false;
  std::string e2e_texts;
  app.add_flag("--e2e-only", e2e_only, "only the tokenizer + model cell (no batch x length grid)");
  int64_t e2e_max_tokens = 0;
  app.add_option("--e2e-max-tokens", e2e_max_tokens,
                 "with --e2e-texts: also cap each batch at this many padded tokens (batch x "
                 "longest), as the worker's batcher does; 0: no cap");
  std::string e2e_write_batches;
  app.add_option("--e2e-write-batches", e2e_write_batches,
                 "with --e2e-texts: write the token ids of each batch as JSON cells {batch, "
                 "length, ids} (bench/peer/peer_bench.py --inputs: the peer runs the same "
                 "batches)");
  app.add_option("--e2e-texts", e2e_texts,
                 "texts file (one per line) for the tokenizer + model cell: all of them run in "
                 "batches of --e2e-batch, sorted by length (the offline limit for those texts)");
  app.add_option("--json", json_path, "write all results to this JSON file");
  std::string precision_name = "fp32";
  app.add_option("--precision", precision_name,
                 "model precision: fp32, bf16, int8 (CPU); other than fp32 also reports each "
                 "cell's cosine similarity to the fp32 model's embeddings")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto precision = ew::ParsePrecision(precision_name);
  if (!precision) {
    std::cerr << "--precision: expected fp32, bf16, fp16 or int8\n";
    return 2;
  }

  for (int64_t len : lengths) {
    if (len < 2) {
      std::cerr << "--lengths: each length must be >= 2 ([CLS] and [SEP])\n";
      return 2;
    }
  }

  const Arch arch = ReadArch(model_dir);
  json out;
  out["machine"] = {{"cpu", CpuModelName()},
                    {"hardware_concurrency", std::thread::hardware_concurrency()},
                    {"loadavg_at_start", LoadAverage()}};
  out["libtorch"] = {{"version", TORCH_VERSION},
                     {"mkldnn_available", at::hasMKLDNN()},
                     {"openmp", at::get_parallel_info()}};
  out["model"] = {{"dir", model_dir},      {"layers", arch.layers},
                  {"hidden", arch.hidden}, {"heads", arch.heads},
                  {"ffn", arch.ffn},       {"note", "MiniLM-L6 architecture, random weights"}};
  out["settings"] = {{"min_seconds", min_seconds},
                     {"gemm_seconds", gemm_seconds},
                     {"min_iterations", 3},
                     {"warmup_iterations", 1}};
  for (int64_t len : lengths) {
    out["flops_per_sequence"][std::to_string(len)] = FlopsPerSequence(arch, len);
  }
  std::printf(
      "ember-model-bench: %s, LibTorch %s, load average %s\nmodel %s (%lld layers, hidden %lld, "
      "ffn %lld)\n",
      CpuModelName().c_str(), TORCH_VERSION, LoadAverage().c_str(), model_dir.c_str(),
      static_cast<long long>(arch.layers), static_cast<long long>(arch.hidden),
      static_cast<long long>(arch.ffn));

  json gemm_json = json::array(), cells_json = json::array(), peaks_json = json::object();
  std::vector<Cell> all_cells;
  try {
    for (int t : threads_list) {
      at::set_num_threads(t);  // also this (the only timing) thread's OpenMP setting
      double peak = 0;
      if (!no_gemm) {
        std::printf(
            "\n== GEMM, %d thread(s): at::matmul and the packed dense layer, best of >= 3 calls "
            "==\n",
            t);
        std::printf("%-34s %-9s %10s %10s\n", "shape", "dtype", "GFLOP/s", "mean");
        const int64_t h = arch.hidden, f = arch.ffn, hd = arch.hidden / arch.heads;
        struct Shape {
          std::string name;
          int64_t batch, m, k, n;
          bool bf16;
        };
        const std::vector<Shape> shapes = {
            {"[16 x h] x [h x ffn]", 1, 16, h, f, true},
            {"[256 x h] x [h x ffn]", 1, 256, h, f, true},
            {"[2048 x h] x [h x ffn]", 1, 2048, h, f, true},
            {"[8192 x h] x [h x ffn]", 1, 8192, h, f, false},
            {"[2048 x ffn] x [ffn x h]", 1, 2048, f, h, false},
            {"[2048 x h] x [h x h]", 1, 2048, h, h, false},
            {"QK^T 384 x [64 x hd] x [hd x 64]", 32 * arch.heads, 64, hd, 64, false},
            {"1024^3", 1, 1024, 1024, 1024, true},
        };
        for (const auto& s : shapes) {
          std::vector<std::optional<at::ScalarType>> types{at::kFloat};
          if (s.bf16 && !no_bf16) types.push_back(at::kBFloat16);
          if (s.batch == 1) types.push_back(std::nullopt);  // the packed fp32 dense layer
          for (auto dt : types) {
            GemmResult r = dt ? TimeGemm(s.name, *dt, s.batch, s.m, s.k, s.n, gemm_seconds)
                              : TimePacked(s.name, s.m, s.k, s.n, gemm_seconds);
            if (r.error.empty()) {
              std::printf("%-34s %-9s %10.1f %10.1f\n", s.name.c_str(), r.dtype.c_str(), r.gflops,
                          r.gflops_mean);
              if (dt != at::kBFloat16) peak = std::max(peak, r.gflops);
            } else {
              std::printf("%-34s %-9s failed: %s\n", s.name.c_str(), r.dtype.c_str(),
                          r.error.c_str());
            }
            std::fflush(stdout);
            json g = {{"threads", t},
                      {"shape", r.name},
                      {"dtype", r.dtype},
                      {"batch", r.batch},
                      {"m", r.m},
                      {"k", r.k},
                      {"n", r.n},
                      {"gflops_best", r.gflops},
                      {"gflops_mean", r.gflops_mean},
                      {"iterations", r.iters}};
            if (!r.error.empty()) g["error"] = r.error;
            gemm_json.push_back(g);
          }
        }
        std::printf("GEMM peak (best fp32 above), %d thread(s): %.1f GFLOP/s\n", t, peak);
        peaks_json[std::to_string(t)] = peak;
      }

      std::printf(
          "\n== EncoderModel::Embed, %d thread(s) (MiniLM-L6 architecture, random weights) ==\n",
          t);
      auto model = ew::EncoderModel::Load(model_dir, {.threads = t, .precision = *precision});
      // Reduced precision: the fp32 model on the same ids, for the cosine of each embedding.
      std::unique_ptr<ew::EncoderModel> fp32;
      if (*precision != ew::Precision::kFp32)
        fp32 = ew::EncoderModel::Load(model_dir, {.threads = t});
      PrintCellHeader();
      // The same forward as padded ATen ops (EncoderOptions::fused = false), timed right after each
      // cell on the same ids: the fused path's baseline in the same process.
      std::unique_ptr<ew::EncoderModel> aten;
      if (baseline_aten) {
        aten = ew::EncoderModel::Load(model_dir,
                                      {.threads = t, .precision = *precision, .fused = false});
      }
      // Grid cells (every sequence `len` ids), then, with --mixed, cells whose lengths are drawn
      // uniformly from [lo, hi] (length column: hi, the padded length of the ATen path).
      struct Input {
        std::string kind;
        int64_t batch, length;
        std::vector<std::vector<int32_t>> ids;
      };
      std::vector<Input> inputs;
      for (int64_t len : e2e_only ? std::vector<int64_t>{} : lengths) {
        for (int64_t b : batches) {
          inputs.push_back(
              {"model", b, len,
               ember::bench::RandomIds(b, len, static_cast<uint32_t>(1000 * len + b))});
        }
      }
      for (int64_t b : mixed.empty() || e2e_only ? std::vector<int64_t>{} : batches) {
        std::mt19937 rng(static_cast<uint32_t>(b));
        std::uniform_int_distribution<int64_t> pick(mixed[0], mixed[1]);
        Input in{"mixed", b, mixed[1], {}};
        for (int64_t i = 0; i < b; ++i) {
          in.ids.push_back(
              ember::bench::RandomIds(1, pick(rng), static_cast<uint32_t>(7 * b + i)).front());
        }
        inputs.push_back(std::move(in));
      }
      for (const Input& in : inputs) {
        const auto& ids = in.ids;
        const int64_t b = in.batch, len = in.length;
        int64_t tokens = 0;
        double gflop = 0;
        for (const auto& seq : ids) {
          tokens += static_cast<int64_t>(seq.size());
          gflop += FlopsPerSequence(arch, static_cast<int64_t>(seq.size())) / 1e9;
        }
        const auto times = Repeat([&] { (void)model->Embed(ids); }, min_seconds, 3);
        Cell c = MakeCell(in.kind, t, b, len, tokens, gflop, times, peak);
        PrintCell(c);
        all_cells.push_back(c);
        cells_json.push_back(ToJson(c));
        cells_json.back()["precision"] = precision_name;
        if (aten) {
          const auto aten_times = Repeat([&] { (void)aten->Embed(ids); }, min_seconds, 3);
          Cell a = MakeCell(in.kind + "-aten", t, b, len, tokens, gflop, aten_times, peak);
          PrintCell(a);
          std::printf("   fused / aten: %.2fx\n", c.sentences_per_s / a.sentences_per_s);
          cells_json.back()["aten_sentences_per_s"] = a.sentences_per_s;
          cells_json.back()["fused_over_aten"] = c.sentences_per_s / a.sentences_per_s;
        }
        if (fp32) {
          const std::vector<float> got = model->Embed(ids), want = fp32->Embed(ids);
          const auto dim = static_cast<size_t>(model->dim());
          const size_t rows = got.size() / dim;
          auto cosine = [&](const float* a, const float* b) {
            double dot = 0, na = 0, nb = 0;
            for (size_t k = 0; k < dim; ++k) {
              dot += double(a[k]) * b[k];
              na += double(a[k]) * a[k];
              nb += double(b[k]) * b[k];
            }
            return dot / std::sqrt(na * nb);
          };
          double min_cos = 1.0, sum_cos = 0.0, max_abs = 0.0;
          for (size_t i = 0; i < rows; ++i) {
            const double cos = cosine(&got[i * dim], &want[i * dim]);
            min_cos = std::min(min_cos, cos);
            sum_cos += cos;
            for (size_t k = i * dim; k < (i + 1) * dim; ++k) {
              max_abs = std::max(max_abs, std::abs(double(got[k]) - want[k]));
            }
          }
          // What a cosine of 0.99x means depends on how close different texts' embeddings
          // already are (random weights make them very close): print that scale too.
          double max_between = -1.0;
          for (size_t i = 1; i < rows; ++i) {
            max_between = std::max(max_between, cosine(&want[0], &want[i * dim]));
          }
          const double mean_cos = sum_cos / static_cast<double>(rows);
          std::printf(
              "   %s vs fp32: cosine min %.6f mean %.6f, max abs diff %.2e; fp32 cosine between "
              "different texts (text 0 vs others, max) %.4f\n",
              precision_name.c_str(), min_cos, mean_cos, max_abs, max_between);
          cells_json.back()["cosine_vs_fp32"] = {{"min", min_cos}, {"mean", mean_cos}};
          cells_json.back()["max_abs_diff_vs_fp32"] = max_abs;
          if (rows > 1) cells_json.back()["fp32_max_cosine_between_texts"] = max_between;
        }
      }

      if (!no_e2e) {
        // Tokenizer + model on short English sentences; the model alone and the tokenizer alone
        // on the same texts, so that the difference is the tokenizer's share.
        std::vector<std::string> texts;
        if (e2e_texts.empty()) {
          texts = Sentences(static_cast<size_t>(e2e_batch), 7);
        } else {
          std::ifstream in(e2e_texts);
          for (std::string line; std::getline(in, line);) {
            if (!line.empty()) texts.push_back(line);
          }
          if (texts.empty()) throw std::runtime_error("no texts in " + e2e_texts);
        }
        const ew::Model model = ew::LoadModel(model_dir, {.threads = t, .backend = "encoder"});
        ew::Backend* backend = model.backend.get();
        const auto tokenize = [&](const std::string& text) {
          return model.tokenizer->Encode(text, {.max_length = backend->max_length()}).ids;
        };
        // Sorted by length, so that each batch pads as little as possible.
        std::stable_sort(texts.begin(), texts.end(),
                         [&](const std::string& a, const std::string& b) {
                           return tokenize(a).size() < tokenize(b).size();
                         });
        // Batches: consecutive sorted texts, at most e2e_batch of them and, with a token cap,
        // at most e2e_max_tokens tokens as the worker's batcher counts them for this backend
        // (padded: batch x longest; packed: the sum), so offline and served batches follow
        // the same limits. A text longer than the cap runs alone.
        const bool padded = backend->pads();
        std::vector<std::vector<int32_t>> ids;
        for (const auto& text : texts) ids.push_back(tokenize(text));
        std::vector<std::pair<std::size_t, std::size_t>> chunks;  // [begin, end)
        for (std::size_t i = 0; i < ids.size();) {
          std::size_t end = i + 1, chunk_longest = ids[i].size(), chunk_sum = ids[i].size();
          while (end < ids.size() && end - i < static_cast<std::size_t>(e2e_batch)) {
            const std::size_t l = std::max(chunk_longest, ids[end].size());
            const std::size_t cost = padded ? (end - i + 1) * l : chunk_sum + ids[end].size();
            if (e2e_max_tokens > 0 && cost > static_cast<std::size_t>(e2e_max_tokens)) break;
            chunk_longest = l;
            chunk_sum += ids[end].size();
            ++end;
          }
          chunks.emplace_back(i, end);
          i = end;
        }
        if (!e2e_write_batches.empty()) {
          json cells = json::array();
          for (const auto& [i, end] : chunks) {
            std::size_t chunk_longest = 0;
            json rows = json::array();
            for (std::size_t j = i; j < end; ++j) {
              chunk_longest = std::max(chunk_longest, ids[j].size());
              rows.push_back(ids[j]);
            }
            cells.push_back({{"batch", end - i}, {"length", chunk_longest}, {"ids", rows}});
          }
          std::ofstream f(e2e_write_batches);
          f << json{{"cells", cells}}.dump() << "\n";
          if (!f) throw std::runtime_error("cannot write " + e2e_write_batches);
        }
        int64_t real_tokens = 0, longest = 0;
        double gflop = 0;  // as executed: each sequence padded to its batch's longest
        for (const auto& [i, end] : chunks) {
          int64_t chunk_longest = 0;
          for (std::size_t j = i; j < end; ++j) {
            real_tokens += static_cast<int64_t>(ids[j].size());
            chunk_longest = std::max<int64_t>(chunk_longest, static_cast<int64_t>(ids[j].size()));
          }
          longest = std::max(longest, chunk_longest);
          gflop += static_cast<double>(end - i) * FlopsPerSequence(arch, chunk_longest) / 1e9;
        }
        auto in_batches = [&](const auto&, auto run) {
          for (const auto& [i, end] : chunks) run(i, end);
        };
        const auto e2e_times = Repeat(
            [&] {
              in_batches(texts, [&](std::size_t i, std::size_t end) {
                ew::TokenBatch batch;
                for (std::size_t j = i; j < end; ++j) batch.Add(tokenize(texts[j]));
                (void)backend->Embed(batch);
              });
            },
            min_seconds, 3);
        const auto model_times = Repeat(
            [&] {
              in_batches(ids, [&](std::size_t i, std::size_t end) {
                ew::TokenBatch batch;
                for (std::size_t j = i; j < end; ++j) batch.Add(ids[j]);
                (void)backend->Embed(batch);
              });
            },
            min_seconds, 3);
        const auto tok_times = Repeat(
            [&] {
              for (const auto& text : texts) (void)tokenize(text);
            },
            std::min(min_seconds, 0.2), 3);
        std::printf(
            "-- tokenizer + model: batch %lld of English sentences, %.1f ids each on average "
            "(padded to %lld) --\n",
            static_cast<long long>(e2e_batch),
            static_cast<double>(real_tokens) / static_cast<double>(texts.size()),
            static_cast<long long>(longest));
        for (const auto& [kind, times] :
             {std::pair{"e2e", e2e_times}, std::pair{"idsonly", model_times}}) {
          Cell c = MakeCell(kind, t, static_cast<int64_t>(texts.size()), longest, real_tokens,
                            gflop, times, peak);
          PrintCell(c);
          all_cells.push_back(c);
          json j = ToJson(c);
          j["mean_ids_per_text"] =
              static_cast<double>(real_tokens) / static_cast<double>(texts.size());
          j["texts"] = texts.size();
          j["batch"] = e2e_batch;
          cells_json.push_back(j);
        }
        const double tok_ms = 1e3 * Sum(tok_times) / static_cast<double>(tok_times.size());
        std::printf("tokenizer alone: %.3f ms per batch of %lld (%.1f us per text)\n", tok_ms,
                    static_cast<long long>(e2e_batch), 1e3 * tok_ms / e2e_batch);
        out["tokenizer"][std::to_string(t)] = {
            {"ms_per_batch", tok_ms},
            {"batch", e2e_batch},
            {"mean_ids_per_text", static_cast<double>(real_tokens) / e2e_batch}};
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "ember-model-bench: " << e.what() << "\n";
    return 1;
  }

  out["gemm"] = gemm_json;
  out["gemm_peak_gflops"] = peaks_json;
  out["cells"] = cells_json;
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << out.dump(2) << "\n";
    if (!f) {
      std::cerr << "ember-model-bench: cannot write " << json_path << "\n";
      return 1;
    }
    std::printf("\nwrote %s\n", json_path.c_str());
  }
  return 0;
}
