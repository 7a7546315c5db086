// Picks the backend for a model path: a HuggingFace/sentence-transformers
// folder (config.json) gets the BERT backend; a TorchScript file (or a folder
// holding model.pt) gets the TorchScript backend.
#ifndef EMBER_WORKER_MODEL_LOADER_H_
#define EMBER_WORKER_MODEL_LOADER_H_

#include <filesystem>
#include <memory>
#include <string>

#include "worker/backend.h"

namespace ember::worker {

struct LoadOptions {
  std::string device = "cpu";
  int threads = 0;  // LibTorch intra-op threads; 0 leaves LibTorch's setting
};

// Throws std::runtime_error naming the path when nothing loadable is there.
std::unique_ptr<Backend> LoadBackend(const std::filesystem::path& path, const LoadOptions& options);

}  // namespace ember::worker

#endif  // EMBER_WORKER_MODEL_LOADER_H_
