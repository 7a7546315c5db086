#include "engine/torchscript/torchscript_backend.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "engine/pooling.h"
#include "engine/tokenizer/hf_tokenizer.h"

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

// The tokenizer of a module that tokenizes for itself (a tokenize(List[str]) method giving its
// padded ids and mask): one text at a time, as the module cuts it. It makes no pairs, keeps no
// offsets and cannot decode.
class ModuleTokenizer final : public Tokenizer {
 public:
  explicit ModuleTokenizer(torch::jit::Module module) : module_(std::move(module)) {}

  Encoding Encode(std::string_view text, const EncodeOptions& options) const override {
    // TorchScript strings must be valid UTF-8, which nothing upstream checks.
    const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    for (auto left = static_cast<utf8proc_ssize_t>(text.size()); left > 0;) {
      utf8proc_int32_t cp;
      const utf8proc_ssize_t n = utf8proc_iterate(bytes, left, &cp);
      if (n <= 0) throw TokenizerError(TokenizerErrorCode::kBadUtf8, "text is not valid UTF-8");
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
    Encoding out;
    out.ids.assign(p, p + n);
    if (options.max_length != 0 && out.ids.size() > options.max_length) {
      if (!options.truncate) {
        throw TokenizerError(TokenizerErrorCode::kTooLong, "text has " +
                                                               std::to_string(out.ids.size()) +
                                                               " tokens; the model takes at most " +
                                                               std::to_string(options.max_length));
      }
      out.ids.resize(options.max_length);
      out.truncated = true;
    }
    return out;
  }
  Encoding EncodePair(std::string_view, std::string_view, const EncodeOptions&) const override {
    BadConfig("this model's module tokenizes single texts; it takes no pairs");
  }
  std::string Decode(std::span<const std::int32_t>, bool) const override {
    BadConfig("this model's module cannot decode token ids");
  }
  std::size_t vocab_size() const override { return 0; }
  std::string_view IdToToken(std::int32_t) const override { return {}; }
  std::optional<std::int32_t> TokenToId(std::string_view) const override { return std::nullopt; }
  bool IsSpecial(std::int32_t) const override { return false; }
  std::size_t max_length() const override { return 0; }

 private:
  torch::jit::Module module_;
};

class TorchScriptBackend final : public Backend {
 public:
  TorchScriptBackend(torch::jit::Module module, torch::Device device, int threads)
      : module_(std::move(module)), device_(device), threads_(threads) {}

  std::int64_t dim() const override { return dim_; }

  std::uint64_t memory_bytes() const override {
    std::uint64_t bytes = 0;
    for (const auto& p : module_.parameters()) bytes += p.nbytes();
    for (const auto& b : module_.buffers()) bytes += b.nbytes();
    return bytes;
  }

  // The module cuts for itself (tokenize()), or takes what its tokenizer files give.
  std::size_t max_length() const override { return 1'000'000; }

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
  void Warm(const Tokenizer& tokenizer) {
    const auto ids = tokenizer.Encode("ember warm-up", {}).ids;
    for (int i = 0; i < 2; ++i) {
      dim_ = static_cast<std::int64_t>(Embed(TokenBatch::Of({ids, ids})).size() / 2);
    }
  }

 private:
  torch::jit::Module module_;
  torch::Device device_;
  int threads_;
  std::int64_t dim_ = 0;
};

}  // namespace

Model LoadTorchScript(const std::filesystem::path& path, const TorchOptions& options) {
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
    Model model;
    if (module.find_method("tokenize")) {
      model.tokenizer = std::make_unique<ModuleTokenizer>(module);
    } else {
      // A module taking (input_ids, attention_mask): its tokenizer files (tokenizer.json or
      // vocab.txt) sit beside it.
      model.tokenizer = HfTokenizer::FromDirectory(path.parent_path());
    }
    auto backend = std::make_unique<TorchScriptBackend>(std::move(module), device, options.threads);
    backend->Warm(*model.tokenizer);
    model.backend = std::move(backend);
    return model;
  } catch (const c10::Error& e) {
    throw std::runtime_error(where + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(where + e.what());
  }
}

}  // namespace ember::engine
