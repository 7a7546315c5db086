#include "worker/model_loader.h"

#include <stdexcept>

#include "worker/bert_backend.h"
#include "worker/torchscript_backend.h"

namespace ember::worker {

std::unique_ptr<Backend> LoadBackend(const std::filesystem::path& path,
                                     const LoadOptions& options) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path) && fs::exists(path / "config.json")) {
    BertOptions bert;
    bert.device = options.device;
    bert.threads = options.threads;
    return LoadBertBackend(path, bert);
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

}  // namespace ember::worker
