#include "engine/roberta/roberta_family.h"

namespace ember::engine {

EncoderSpec ParseRobertaFamily(const config_json::Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  if (auto it = j.find("position_embedding_type"); it != j.end() && *it != "absolute") {
    Fail(file.string() + ": position_embedding_type " + it->dump() + " is not supported");
  }
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = j.value("model_type", "roberta");
  ReadShape(j, file, c);
  // transformers' RobertaConfig defaults: pad_token_id 1, type_vocab_size 2 (the checkpoints
  // all say 1), layer_norm_eps 1e-12 (they say 1e-5).
  const int64_t pad = j.contains("pad_token_id") ? IntAtLeast(j, "pad_token_id", file, 0) : 1;
  c.pad_id = pad;
  c.position_offset = pad + 1;
  if (c.max_pos <= c.position_offset) {
    Fail(file.string() + ": max_position_embeddings " + std::to_string(c.max_pos) +
         " leaves no position after padding_idx " + std::to_string(pad));
  }
  if (j.contains("type_vocab_size")) c.type_vocab = PositiveInt(j, "type_vocab_size", file);
  ReadPositive(j, "layer_norm_eps", file, c.eps);
  if (auto it = j.find("hidden_act"); it != j.end()) c.act = ParseActivation(*it, file);
  if (IsSequenceClassifier(j)) c.labels = Labels(j, file);
  spec.layout.base_prefix = "roberta.";
  spec.layout.head_dense = "classifier.dense";
  spec.layout.head_out = "classifier.out_proj";
  spec.layout.head_dense_in_base = false;
  return spec;
}

}  // namespace ember::engine
