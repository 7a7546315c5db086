// What a BERT folder says about its model, read before any weight: config.json (the
// architecture) and the sentence-transformers files beside it (modules.json, the pooling
// config, max_seq_length; config_sentence_transformers.json's prompts and truncate_dim). Plain
// JSON, no LibTorch. Errors throw std::runtime_error naming the file and the key.
#ifndef EMBER_ENGINE_BERT_BERT_CONFIG_H_
#define EMBER_ENGINE_BERT_BERT_CONFIG_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/bert/bert_model.h"
#include "engine/bert/cpu/cpu_kernels.h"

namespace ember::engine {

// config.json (HuggingFace BertConfig) as far as ember uses it.
struct BertConfig {
  int64_t hidden = 0, layers = 0, heads = 0, intermediate = 0, vocab = 0, max_pos = 0;
  int64_t type_vocab = 2;
  double eps = 1e-12;
  Activation act = Activation::kGeluErf;
  // A BertForSequenceClassification checkpoint (a cross-encoder or text classifier): its
  // outputs are the classifier head's logits, one per label (id2label in id order, else
  // num_labels' "LABEL_i", else HF's two). Empty: an encoder (BertModel) that embeds.
  std::vector<std::string> labels{};
};
BertConfig ParseBertConfig(const std::filesystem::path& file);

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

#endif  // EMBER_ENGINE_BERT_BERT_CONFIG_H_
