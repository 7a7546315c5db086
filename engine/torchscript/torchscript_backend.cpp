#include "engine/torchscript/torchscript_backend.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "common/error_code.h"
#include "engine/pooling.h"
#include "engine/tokenizer/tokenizer_error_code.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace ember::engine {
namespace {

// Sets the calling thread's intra-op thread count once: it is an OpenMP
// setting of each thread, and models run on the runner's thread, not the one
// that loaded them.
void ApplyThreads(int threads) {
  thread_local int applied = 0;
  if (threads > 0 && applied != threads) {
    at::set_num_threads(threads);
    applied = threads;
  }
}

class TorchScriptBackend final : public Backend {
 public:
  TorchScriptBackend(torch::jit::Module module, torch::Device device, int threads,
                     std::optional<WordPieceTokenizer> tokenizer)
      : module_(std::move(module)),
        device_(device),
        threads_(threads),
        tokenizer_(std::move(tokenizer)) {}

  std::int64_t dim() const override { return dim_; }

  std::uint64_t memory_bytes() const override {
    std::uint64_t bytes = 0;
    for (const auto& p : module_.parameters()) bytes += p.nbytes();
    for (const auto& b : module_.buffers()) bytes += b.nbytes();
    return bytes;
  }

  std::vector<std::int32_t> Tokenize(std::string_view text, bool truncate) const override {
    if (tokenizer_) {
      try {
        return tokenizer_->Encode(text, truncate).ids;
      } catch (const TokenizerError& e) {
        throw Error(ErrorCodeOf(e), e.what());
      }
    }
    // The module tokenizes for itself (and always truncates to its maximum);
    // TorchScript strings must be valid UTF-8, which nothing upstream checks.
    const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    for (auto left = static_cast<utf8proc_ssize_t>(text.size()); left > 0;) {
      utf8proc_int32_t cp;
      const utf8proc_ssize_t n = utf8proc_iterate(bytes, left, &cp);
      if (n <= 0) throw Error(ErrorCode::kBadRequest, "text is not valid UTF-8");
      bytes += n;
      left -= n;
    }
    torch::InferenceMode inference;
    c10::List<std::string> list;
    list.push_back(std::string(text));
    auto module = module_;  // a handle: calling methods does not mutate it
    const auto encoded = module.get_method("tokenize")({list}).toTuple();
    const auto ids = encoded->elements().at(0).toTensor().to(torch::kLong);
    const auto mask = encoded->elements().at(1).toTensor();
    const std::int64_t n = mask.sum().item<std::int64_t>();
    const auto* p = ids.data_ptr<std::int64_t>();
    return std::vector<std::int32_t>(p, p + n);
  }

  std::vector<float> Embed(const TokenBatch& batch) override {
    ApplyThreads(threads_);
    torch::InferenceMode inference;
    // A TorchScript module takes padded [B, L] ids and mask: pad the packed batch once.
    const auto b = static_cast<std::int64_t>(batch.size());
    const auto longest = static_cast<std::int64_t>(batch.max_length());
    auto ids = torch::zeros({b, longest}, torch::kLong);
    auto mask = torch::zeros({b, longest}, torch::kLong);
    auto* id_p = ids.data_ptr<std::int64_t>();
    auto* mask_p = mask.data_ptr<std::int64_t>();
    std::vector<std::int64_t> starts(batch.size()), lens(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto seq = batch.sequence(i);
      starts[i] = static_cast<std::int64_t>(i) * longest;
      lens[i] = static_cast<std::int64_t>(seq.size());
      std::copy(seq.begin(), seq.end(), id_p + starts[i]);
      std::fill_n(mask_p + starts[i], seq.size(), 1);
    }
    torch::IValue result = module_.forward({ids.to(device_), mask.to(device_)});
    // Traced HuggingFace models return (last_hidden_state, pooler_output, ...).
    if (result.isTuple()) result = result.toTuple()->elements().at(0);
    auto out = result.toTensor().to(torch::kCPU, torch::kFloat).contiguous();
    if (out.dim() == 3 && out.size(0) == b && out.size(1) == longest) {
      // Token states: mean over real tokens, then L2-normalize, as sentence-transformers does
      // for mean-pooling models (engine/pooling.h).
      auto pooled = torch::empty({b, out.size(2)}, torch::kFloat);
      PoolRows(out.data_ptr<float>(), out.size(2), starts, lens, Pooling::kMean,
               /*normalize=*/true, pooled.data_ptr<float>());
      out = pooled;
    }
    out = out.contiguous();
    if (out.dim() != 2 || out.size(0) != b) {
      throw std::runtime_error("model returned a tensor of shape " + c10::str(out.sizes()) +
                               " for " + std::to_string(batch.size()) + " texts");
    }
    std::vector<float> vectors(static_cast<std::size_t>(out.numel()));
    std::memcpy(vectors.data(), out.data_ptr<float>(), vectors.size() * sizeof(float));
    return vectors;
  }

  // Runs the model once (which also tells its dimension) and a second time,
  // since TorchScript's profiling executor optimizes on the second run.
  void Warm() {
    const auto ids = Tokenize("ember warm-up", true);
    for (int i = 0; i < 2; ++i) {
      dim_ = static_cast<std::int64_t>(Embed(TokenBatch::Of({ids, ids})).size() / 2);
    }
  }

 private:
  torch::jit::Module module_;
  torch::Device device_;
  int threads_;
  std::optional<WordPieceTokenizer> tokenizer_;  // unset: the module's tokenize()
  std::int64_t dim_ = 0;
};

}  // namespace

std::unique_ptr<Backend> LoadTorchScriptBackend(const std::filesystem::path& path,
                                                const TorchOptions& options) {
  const std::string where = "model '" + path.string() + "': ";
  if (!std::filesystem::is_regular_file(path)) {
    throw std::runtime_error(where + "no such file");
  }
  try {
    const torch::Device device(options.device);
    if (device.is_cuda() && !torch::cuda::is_available()) {
      throw std::runtime_error("device " + options.device +
                               " requested but this LibTorch has no usable CUDA");
    }
    torch::jit::Module module = torch::jit::load(path.string(), device);
    module.eval();
    std::optional<WordPieceTokenizer> tokenizer;
    if (!module.find_method("tokenize")) {
      // A module taking (input_ids, attention_mask): its tokenizer files
      // (vocab.txt or tokenizer.json) sit beside it.
      tokenizer = WordPieceTokenizer::FromDirectory(path.parent_path());
    }
    auto backend = std::make_unique<TorchScriptBackend>(std::move(module), device, options.threads,
                                                        std::move(tokenizer));
    backend->Warm();
    return backend;
  } catch (const c10::Error& e) {
    throw std::runtime_error(where + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(where + e.what());
  }
}

}  // namespace ember::engine
