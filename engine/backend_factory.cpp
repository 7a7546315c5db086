#include "engine/backend_factory.h"

#include <stdexcept>

#include "common/error_code.h"
#include "engine/bert/bert_backend.h"
#include "engine/simulated/simulated_backend.h"
#include "engine/torchscript/torchscript_backend.h"

namespace ember::engine {

std::unique_ptr<Backend> LoadBackend(const std::filesystem::path& path, BackendOptions options) {
  namespace fs = std::filesystem;
  const bool is_bert = fs::is_directory(path) && fs::exists(path / "config.json");
  if (options.backend == "bert" || (options.backend == "auto" && is_bert)) {
    return LoadBertBackend(
        path, ParseBertParams(std::move(options.params), options.device, options.threads));
  }
  if (options.backend == "simulated") return LoadSimulatedBackend(path, std::move(options.params));
  if (options.backend != "auto" && options.backend != "torchscript") {
    throw Error(ErrorCode::kBadRequest, "model '" + path.string() + "': unknown backend '" +
                                            options.backend + "' (" + BackendNames() + ")");
  }
  // A TorchScript module runs in whatever dtypes it was exported with; converting it here
  // would be a guess.
  if (const auto precision = options.params.TakeString("precision");
      precision && *precision != "fp32") {
    throw Error(ErrorCode::kBadRequest,
                "model '" + path.string() + "': precision \"" + *precision +
                    "\" is only supported by the bert backend (TorchScript models run as "
                    "exported; use fp32)");
  }
  options.params.RejectUnused("torchscript", "precision (fp32 only)");
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
  const auto vectors = backend.Embed(TokenBatch::Of({ids, ids}));
  if (vectors.size() != 2 * static_cast<std::size_t>(backend.dim())) {
    throw std::runtime_error("warm-up returned " + std::to_string(vectors.size()) +
                             " floats for 2 texts of dim " + std::to_string(backend.dim()));
  }
}

}  // namespace ember::engine
