// An encoder-only text model (the families of engine/encoder/encoder_families.h: BERT,
// RoBERTa / XLM-R / CamemBERT) with sentence-transformers pooling, on LibTorch.
//
// Loads a HuggingFace-style folder as downloaded from sentence-transformers
// (e.g. all-MiniLM-L6-v2, multilingual-e5-small): config.json (its model_type picks the family),
// model.safetensors (F32/F16/BF16; stored weights are converted to float32) and, if present,
// modules.json, 1_Pooling/config.json and sentence_bert_config.json. Tensor names may carry the
// family's base prefix ("bert.", "roberta."); a BERT pooler is unused but by a classifier.
//
// This header is free of LibTorch so that including it stays cheap.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/load_progress.h"
#include "engine/pooling.h"
#include "engine/token_batch.h"

namespace ember::engine {

// Compute precision of the encoder's dense layers (config.toml `precision`, docs/models.md).
enum class Precision {
  kFp32,  // everything in float32 (default; matches the float64 reference to ~1e-7)
  kBf16,  // CPU: bfloat16 weights and GEMMs (oneDNN), float32 residual stream, LayerNorm,
          // attention, GELU and pooling. CUDA: the whole forward in bfloat16.
  kFp16,  // CUDA only: the whole forward in float16. Refused on CPU.
  kInt8,  // CPU only: int8 weights (per output channel) with dynamic per-batch int8
          // activations (LibTorch's quantized::linear_dynamic, oneDNN engine); rest float32.
};

// "fp32", "bf16", "fp16", "int8"; nullopt for anything else.
inline std::optional<Precision> ParsePrecision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16") return Precision::kFp16;
  if (text == "int8") return Precision::kInt8;
  return std::nullopt;
}
inline const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kInt8:
      return "int8";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

struct EncoderOptions {
  std::string device = "cpu";  // anything torch::Device parses: "cpu", "cuda", "cuda:1"
  Pooling pooling = Pooling::kAuto;
  bool normalize = true;  // L2-normalise each embedding
  // > 0: at::set_num_threads(threads) when loading and, once per thread, in every
  // thread that calls Embed (the OpenMP part of the setting is per thread). 0: leave as is.
  int threads = 0;
  // Load throws std::runtime_error naming the precision if this build / device cannot run it
  // (fp16 on CPU, int8 on CUDA or without LibTorch's oneDNN quantized engine, bf16 without
  // oneDNN on CPU).
  Precision precision = Precision::kFp32;
  // The device's own packed encoder, the default and faster path: on CPU for fp32 and bf16
  // (cpu_encoder.h; bf16 only in builds with oneDNN), on CUDA for fp32, fp16 and bf16
  // (cuda/cuda_encoder.h; in builds whose LibTorch has CUDA).
  // false runs the same forward as ATen ops, padded and masked: kept as the reference it is
  // tested against and as the benchmarks' baseline (config.toml `encoder = "aten"`). int8
  // always runs the ATen forward.
  bool fused = true;
  // The CUDA encoder only: its LayerNorms one warp per row (the default: passed its CUDA tests
  // on an H200 and measured 1-4% faster) or one block per row (cuda/cuda_kernels.h RowLayout;
  // config.toml `cuda-layernorm = "block"`).
  bool cuda_warp_layernorm = true;
  // The decoders on CUDA (config.toml `cuda-decoder-kernels = true`): with `fused`, the packed
  // decoder forward (cuda/cuda_decoder.h: varlen flash attention, causal or windowed, and
  // ember's RMSNorm, q/k norm + RoPE and SwiGLU kernels); on the ATen forward (fused = false, and
  // ModernBERT's RoPE and GeGLU) those kernels in place of several ATen ops each
  // (cuda/aten_kernels.h). Off by default: written and tested against CPU references without a
  // GPU, not yet run on one; the decoders run the padded ATen forward there until then.
  bool cuda_decoder_kernels = false;
  // Told after each layer is loaded (load_progress.h).
  LoadProgressFn progress{};
};

class EncoderModel {
 public:
  // Throws std::runtime_error with a message naming the file / tensor at fault if
  // the folder is incomplete or inconsistent (missing file or tensor, wrong shape,
  // unsupported dtype or activation, truncated file, bad JSON), or if the device
  // is unavailable.
  static std::unique_ptr<EncoderModel> Load(const std::filesystem::path& dir,
                                            const EncoderOptions& options = {});

  ~EncoderModel();
  EncoderModel(const EncoderModel&) = delete;
  EncoderModel& operator=(const EncoderModel&) = delete;

  // batch: one token-id sequence per text, already framed by the tokenizer ([CLS] ... [SEP],
  // <s> ... </s>; a pair's second segment at TokenBatch::second_start) and at most max_tokens()
  // long. Each
  // sequence attends only to its own tokens, so results do not depend on how texts are batched (up
  // to float rounding). Returns row-major float32 [batch.size() x dim()], pooled and normalised as
  // engine/pooling.h says. Throws std::invalid_argument for an empty or too long sequence or an id
  // outside [0, vocab_size). Safe to call concurrently from several threads.
  std::vector<float> Embed(const TokenBatch& batch) const;
  // The same for sequences given one by one (tests, tools).
  std::vector<float> Embed(const std::vector<std::vector<int32_t>>& ids) const {
    return Embed(TokenBatch::Of(ids));
  }

  // The last hidden state of every token, before pooling: row-major float32 [batch.tokens() x
  // hidden_size], sequence i's rows from batch.offsets()[i] (bge-m3's token-level heads read
  // them, token_heads.h). Not for a classifier (std::logic_error). Throws as Embed.
  std::vector<float> TokenStates(const TokenBatch& batch) const;

  // hidden_size; a classifier's: its number of labels (Embed gives its logits).
  int64_t dim() const;
  // A ...ForSequenceClassification checkpoint's labels, in id order (EncoderConfig::labels):
  // Embed then runs [CLS] through its pooler and classifier and returns the logits, and
  // pooling and normalize do not apply. Empty for an encoder.
  const std::vector<std::string>& labels() const;
  // Bytes held by the weights (as stored for compute, on the device).
  uint64_t memory_bytes() const;
  // Longest input to feed: sentence_bert_config.json max_seq_length if present (capped by
  // max_tokens()), else max_tokens().
  int64_t max_length() const;
  // Hard limit accepted by Embed: the positions the table holds for one sequence
  // (max_position_embeddings, less RoBERTa's padding_idx + 1).
  int64_t max_tokens() const;
  int64_t vocab_size() const;
  // Whether Embed packs the batch's sequences back to back (the fused CPU and CUDA encoders),
  // so that padding costs no compute; the ATen forward pads to the longest.
  bool packs() const;
  Pooling pooling() const;  // resolved, never kAuto
  bool normalize() const;
  std::string device() const;
  Precision precision() const;

 private:
  struct Impl;
  explicit EncoderModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::engine
