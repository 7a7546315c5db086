// Picks the backend for a model path: a HuggingFace/sentence-transformers
// folder (config.json) gets the BERT backend; a TorchScript file (or a folder
// holding model.pt) gets the TorchScript backend.
#ifndef EMBER_WORKER_MODEL_LOADER_H_
#define EMBER_WORKER_MODEL_LOADER_H_

#include <filesystem>
#include <memory>
#include <string>

#include "worker/backend.h"
#include "worker/bert_model.h"

namespace ember::worker {

struct LoadOptions {
  std::string device = "cpu";
  int threads = 0;                         // LibTorch intra-op threads; 0 leaves LibTorch's setting
  std::string backend = "auto";            // "auto", "bert" or "torchscript"
  Pooling pooling = Pooling::kAuto;        // bert
  bool normalize = true;                   // bert
  std::size_t max_length = 0;              // bert: cap on tokens per text; 0: the model's
  Precision precision = Precision::kFp32;  // bert; torchscript accepts only fp32
};

// Throws std::runtime_error naming the path when nothing loadable is there.
std::unique_ptr<Backend> LoadBackend(const std::filesystem::path& path, const LoadOptions& options);

// Runs one short text through `backend` so the first request does not pay
// for lazy initialisation (allocator pools, oneDNN primitives, JIT).
void WarmUp(Backend& backend);

}  // namespace ember::worker

#endif  // EMBER_WORKER_MODEL_LOADER_H_
