// Opens a model version: its tokenizer and the Backend of the runtime for the path (a
// HuggingFace / sentence-transformers folder with config.json gets the encoder backend and the
// folder's tokenizer.json or vocab.txt, a TorchScript file or a folder holding model.pt the
// torchscript one) with the version's own parameters. The worker's serving code calls only
// this (and WarmUp); which runtimes exist, and what their parameters mean, stays in engine/.
#ifndef EMBER_ENGINE_BACKEND_FACTORY_H_
#define EMBER_ENGINE_BACKEND_FACTORY_H_

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

#include "engine/backend.h"
#include "engine/backend_params.h"
#include "engine/load_progress.h"
#include "engine/model.h"

namespace ember::engine {

struct BackendOptions {
  std::string device = "cpu";    // "cpu" or "cuda:N"
  int threads = 0;               // intra-op threads; 0 leaves the runtime's setting
  std::string backend = "auto";  // one of BackendNames()
  // The runtime's own settings (encoder: engine/encoder/encoder_backend.h; torchscript: precision,
  // which must be fp32), and for a folder's tokenizer `lowercase = "per-character" |
  // "per-word"` (HfTokenizer::Options). Unknown keys fail the load.
  BackendParams params{};
  // Told how far the load has come, where the runtime says (the encoder runtime does).
  LoadProgressFn progress{};
};

// The runtimes `BackendOptions::backend` may name: the one list, against which a version's
// config.toml is checked before anything loads. Inline, so that serving code linked without
// any runtime (the worker's library) checks names too.
// "bert" is the encoder runtime's name from when it served BERT alone, kept for config.toml
// files that say it.
inline constexpr std::string_view kBackendNames[] = {"auto", "encoder", "bert", "torchscript",
                                                     "simulated"};

inline bool IsBackendName(std::string_view name) {
  return std::ranges::find(kBackendNames, name) != std::end(kBackendNames);
}

// "auto, encoder, bert, torchscript, simulated", for messages.
inline std::string BackendNames() {
  std::string names;
  for (const std::string_view name : kBackendNames) {
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

// Throws ember::Error (BAD_REQUEST) for a bad parameter, std::runtime_error naming the path
// when nothing loadable is there or the tokenizer's ids do not fit the model.
Model LoadModel(const std::filesystem::path& path, BackendOptions options);

// Runs one short text through the model so the first request does not pay for lazy
// initialisation (allocator pools, oneDNN primitives, JIT).
void WarmUp(const Model& model);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_BACKEND_FACTORY_H_
