// ember-gpu-model-bench: EncoderModel::Embed on a GPU over a file of token ids, the ember half of
// scripts/gpu-model-bench.sh (bench/gpu/hf_forward.py is the HuggingFace half, on the same ids).
//
// Reads {"ids": [[...], ...]} (bench/gpu/make_ids.py), splits it in file order into batches of
// at most --batch-texts texts, and embeds every batch, pass after pass, until --min-seconds
// have passed (after one warm-up pass). Each Embed returns the vectors on the host, so a pass
// is the serial forward time including the copies in and out. Prints one line and, with
// --json, writes texts/s, tokens/s, peak GPU memory (LibTorch's caching allocator) and the
// weights' bytes, the load's seconds and its GPU memory peak (what loading allocated at most:
// the weights, and any float32 copy of them there would show); --vectors writes the first
// --vector-count vectors as raw float32, for the accuracy check against the HF forward.
// --decoder-kernels runs a decoder on the packed CUDA decoder (EncoderOptions::
// cuda_decoder_kernels; scripts/gpu-decoder-bench.sh).
#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/encoder/encoder_model.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace ew = ember::engine;

int Run(int argc, char** argv) {
  CLI::App app{"ember-gpu-model-bench: EncoderModel::Embed on a GPU over a file of token ids"};
  std::string model_dir, ids_file, precision_name = "fp16", encoder = "fused", device = "cuda:0";
  std::string json_out, vectors_out, layernorm = "warp";
  size_t batch_texts = 512, vector_count = 256;
  double min_seconds = 3.0;
  bool decoder_kernels = false;
  app.add_option("--model", model_dir, "model folder")->required();
  app.add_option("--ids", ids_file, "JSON {\"ids\": [[...], ...]}")->required();
  app.add_option("--precision", precision_name, "fp32, fp16 or bf16");
  app.add_option("--encoder", encoder, "fused (the CUDA encoder) or aten (the ATen forward)")
      ->check(CLI::IsMember({"fused", "aten"}));
  app.add_option("--device", device, "CUDA device");
  app.add_option("--layernorm", layernorm, "the CUDA encoder's LayerNorm kernels: block or warp")
      ->check(CLI::IsMember({"block", "warp"}));
  app.add_option("--batch-texts", batch_texts, "texts per Embed call")->check(CLI::PositiveNumber);
  app.add_option("--min-seconds", min_seconds, "time per measurement");
  app.add_option("--json", json_out, "write the figures here");
  app.add_option("--vectors", vectors_out, "write the first --vector-count vectors (float32)");
  app.add_option("--vector-count", vector_count, "how many vectors --vectors writes");
  app.add_flag("--decoder-kernels", decoder_kernels,
               "decoders: the packed CUDA decoder (fused) or ember's kernels in the ATen forward");
  CLI11_PARSE(app, argc, argv);

  const auto precision = ew::ParsePrecision(precision_name);
  if (!precision) throw std::runtime_error("unknown precision " + precision_name);
  std::ifstream in(ids_file);
  if (!in) throw std::runtime_error("cannot open " + ids_file);
  const auto ids = nlohmann::json::parse(in).at("ids").get<std::vector<std::vector<int32_t>>>();
  std::vector<ew::TokenBatch> batches;
  size_t tokens = 0;
  for (size_t i = 0; i < ids.size(); i += batch_texts) {
    ew::TokenBatch b;
    for (size_t j = i; j < std::min(ids.size(), i + batch_texts); ++j) {
      b.Add(ids[j]);
      tokens += ids[j].size();
    }
    batches.push_back(std::move(b));
  }

  const at::Device dev(device);
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const auto peak_allocated = [&]() -> int64_t {
    if (!dev.is_cuda()) return 0;  // --device cpu: a dry run
    return c10::cuda::CUDACachingAllocator::getDeviceStats(dev.index()).allocated_bytes[kAll].peak;
  };
  const auto load_start = Clock::now();
  const auto model = ew::EncoderModel::Load(model_dir, {.device = device,
                                                        .precision = *precision,
                                                        .fused = encoder == "fused",
                                                        .cuda_warp_layernorm = layernorm == "warp",
                                                        .cuda_decoder_kernels = decoder_kernels});
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  const double load_peak_mib = static_cast<double>(peak_allocated()) / (1 << 20);
  std::vector<float> first;
  for (const ew::TokenBatch& b : batches) {  // warm-up pass; keeps the vectors asked for
    const std::vector<float> v = model->Embed(b);
    if (first.size() < vector_count * static_cast<size_t>(model->dim())) {
      first.insert(first.end(), v.begin(), v.end());
    }
  }
  if (dev.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(dev.index());
  int passes = 0;
  const auto start = Clock::now();
  double seconds = 0;
  do {
    for (const ew::TokenBatch& b : batches) (void)model->Embed(b);
    ++passes;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (seconds < min_seconds);
  const int64_t peak_bytes = peak_allocated();
  const double texts_per_s = static_cast<double>(ids.size()) * passes / seconds;
  const double tokens_per_s = static_cast<double>(tokens) * passes / seconds;
  const double peak_mib = static_cast<double>(peak_bytes) / (1 << 20);
  const double weights_mib = static_cast<double>(model->memory_bytes()) / (1 << 20);
  std::printf(
      "ember %s %s (%s LayerNorm%s): %zu texts (%zu tokens) x %d passes in %.2f s: %.0f texts/s, "
      "%.0f tokens/s; GPU memory peak %.0f MiB (weights %.0f MiB; loaded in %.1f s, peak %.0f "
      "MiB)\n",
      precision_name.c_str(), encoder.c_str(), layernorm.c_str(),
      decoder_kernels ? ", decoder kernels" : "", ids.size(), tokens, passes, seconds, texts_per_s,
      tokens_per_s, peak_mib, weights_mib, load_seconds, load_peak_mib);
  if (!json_out.empty()) {
    std::ofstream(json_out) << nlohmann::json{
        {"precision", precision_name},
        {"encoder", encoder},
        {"layernorm", layernorm},
        {"decoder_kernels", decoder_kernels},
        {"packs", model->packs()},
        {"load_seconds", load_seconds},
        {"load_peak_allocated_mib", load_peak_mib},
        {"texts", ids.size()},
        {"tokens", tokens},
        {"batch_texts", batch_texts},
        {"passes", passes},
        {"seconds", seconds},
        {"texts_per_s", texts_per_s},
        {"tokens_per_s", tokens_per_s},
        {"peak_allocated_mib", peak_mib},
        {"weights_mib",
         weights_mib}}.dump(2);
  }
  if (!vectors_out.empty()) {
    first.resize(std::min(first.size(), vector_count * static_cast<size_t>(model->dim())));
    std::ofstream(vectors_out, std::ios::binary)
        .write(reinterpret_cast<const char*>(first.data()),
               static_cast<std::streamsize>(first.size() * sizeof(float)));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember-gpu-model-bench: %s\n", e.what());
    return 1;
  }
}
