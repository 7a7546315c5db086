// ember-load-check: what loading a model folder costs in memory and time on this machine, the
// measure of the mmap load path (issue 37: a bf16 checkpoint loads in bf16 without a float32
// copy; peak resident memory against the files' size).
//
//   ember-load-check --model DIR [--precision bf16] [--device cpu] [--json OUT.json]
//
// Loads DIR with EncoderModel::Load, embeds one 16-token sequence, and prints a table: the
// checkpoint's bytes (every *.safetensors in the folder), load seconds, the process's peak
// resident memory (VmHWM) before and after loading, its resident memory after, what the model
// says it holds, and the peak over the file size.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/encoder/encoder_model.h"

namespace {

namespace fs = std::filesystem;

// A line of /proc/self/status in bytes ("VmHWM:   1234 kB").
uint64_t StatusBytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
  }
  return 0;
}

double GiB(uint64_t bytes) { return static_cast<double>(bytes) / (1u << 30); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember-load-check: a model folder's load time and peak resident memory"};
  std::string model, precision = "fp32", device = "cpu", json_out;
  app.add_option("--model", model, "model folder")->required();
  app.add_option("--precision", precision, "fp32, bf16, fp16 (CUDA), int8 (CPU)");
  app.add_option("--device", device, "cpu, cuda, cuda:N");
  app.add_option("--json", json_out, "write the figures here too");
  CLI11_PARSE(app, argc, argv);

  uint64_t file_bytes = 0;
  for (const auto& entry : fs::directory_iterator(model)) {
    if (entry.path().extension() == ".safetensors") file_bytes += entry.file_size();
  }
  ember::engine::EncoderOptions options;
  options.device = device;
  options.precision =
      ember::engine::ParsePrecision(precision).value_or(ember::engine::Precision::kFp32);
  const uint64_t peak_before = StatusBytes("VmHWM");
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<ember::engine::EncoderModel> m;
  try {
    m = ember::engine::EncoderModel::Load(model, options);
  } catch (const std::exception& e) {
    std::cerr << "ember-load-check: " << e.what() << "\n";
    return 1;
  }
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t peak = StatusBytes("VmHWM"), rss = StatusBytes("VmRSS");
  std::vector<int32_t> ids(16);
  for (int32_t i = 0; i < 16; ++i) ids[static_cast<size_t>(i)] = 100 + i;
  const auto embed_start = std::chrono::steady_clock::now();
  const std::vector<float> v = m->Embed({ids});
  const double embed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - embed_start).count();

  std::printf("%-34s %12s\n", "model", model.c_str());
  std::printf("%-34s %12s\n", "precision / device", (precision + " / " + device).c_str());
  std::printf("%-34s %12.2f\n", "checkpoint files (GiB)", GiB(file_bytes));
  std::printf("%-34s %12.1f\n", "load (s)", load_s);
  std::printf("%-34s %12.2f\n", "peak RSS before loading (GiB)", GiB(peak_before));
  std::printf("%-34s %12.2f\n", "peak RSS after loading (GiB)", GiB(peak));
  std::printf("%-34s %12.2f\n", "RSS after loading (GiB)", GiB(rss));
  std::printf("%-34s %12.2f\n", "model's memory_bytes (GiB)", GiB(m->memory_bytes()));
  std::printf("%-34s %12.3f\n", "peak RSS / checkpoint files",
              static_cast<double>(peak) / static_cast<double>(file_bytes));
  std::printf("%-34s %12.3f\n", "one 16-token text (s)", embed_s);
  std::printf("%-34s %12lld\n", "dim", static_cast<long long>(v.size()));
  if (!json_out.empty()) {
    const nlohmann::json j = {{"model", model},
                              {"precision", precision},
                              {"device", device},
                              {"file_bytes", file_bytes},
                              {"load_s", load_s},
                              {"peak_rss_before", peak_before},
                              {"peak_rss", peak},
                              {"rss", rss},
                              {"memory_bytes", m->memory_bytes()},
                              {"embed_16_tokens_s", embed_s}};
    std::ofstream(json_out) << j.dump(2) << "\n";
  }
  return 0;
}
