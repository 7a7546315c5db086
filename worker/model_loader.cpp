#include "worker/model_loader.h"

#include <stdexcept>

#include "worker/bert_backend.h"
#include "worker/torchscript_backend.h"

namespace ember::worker {

std::unique_ptr<Backend> LoadBackend(const std::filesystem::path& path,
                                     const LoadOptions& options) {
  namespace fs = std::filesystem;
  const bool is_bert = fs::is_directory(path) && fs::exists(path / "config.json");
  if (options.backend == "bert" || (options.backend == "auto" && is_bert)) {
    BertOptions bert;
    bert.device = options.device;
    bert.threads = options.threads;
    bert.pooling = options.pooling;
    bert.normalize = options.normalize;
    bert.precision = options.precision;
    return LoadBertBackend(path, bert, options.max_length);
  }
  if (options.backend != "auto" && options.backend != "torchscript") {
    throw std::runtime_error("model '" + path.string() + "': unknown backend '" + options.backend +
                             "' (auto, bert, torchscript)");
  }
  if (options.precision != Precision::kFp32) {
    // A TorchScript module runs in whatever dtypes it was exported with; converting it here
    // would be a guess.
    throw std::runtime_error("model '" + path.string() + "': precision \"" +
                             PrecisionName(options.precision) +
                             "\" is only supported by the bert backend (TorchScript models run "
                             "as exported; use fp32)");
  }
  const fs::path script = fs::is_directory(path) ? path / "model.pt" : path;
  if (fs::is_regular_file(script)) {
    return LoadTorchScriptBackend(
        script, TorchOptions{.device = options.device, .threads = options.threads});
  }
  throw std::runtime_error("model '" + path.string() +
                           "': neither a HuggingFace folder (config.json + model.safetensors) "
                           "nor a TorchScript file");
}

void WarmUp(Backend& backend) {
  const auto ids = backend.Tokenize("ember warm-up", /*truncate=*/true);
  const auto vectors = backend.Embed({ids, ids});
  if (vectors.size() != 2 * static_cast<std::size_t>(backend.dim())) {
    throw std::runtime_error("warm-up returned " + std::to_string(vectors.size()) +
                             " floats for 2 texts of dim " + std::to_string(backend.dim()));
  }
}

}  // namespace ember::worker
