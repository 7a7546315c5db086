#include "worker/torchscript_backend.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/script.h>

#include <cstring>
#include <stdexcept>

namespace ember::worker {
namespace {

class TorchScriptBackend final : public Backend {
 public:
  TorchScriptBackend(torch::jit::Module module, torch::Device device, int threads)
      : module_(std::move(module)), device_(device), threads_(threads) {}

  std::int64_t dim() const override { return dim_; }

  std::vector<float> Embed(std::span<const std::string> texts, bool /*truncate*/) override {
    // Modules that tokenize for themselves always truncate to their own
    // maximum length; the truncate flag applies to tokenizer-driven models.
    if (threads_ > 0) {
      // The thread count is an OpenMP setting of the calling thread, and the
      // model runs on the runner's thread, not the one that loaded it.
      thread_local int applied = 0;
      if (applied != threads_) {
        at::set_num_threads(threads_);
        applied = threads_;
      }
    }
    torch::InferenceMode inference;
    c10::List<std::string> list;
    list.reserve(texts.size());
    for (const auto& t : texts) list.push_back(t);
    auto encoded = module_.get_method("tokenize")({list}).toTuple();
    const auto ids = encoded->elements().at(0).toTensor().to(device_);
    const auto mask = encoded->elements().at(1).toTensor().to(device_);
    const auto out =
        module_.forward({ids, mask}).toTensor().to(torch::kCPU, torch::kFloat).contiguous();
    if (out.dim() != 2 || out.size(0) != static_cast<std::int64_t>(texts.size())) {
      throw std::runtime_error("model returned a tensor of shape " + c10::str(out.sizes()) +
                               " for " + std::to_string(texts.size()) + " texts");
    }
    std::vector<float> result(static_cast<std::size_t>(out.numel()));
    std::memcpy(result.data(), out.data_ptr<float>(), result.size() * sizeof(float));
    return result;
  }

  void Warm() {
    const std::string probe = "ember warm-up";
    dim_ = 0;
    const auto v = Embed(std::span<const std::string>(&probe, 1), true);
    dim_ = static_cast<std::int64_t>(v.size());
  }

 private:
  torch::jit::Module module_;
  torch::Device device_;
  int threads_;
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
    if (!module.find_method("tokenize")) {
      throw std::runtime_error("module has no tokenize(texts) method");
    }
    auto backend = std::make_unique<TorchScriptBackend>(std::move(module), device, options.threads);
    backend->Warm();
    return backend;
  } catch (const c10::Error& e) {
    throw std::runtime_error(where + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(where + e.what());
  }
}

}  // namespace ember::worker
