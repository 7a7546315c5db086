// An encoder-only transformer as ember runs it, whatever family's config.json it was read from
// (engine/encoder/encoder_families.h): its shape, its position and token-type scheme, its
// activation, its classifier head, and where its checkpoint keeps each tensor. A family's folder
// (engine/bert/, engine/roberta/, ...) holds only the mapping from its config.json and
// checkpoint names to this; the runtime (encoder_model.h) knows no family. Plain data, no
// LibTorch.
#ifndef EMBER_ENGINE_ENCODER_ENCODER_CONFIG_H_
#define EMBER_ENGINE_ENCODER_ENCODER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/encoder/cpu/cpu_kernels.h"

namespace ember::engine {

struct EncoderConfig {
  std::string family;  // config.json's model_type, for messages ("bert", "xlm-roberta", ...)
  int64_t hidden = 0, layers = 0, heads = 0, intermediate = 0, vocab = 0;
  // Rows of the position table, and the row of a sequence's first token: RoBERTa's positions
  // start at padding_idx + 1 (2 for XLM-R), so 514 rows take 512 tokens.
  int64_t max_pos = 0, position_offset = 0;
  // RoBERTa: the padding id, whose tokens take position padding_idx and leave the others'
  // positions as if they were not there (-1: none; positions are 0, 1, ... + position_offset).
  int64_t pad_id = -1;
  int64_t type_vocab = 2;  // token types; 1: a pair is one segment
  // MPNet: a bias on every layer's attention scores by the bucketed distance from query to key
  // (T5's buckets: 32, exact below 8, logarithmic to 128), read from a table of
  // `relative_buckets` rows, one column per head. 0: none.
  int64_t relative_buckets = 0;
  double eps = 1e-12;
  Activation act = Activation::kGeluErf;
  // A ...ForSequenceClassification checkpoint (a cross-encoder or text classifier): its outputs
  // are the classifier head's logits, one per label (id2label in id order, else num_labels'
  // "LABEL_i", else HF's two). Empty: an encoder that embeds.
  std::vector<std::string> labels{};

  // The longest sequence the position table takes.
  int64_t max_tokens() const { return max_pos - position_offset; }
};

// Where a family's checkpoint keeps its tensors. Embeddings and layers are named as BERT's
// (embeddings.word_embeddings, encoder.layer.N.attention.self.query, ...), under `base_prefix`
// in a task model's checkpoint ("bert.", "roberta.") and under none in a bare encoder's.
struct EncoderLayout {
  std::string base_prefix;
  // Under "encoder.layer.N.": the attention's query, key, value and output projections and the
  // LayerNorm after it (BERT's names; MPNet's are attention.attn.q/k/v/o, attention.LayerNorm).
  std::string query = "attention.self.query", key = "attention.self.key",
              value = "attention.self.value", attn_out = "attention.output.dense",
              attn_ln = "attention.output.LayerNorm";
  // Whether the checkpoint has embeddings.token_type_embeddings (MPNet has none: type 0 adds 0).
  bool token_type_embeddings = true;
  // The relative attention bias table [relative_buckets, heads], if the config has one.
  std::string relative_attention_bias = "encoder.relative_attention_bias.weight";
  // The classifier head: `head_dense` (tanh after it) then `head_out`, the logits. BERT: the
  // pooler, part of the base model (under the prefix), then "classifier"; RoBERTa's
  // RobertaClassificationHead: "classifier.dense" then "classifier.out_proj", outside it.
  std::string head_dense = "pooler.dense", head_out = "classifier";
  bool head_dense_in_base = true;
};

struct EncoderSpec {
  EncoderConfig config;
  EncoderLayout layout;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_ENCODER_CONFIG_H_
