// Reading a model's config.json for its family's parser (engine/encoder/encoder_families.h):
// the checks every family makes, each failure a std::runtime_error naming the file and the key.
#ifndef EMBER_ENGINE_ENCODER_CONFIG_JSON_H_
#define EMBER_ENGINE_ENCODER_CONFIG_JSON_H_

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/encoder/encoder_config.h"

namespace ember::engine::config_json {

using Json = nlohmann::json;

[[noreturn]] void Fail(const std::string& what);
// A JSON file, parsed; fails naming it when it cannot be read or parsed.
Json Read(const std::filesystem::path& path);
// The integer at `key`, at least `min` (fails naming the key when missing or smaller).
int64_t IntAtLeast(const Json& j, const char* key, const std::filesystem::path& file, int64_t min);
inline int64_t PositiveInt(const Json& j, const char* key, const std::filesystem::path& file) {
  return IntAtLeast(j, key, file, 1);
}
// A positive number (layer_norm_eps, ...) if the key is there.
void ReadPositive(const Json& j, const char* key, const std::filesystem::path& file, double& out);
// The boolean at `key`, `fallback` where it is absent or null (fails naming a non-boolean).
bool BoolOr(const Json& j, const char* key, const std::filesystem::path& file, bool fallback);
// transformers 5's layer_types: for each of `layers` layers whether it is "sliding_attention"
// (else "full_attention"; anything else, or another count, fails naming it). nullopt where the
// config has none.
std::optional<std::vector<bool>> SlidingLayerTypes(const Json& j, const std::filesystem::path& file,
                                                   int64_t layers);
// hidden_act as ember's Activation; fails naming an unsupported one.
Activation ParseActivation(const Json& value, const std::filesystem::path& file);
// The shape every family has: hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size, vocab_size, max_position_embeddings (checked: heads divide hidden).
void ReadShape(const Json& j, const std::filesystem::path& file, EncoderConfig& c);
// What every family reads alike after its shape: layer_norm_eps and hidden_act if there, and
// a sequence classifier's labels.
void ReadLayerSettings(const Json& j, const std::filesystem::path& file, EncoderConfig& c);
// Fails unless position_embedding_type is absent or "absolute" (BERT's and RoBERTa's configs
// may ask for relative_key, which ember does not run).
void RequireAbsolutePositions(const Json& j, const std::filesystem::path& file);
// RoBERTa's position scheme (MPNet's too): `pad` is the padding id and a sequence's first
// position pad + 1 (positions.h); fails when max_position_embeddings leaves no position.
void UsePaddingPositions(int64_t pad, const std::filesystem::path& file, EncoderConfig& c);
// Whether `architectures` names a ...ForSequenceClassification model, and its labels in id order
// as HF's PretrainedConfig resolves them (id2label, else num_labels, else two).
bool IsSequenceClassifier(const Json& config);
std::vector<std::string> Labels(const Json& config, const std::filesystem::path& file);

}  // namespace ember::engine::config_json

#endif  // EMBER_ENGINE_ENCODER_CONFIG_JSON_H_
