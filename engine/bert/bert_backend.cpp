#include "engine/bert/bert_backend.h"

#include <stdexcept>

#include "common/error_code.h"
#include "engine/bert/bert_config.h"
#include "engine/tokenizer/tokenizer_error_code.h"
#include "engine/tokenizer/wordpiece_tokenizer.h"

namespace ember::engine {
namespace {

class BertBackend final : public Backend {
 public:
  BertBackend(WordPieceTokenizer tokenizer, std::unique_ptr<BertModel> model,
              std::size_t max_length, bool matryoshka, Prompts prompts)
      : tokenizer_(std::move(tokenizer)),
        model_(std::move(model)),
        max_length_(max_length),
        matryoshka_(matryoshka),
        prompts_(std::move(prompts)) {}

  std::int64_t dim() const override { return model_->dim(); }
  std::uint64_t memory_bytes() const override { return model_->memory_bytes(); }
  // The fused CPU encoder packs a batch's sequences back to back: padding costs nothing there.
  bool pads() const override { return !model_->packs(); }
  // On a GPU two batches in flight, each on a stream of the model's own (BertModel's
  // StreamLanes): the next batch's packing and copies overlap the current one's compute.
  int batches_in_flight() const override { return model_->device().starts_with("cuda") ? 2 : 1; }
  bool matryoshka() const override { return matryoshka_; }
  bool normalizes() const override { return model_->normalize(); }
  const Prompts& prompts() const override { return prompts_; }

  // The tokenizer's own limit may exceed the model's (512 vs a sentence-transformers
  // max_seq_length of 256): truncating, the tokenizer stops at the model's (no piece past it is
  // made); not truncating, a text over it is TOO_LONG, naming its length.
  std::vector<std::int32_t> Tokenize(std::string_view text, bool truncate) const override {
    std::vector<std::int32_t> ids;
    try {
      ids = tokenizer_.Encode(text, truncate, truncate ? max_length_ : 0).ids;
    } catch (const TokenizerError& e) {
      throw Error(ErrorCodeOf(e), e.what());
    }
    if (ids.size() > max_length_) {
      throw Error(ErrorCode::kTooLong, "text has " + std::to_string(ids.size()) +
                                           " tokens; the model takes at most " +
                                           std::to_string(max_length_));
    }
    return ids;
  }

  const std::vector<std::string>& labels() const override { return model_->labels(); }

  // Cut as HF tokenizers cut a pair ("longest_first") to the model's limit.
  PairIds TokenizePair(std::string_view first, std::string_view second,
                       bool truncate) const override {
    if (model_->labels().empty()) return Backend::TokenizePair(first, second, truncate);
    try {
      PairEncoding pair = tokenizer_.EncodePair(first, second, truncate, max_length_);
      return PairIds{std::move(pair.ids), pair.second_start};
    } catch (const TokenizerError& e) {
      throw Error(ErrorCodeOf(e), e.what());
    }
  }

  std::string Decode(std::span<const std::int32_t> ids, bool skip_special) const override {
    try {
      return tokenizer_.Decode(ids, skip_special);
    } catch (const TokenizerError& e) {
      throw Error(ErrorCode::kBadRequest, e.what());
    }
  }

  // Cut to the model's limit as Tokenize cuts.
  TextTokens TokenizeWithOffsets(std::string_view text, bool truncate) const override {
    try {
      OffsetEncoding e = tokenizer_.EncodeWithOffsets(text, truncate, max_length_);
      TextTokens out;
      out.pieces.reserve(e.ids.size());
      out.spans.reserve(2 * e.ids.size());
      for (std::size_t i = 0; i < e.ids.size(); ++i) {
        out.pieces.emplace_back(tokenizer_.IdToToken(e.ids[i]));
        out.spans.push_back(e.spans[i].start);
        out.spans.push_back(e.spans[i].stop);
      }
      out.ids = std::move(e.ids);
      return out;
    } catch (const TokenizerError& e) {
      throw Error(ErrorCodeOf(e), e.what());
    }
  }

  std::vector<float> Embed(const TokenBatch& batch) override { return model_->Embed(batch); }

 private:
  WordPieceTokenizer tokenizer_;
  std::unique_ptr<BertModel> model_;
  std::size_t max_length_;
  bool matryoshka_;
  Prompts prompts_;
};

}  // namespace

BertLoad ParseBertParams(BackendParams params, std::string device, int threads) {
  BertLoad load;
  load.model.device = std::move(device);
  load.model.threads = threads;
  if (const auto pooling = params.TakeString("pooling")) {
    if (*pooling == "mean") {
      load.model.pooling = Pooling::kMean;
    } else if (*pooling == "cls") {
      load.model.pooling = Pooling::kCls;
    } else if (*pooling != "auto") {
      throw Error(ErrorCode::kBadRequest,
                  "pooling = \"" + *pooling + "\": expected auto, mean or cls");
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
    // Whether the device can run it is the load's to say (BertModel::Load names the reason).
    load.model.precision = *parsed;
  }
  if (const auto rule = params.TakeString("lowercase")) {
    if (*rule == "per-word") {
      load.lowercase = LowercaseRule::kPerWord;
    } else if (*rule != "per-character") {
      throw Error(ErrorCode::kBadRequest,
                  "lowercase = \"" + *rule + "\": expected per-character or per-word");
    }
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
  if (const auto m = params.TakeBool("matryoshka")) load.matryoshka = *m;
  if (auto name = params.TakeString("default-prompt-name")) {
    load.default_prompt_name = std::move(*name);
  }
  params.RejectUnused("bert", kBertParams);
  return load;
}

std::unique_ptr<Backend> LoadBertBackend(const std::filesystem::path& dir, const BertLoad& load) {
  auto model = BertModel::Load(dir, load.model);
  WordPieceTokenizer tokenizer = [&] {
    try {
      return WordPieceTokenizer::FromDirectory(dir).WithLowercaseRule(load.lowercase);
    } catch (const std::exception& e) {
      throw std::runtime_error("model '" + dir.string() + "': tokenizer: " + e.what());
    }
  }();
  std::size_t max_length = load.max_length;
  if (tokenizer.vocab_size() > static_cast<std::size_t>(model->vocab_size())) {
    throw std::runtime_error("model '" + dir.string() + "': tokenizer has " +
                             std::to_string(tokenizer.vocab_size()) + " tokens but the model " +
                             std::to_string(model->vocab_size()));
  }
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
  return std::make_unique<BertBackend>(std::move(tokenizer), std::move(model), max_length,
                                       load.matryoshka.value_or(st.truncate_dim),
                                       std::move(prompts));
}

}  // namespace ember::engine
