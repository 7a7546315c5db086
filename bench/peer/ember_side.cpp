// ember-peer-side: ember's half of the side-by-side benchmark against ONNX Runtime
// (bench/peer/run.sh, docs/performance.md "Versus ONNX Runtime").
//
//   ember-peer-side --write-inputs INPUTS.json [--batches 1,8,32,128] [--lengths 16,64,256]
//       writes the shared inputs: for every batch x length cell, the same seeded token-id
//       sequences ember-model-bench times (seed 1000 * length + batch; [CLS], ids in
//       [1000, 30000), [SEP]; no padding). Both sides read this one file.
//   ember-peer-side --model DIR --inputs INPUTS.json --threads N --out-dir DIR --json OUT.json
//       times EncoderModel::Embed on every cell like model_bench (1 warm-up call, then at least
//       --min-iters calls and at least --min-seconds; a cell stops early once --max-seconds have
//       passed and at least one timed call was made, for the slow 128 x 256 cells) and writes
//       the warm-up call's embeddings to OUT_DIR/ember_t{N}_b{B}_l{L}.f32 (row-major float32).
//
// Build target (bench/CMakeLists.txt):
//   add_executable(ember-peer-side "${CMAKE_CURRENT_LIST_DIR}/peer/ember_side.cpp")
//   target_link_libraries(ember-peer-side PRIVATE ember_backends CLI11::CLI11
//                                                 nlohmann_json::nlohmann_json)

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench/random_ids.h"
#include "engine/encoder/encoder_model.h"
#include "engine/torchscript/torchscript_backend.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace ew = ember::engine;

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember's side of the ONNX Runtime peer benchmark"};
  std::string write_inputs, inputs, model, out_dir, json_path;
  std::vector<int64_t> batches{1, 8, 32, 128}, lengths{16, 64, 256};
  int threads = 1, min_iters = 3;
  double min_seconds = 0.5, max_seconds = 8.0;
  app.add_option("--write-inputs", write_inputs, "write the shared inputs file and exit");
  app.add_option("--batches", batches)->delimiter(',');
  app.add_option("--lengths", lengths)->delimiter(',');
  app.add_option("--inputs", inputs, "shared inputs file");
  app.add_option("--model", model, "model folder");
  app.add_option("--threads", threads);
  app.add_option("--min-iters", min_iters);
  app.add_option("--min-seconds", min_seconds);
  app.add_option("--max-seconds", max_seconds, "stop a cell after this long (>= 1 timed call)");
  app.add_option("--out-dir", out_dir, "where to write the embeddings");
  app.add_option("--json", json_path, "timings");
  std::string precision = "fp32";
  app.add_option("--precision", precision, "ember's model precision (fp32, bf16, int8)");
  bool aten = false;
  app.add_flag("--aten", aten, "fp32: the padded ATen forward instead of the fused encoder");
  std::string torchscript;
  app.add_option("--torchscript", torchscript,
                 "time this TorchScript module (ember's TorchScript backend; "
                 "bench/peer/export_torchscript.py) instead of --model");
  CLI11_PARSE(app, argc, argv);

  try {
    if (!write_inputs.empty()) {
      json cells = json::array();
      for (int64_t len : lengths) {
        for (int64_t b : batches) {
          const auto seed = static_cast<uint32_t>(1000 * len + b);
          cells.push_back({{"batch", b},
                           {"length", len},
                           {"seed", seed},
                           {"ids", ember::bench::RandomIds(b, len, seed)}});
        }
      }
      std::ofstream(write_inputs) << json{{"cells", cells}}.dump() << '\n';
      std::printf("wrote %s: %zu cells\n", write_inputs.c_str(), cells.size());
      return 0;
    }
    if (inputs.empty() || (model.empty() && torchscript.empty()) || out_dir.empty()) {
      std::cerr << "need --inputs, --model and --out-dir (or --write-inputs)\n";
      return 2;
    }
    std::ifstream in(inputs);
    const json shared = json::parse(in);
    ew::EncoderOptions opt;
    opt.threads = threads;
    const auto parsed = ew::ParsePrecision(precision);
    if (!parsed) throw std::runtime_error("--precision: expected fp32, bf16, fp16 or int8");
    opt.precision = *parsed;
    opt.fused = !aten;
    std::unique_ptr<ew::EncoderModel> bert;
    std::unique_ptr<ew::Backend> script;
    if (torchscript.empty()) {
      bert = ew::EncoderModel::Load(model, opt);
    } else {
      script = ew::LoadTorchScript(torchscript, {.threads = threads}).backend;
    }
    const std::string path = !torchscript.empty() ? "torchscript" : aten ? "aten" : "fused";
    auto embed = [&](const std::vector<std::vector<int32_t>>& ids) {
      const ew::TokenBatch batch = ew::TokenBatch::Of(ids);
      return bert ? bert->Embed(batch) : script->Embed(batch);
    };
    json results = json::array();
    std::printf("ember: threads %d, precision %s, path %s, load average %s\n", threads,
                precision.c_str(), path.c_str(), LoadAverage().c_str());
    for (const auto& cell : shared.at("cells")) {
      const int64_t b = cell.at("batch"), len = cell.at("length");
      const auto ids = cell.at("ids").get<std::vector<std::vector<int32_t>>>();
      const auto w0 = Clock::now();
      const std::vector<float> out = embed(ids);  // warm-up; its output is checked
      const double warm = std::chrono::duration<double>(Clock::now() - w0).count();
      const std::string file = out_dir + "/ember_t" + std::to_string(threads) + "_b" +
                               std::to_string(b) + "_l" + std::to_string(len) + ".f32";
      std::ofstream(file, std::ios::binary)
          .write(reinterpret_cast<const char*>(out.data()),
                 static_cast<std::streamsize>(out.size() * sizeof(float)));
      std::vector<double> times;
      const auto start = Clock::now();
      while (true) {
        const auto t0 = Clock::now();
        const auto r = embed(ids);
        const auto t1 = Clock::now();
        if (r.size() != out.size()) throw std::runtime_error("output size changed");
        times.push_back(std::chrono::duration<double>(t1 - t0).count());
        const double total = std::chrono::duration<double>(t1 - start).count();
        if (static_cast<int>(times.size()) >= min_iters && total >= min_seconds) break;
        if (total >= max_seconds) break;
      }
      double sum = 0;
      for (double t : times) sum += t;
      const double mean = sum / static_cast<double>(times.size());
      const double best = *std::min_element(times.begin(), times.end());
      const double sps = static_cast<double>(b) / mean;
      std::printf(
          "ember t%d b%3lld l%3lld: %9.1f sent/s  (mean %.1f ms, min %.1f ms, %zu calls, "
          "warm-up %.1f ms)\n",
          threads, static_cast<long long>(b), static_cast<long long>(len), sps, mean * 1e3,
          best * 1e3, times.size(), warm * 1e3);
      std::fflush(stdout);
      results.push_back({{"threads", threads},
                         {"batch", b},
                         {"length", len},
                         {"sentences_per_s", sps},
                         {"mean_s", mean},
                         {"min_s", best},
                         {"calls", times.size()},
                         {"times_s", times},
                         {"warmup_s", warm},
                         {"output", file}});
    }
    if (!json_path.empty()) {
      std::ofstream(json_path) << json{{"side", "ember"},
                                       {"threads", threads},
                                       {"precision", precision},
                                       {"path", path},
                                       {"load_average_end", LoadAverage()},
                                       {"cells", results}}
                                      .dump(1)
                               << '\n';
    }
  } catch (const std::exception& e) {
    std::cerr << "ember-peer-side: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
