#include "engine/encoder/encoder_backend.h"

#include <stdexcept>

#include "common/error_code.h"
#include "engine/encoder/sentence_transformers_config.h"
#include "engine/encoder/token_heads.h"

namespace ember::engine {
namespace {

class EncoderBackend final : public Backend {
 public:
  EncoderBackend(std::unique_ptr<EncoderModel> model, std::size_t max_length, bool matryoshka,
                 Prompts prompts, TokenHeads heads)
      : model_(std::move(model)),
        max_length_(max_length),
        matryoshka_(matryoshka),
        prompts_(std::move(prompts)),
        heads_(std::move(heads)) {}

  std::int64_t dim() const override { return model_->dim(); }
  std::uint64_t memory_bytes() const override { return model_->memory_bytes(); }
  // The fused CPU encoder packs a batch's sequences back to back: padding costs nothing there.
  bool pads() const override { return !model_->packs(); }
  // On a GPU two batches in flight, each on a stream of the model's own (EncoderModel's
  // StreamLanes): the next batch's packing and copies overlap the current one's compute.
  int batches_in_flight() const override { return model_->device().starts_with("cuda") ? 2 : 1; }
  bool matryoshka() const override { return matryoshka_; }
  bool normalizes() const override { return model_->normalize(); }
  const Prompts& prompts() const override { return prompts_; }
  const std::vector<std::string>& labels() const override { return model_->labels(); }
  std::size_t max_length() const override { return max_length_; }
  std::size_t vocab_size() const override { return static_cast<std::size_t>(model_->vocab_size()); }

  std::vector<float> Embed(const TokenBatch& batch) override { return model_->Embed(batch); }

  bool sparse() const override { return heads_.sparse(); }
  SparseVectors EmbedSparse(const TokenBatch& batch) override {
    return heads_.Sparse(model_->TokenStates(batch).data(), batch);
  }
  std::int64_t multi_vector_dim() const override { return heads_.multi_vector_dim(); }
  std::vector<float> EmbedMultiVector(const TokenBatch& batch) override {
    return heads_.MultiVector(model_->TokenStates(batch).data(), batch);
  }

 private:
  std::unique_ptr<EncoderModel> model_;
  std::size_t max_length_;
  bool matryoshka_;
  Prompts prompts_;
  TokenHeads heads_;
};

}  // namespace

EncoderLoad ParseEncoderParams(BackendParams params, std::string device, int threads) {
  EncoderLoad load;
  load.model.device = std::move(device);
  load.model.threads = threads;
  if (const auto pooling = params.TakeString("pooling")) {
    if (*pooling == "mean") {
      load.model.pooling = Pooling::kMean;
    } else if (*pooling == "cls") {
      load.model.pooling = Pooling::kCls;
    } else if (*pooling == "last") {
      load.model.pooling = Pooling::kLastToken;
    } else if (*pooling != "auto") {
      throw Error(ErrorCode::kBadRequest,
                  "pooling = \"" + *pooling + "\": expected auto, mean, cls or last");
    }
  }
  if (const auto normalize = params.TakeBool("normalize")) load.model.normalize = *normalize;
  if (const auto n = params.TakeInt("max-length", 2, 1'000'000)) {
    load.max_length = static_cast<std::size_t>(*n);
  }
  if (const auto precision = params.TakeString("precision")) {
    const auto parsed = ParsePrecision(*precision);
    if (!parsed) {
      throw Error(ErrorCode::kBadRequest,
                  "precision = \"" + *precision + "\": expected fp32, bf16, fp16 or int8");
    }
    // Whether the device can run it is the load's to say (EncoderModel::Load names the reason).
    load.model.precision = *parsed;
  }
  if (const auto encoder = params.TakeString("encoder")) {
    if (*encoder == "aten") {
      load.model.fused = false;
    } else if (*encoder != "fused") {
      throw Error(ErrorCode::kBadRequest, "encoder = \"" + *encoder + "\": expected fused or aten");
    }
  }
  if (const auto layout = params.TakeString("cuda-layernorm")) {
    if (*layout == "block") {
      load.model.cuda_warp_layernorm = false;
    } else if (*layout != "warp") {
      throw Error(ErrorCode::kBadRequest,
                  "cuda-layernorm = \"" + *layout + "\": expected block or warp");
    }
  }
  if (const auto k = params.TakeBool("cuda-decoder-kernels")) {
    load.model.cuda_decoder_kernels = *k;
  }
  if (const auto m = params.TakeBool("matryoshka")) load.matryoshka = *m;
  if (auto name = params.TakeString("default-prompt-name")) {
    load.default_prompt_name = std::move(*name);
  }
  params.RejectUnused("encoder", kEncoderParams);
  return load;
}

std::unique_ptr<Backend> LoadEncoderBackend(const std::filesystem::path& dir,
                                            const EncoderLoad& load) {
  auto model = EncoderModel::Load(dir, load.model);
  std::size_t max_length = load.max_length;
  // At least [CLS] and [SEP]; never above what the model accepts.
  const auto model_max = static_cast<std::size_t>(model->max_length());
  if (max_length == 0 || max_length > model_max) max_length = model_max;
  if (max_length < 2) {
    throw std::runtime_error("model '" + dir.string() + "': max length " +
                             std::to_string(max_length) + " leaves no room for text");
  }
  SentenceTransformersServing st = ParseSentenceTransformersServing(dir);
  Backend::Prompts prompts{
      .texts = std::move(st.prompts),
      .default_name = load.default_prompt_name.value_or(std::move(st.default_prompt_name))};
  if (!prompts.default_name.empty() && !prompts.texts.contains(prompts.default_name)) {
    throw std::runtime_error("model '" + dir.string() + "': the default prompt '" +
                             prompts.default_name + "' is not one of its prompts");
  }
  // A classifier scores with its own head; token-level heads are an encoder's.
  TokenHeads heads =
      model->labels().empty()
          ? TokenHeads::Load(dir, model->dim(), load.sparse_skip_ids, model->normalize())
          : TokenHeads{};
  return std::make_unique<EncoderBackend>(std::move(model), max_length,
                                          load.matryoshka.value_or(st.truncate_dim),
                                          std::move(prompts), std::move(heads));
}

}  // namespace ember::engine
