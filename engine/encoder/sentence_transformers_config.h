// What a sentence-transformers folder says about serving its model, read before any weight:
// modules.json (where the transformer is; the pooling; Normalize), the pooling config,
// max_seq_length, and config_sentence_transformers.json's prompts and truncate_dim. Plain JSON,
// no LibTorch. Errors throw std::runtime_error naming the file and the key.
#ifndef EMBER_ENGINE_ENCODER_SENTENCE_TRANSFORMERS_CONFIG_H_
#define EMBER_ENGINE_ENCODER_SENTENCE_TRANSFORMERS_CONFIG_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/pooling.h"

namespace ember::engine {

// What the sentence-transformers files say, if present.
struct SentenceTransformersConfig {
  std::filesystem::path transformer_dir;  // where config.json and the weights are
  std::optional<Pooling> pooling;
  std::string pooling_problem;  // non-empty if the folder asks for an unsupported pooling
  std::optional<int64_t> max_seq_length;
};
SentenceTransformersConfig ParseSentenceTransformers(const std::filesystem::path& dir);

// What config_sentence_transformers.json says of serving the model (no such file, or not a
// JSON object: nothing): its prompts, the default one, and whether truncate_dim is set.
struct SentenceTransformersServing {
  std::map<std::string, std::string, std::less<>> prompts;  // name -> text put before an input
  std::string default_prompt_name;                          // empty: none
  bool truncate_dim = false;  // the model was meant to be cut (Matryoshka)
};
SentenceTransformersServing ParseSentenceTransformersServing(const std::filesystem::path& dir);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_SENTENCE_TRANSFORMERS_CONFIG_H_
