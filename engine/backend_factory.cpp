#include "engine/backend_factory.h"

#include <stdexcept>

#include "common/error_code.h"
#include "engine/encoder/encoder_backend.h"
#include "engine/encoder/token_heads.h"
#include "engine/simulated/simulated_backend.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/torchscript/torchscript_backend.h"

namespace ember::engine {
namespace {

// The folder's tokenizer, with the version's `lowercase` rule (encoder and simulated runtimes).
std::unique_ptr<const Tokenizer> OpenTokenizer(const std::filesystem::path& dir,
                                               BackendParams& params) {
  HfTokenizer::Options options;
  if (const auto rule = params.TakeString("lowercase")) {
    if (*rule == "per-word") {
      options.final_sigma_per_word = true;
    } else if (*rule != "per-character") {
      throw Error(ErrorCode::kBadRequest,
                  "lowercase = \"" + *rule + "\": expected per-character or per-word");
    }
  }
  try {
    return HfTokenizer::FromDirectory(dir, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("model '" + dir.string() + "': tokenizer: " + e.what());
  }
}

// A tokenizer whose ids the backend's embeddings cannot all take is refused at load, not on
// the first text that uses one.
void CheckFits(const std::filesystem::path& path, const Model& model) {
  const std::size_t ids = model.tokenizer->vocab_size(), rows = model.backend->vocab_size();
  if (rows != 0 && ids > rows) {
    throw std::runtime_error("model '" + path.string() + "': the tokenizer has " +
                             std::to_string(ids) + " ids but the model's embeddings " +
                             std::to_string(rows));
  }
}

}  // namespace

Model LoadModel(const std::filesystem::path& path, BackendOptions options) {
  namespace fs = std::filesystem;
  const bool is_folder = fs::is_directory(path) && fs::exists(path / "config.json");
  if (options.backend == "encoder" || options.backend == "bert" ||
      (options.backend == "auto" && is_folder)) {
    Model model;
    model.tokenizer = OpenTokenizer(path, options.params);
    EncoderLoad load =
        ParseEncoderParams(std::move(options.params), options.device, options.threads);
    load.model.progress = std::move(options.progress);
    load.sparse_skip_ids = SparseSkipIds(path, *model.tokenizer);
    model.backend = LoadEncoderBackend(path, load);
    CheckFits(path, model);
    return model;
  }
  if (options.backend == "simulated") {
    Model model;
    model.tokenizer = OpenTokenizer(path, options.params);
    model.backend = LoadSimulatedBackend(std::move(options.params));
    return model;
  }
  if (options.backend != "auto" && options.backend != "torchscript") {
    throw Error(ErrorCode::kBadRequest, "model '" + path.string() + "': unknown backend '" +
                                            options.backend + "' (" + BackendNames() + ")");
  }
  // What the folder is comes before the TorchScript backend's parameters: a folder that lost
  // its config.json (a link pointing nowhere) is not a TorchScript model with wrong settings.
  const fs::path script = fs::is_directory(path) ? path / "model.pt" : path;
  if (!fs::is_regular_file(script)) {
    throw std::runtime_error("model '" + path.string() +
                             "': neither a HuggingFace folder (config.json + model.safetensors; a "
                             "link that points nowhere counts as missing) nor a TorchScript file");
  }
  // A TorchScript module runs in whatever dtypes it was exported with; converting it here
  // would be a guess.
  if (const auto precision = options.params.TakeString("precision");
      precision && *precision != "fp32") {
    throw Error(ErrorCode::kBadRequest,
                "model '" + path.string() + "': precision \"" + *precision +
                    "\" is only supported by the encoder backend (TorchScript models run as "
                    "exported; use fp32)");
  }
  options.params.RejectUnused("torchscript", "precision (fp32 only)");
  return LoadTorchScript(script,
                         TorchOptions{.device = options.device, .threads = options.threads});
}

void WarmUp(const Model& model) {
  const auto ids =
      model.tokenizer->Encode("ember warm-up", {.max_length = model.backend->max_length()}).ids;
  const auto vectors = model.backend->Embed(TokenBatch::Of({ids, ids}));
  if (vectors.size() != 2 * static_cast<std::size_t>(model.backend->dim())) {
    throw std::runtime_error("warm-up returned " + std::to_string(vectors.size()) +
                             " floats for 2 texts of dim " + std::to_string(model.backend->dim()));
  }
}

}  // namespace ember::engine
