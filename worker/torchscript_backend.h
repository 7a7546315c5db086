// A Backend for TorchScript text-embedding modules (see docs/models.md).
//
// The module must provide
//   tokenize(texts: List[str]) -> Tuple[Tensor, Tensor]   # input_ids, attention_mask
//   forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor  # [batch, dim]
// so that the model file alone defines how text becomes vectors.
//
// This header is deliberately free of LibTorch includes.
#ifndef EMBER_WORKER_TORCHSCRIPT_BACKEND_H_
#define EMBER_WORKER_TORCHSCRIPT_BACKEND_H_

#include <filesystem>
#include <memory>
#include <string>

#include "worker/backend.h"

namespace ember::worker {

struct TorchOptions {
  std::string device = "cpu";  // "cpu" or "cuda:N"
  int threads = 0;             // intra-op threads of the thread that runs it; 0: leave
};

// Loads and warms up a TorchScript module. Throws std::runtime_error with a
// message naming the file on any failure (missing, corrupt, wrong methods,
// device unavailable).
std::unique_ptr<Backend> LoadTorchScriptBackend(const std::filesystem::path& path,
                                                const TorchOptions& options);

}  // namespace ember::worker

#endif  // EMBER_WORKER_TORCHSCRIPT_BACKEND_H_
