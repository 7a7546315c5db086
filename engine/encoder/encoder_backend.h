// A Backend for encoder-only text models (every encoder family) in HuggingFace /
// sentence-transformers folders: the LibTorch EncoderModel with the folder's serving settings
// (its limit, prompts, Matryoshka). The folder's tokenizer is opened beside it
// (engine/backend_factory.h). Free of LibTorch includes.
#ifndef EMBER_ENGINE_ENCODER_ENCODER_BACKEND_H_
#define EMBER_ENGINE_ENCODER_ENCODER_BACKEND_H_

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/backend_params.h"
#include "engine/encoder/encoder_model.h"

namespace ember::engine {

struct EncoderLoad {
  EncoderOptions model;
  std::size_t max_length = 0;  // > 0: caps tokens per text below the model's own limit
  // Backend::matryoshka: `matryoshka = true | false`; unset, whether the folder's
  // config_sentence_transformers.json has sentence-transformers' truncate_dim.
  std::optional<bool> matryoshka = std::nullopt;
  // The prompt for requests that name none, overriding the folder's default_prompt_name; it
  // must be one of the folder's prompts.
  std::optional<std::string> default_prompt_name = std::nullopt;
  // The ids a sparse head leaves out (token_heads.h SparseSkipIds; the folder's tokenizer
  // knows them, the loader of both passes them).
  std::vector<std::int32_t> sparse_skip_ids{};
};

// The encoder backend's parameters (a model version's config.toml, docs/models.md):
//   pooling = "auto" | "mean" | "cls"      normalize = true | false
//   max-length = N (2..1000000)            precision = "fp32" | "bf16" | "fp16" | "int8"
//   encoder = "fused" | "aten"             the device's packed encoder (default) or the ATen
//                                          forward (EncoderOptions::fused)
//   cuda-layernorm = "warp" | "block"      EncoderOptions::cuda_warp_layernorm (warp: default)
//   cuda-decoder-kernels = true | false    EncoderOptions::cuda_decoder_kernels (default false)
//   matryoshka = true | false              EncoderLoad::matryoshka (default: the folder's word)
//   default-prompt-name = "query" | ""     EncoderLoad::default_prompt_name (default: the
//                                          folder's default_prompt_name)
// Throws ember::Error (BAD_REQUEST) for a bad value or an unknown key.
inline constexpr char kEncoderParams[] =
    "pooling, normalize, max-length, precision, encoder, cuda-layernorm, cuda-decoder-kernels, "
    "matryoshka, default-prompt-name";
EncoderLoad ParseEncoderParams(BackendParams params, std::string device, int threads);

// Loads `dir` (config.json, model.safetensors, optional sentence-transformers files: pooling,
// Normalize, and config_sentence_transformers.json's prompts, default_prompt_name and
// truncate_dim; an encoder's token-level heads, bge-m3's sparse_linear.pt and
// colbert_linear.pt, token_heads.h). Throws std::runtime_error naming what is missing or wrong.
std::unique_ptr<Backend> LoadEncoderBackend(const std::filesystem::path& dir,
                                            const EncoderLoad& load);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_ENCODER_BACKEND_H_
