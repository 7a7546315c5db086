// A Backend for TorchScript text-embedding modules (see docs/models.md).
//
// The module provides
//   forward(input_ids: Tensor, attention_mask: Tensor) -> Tensor
// returning [batch, dim] vectors, or [batch, tokens, dim] states (then
// mean-pooled over the mask and L2-normalized), or a tuple whose first element
// is either (as traced HuggingFace models return). Text becomes ids either by
// the module's own
//   tokenize(texts: List[str]) -> Tuple[Tensor, Tensor]   # input_ids, attention_mask
// or, when it has none, by the tokenizer whose tokenizer.json or vocab.txt lies beside the .pt
// file (HfTokenizer).
//
// This header is deliberately free of LibTorch includes.
#ifndef EMBER_ENGINE_TORCHSCRIPT_BACKEND_H_
#define EMBER_ENGINE_TORCHSCRIPT_BACKEND_H_

#include <filesystem>
#include <memory>
#include <string>

#include "engine/model.h"

namespace ember::engine {

struct TorchOptions {
  std::string device = "cpu";  // "cpu" or "cuda:N"
  int threads = 0;             // intra-op threads of the thread that runs it; 0: leave
};

// Loads and warms up a TorchScript module with its tokenizer: the module's own tokenize()
// where it has one, else the tokenizer files beside it. Throws std::runtime_error naming the
// file on any failure (missing, corrupt, wrong methods, no tokenizer, device unavailable).
Model LoadTorchScript(const std::filesystem::path& path, const TorchOptions& options);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TORCHSCRIPT_BACKEND_H_
