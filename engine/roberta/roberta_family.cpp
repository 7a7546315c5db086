#include "engine/roberta/roberta_family.h"

namespace ember::engine {

EncoderSpec ParseRobertaFamily(const config_json::Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  RequireAbsolutePositions(j, file);
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = j.value("model_type", "roberta");
  ReadShape(j, file, c);
  // transformers' RobertaConfig defaults: pad_token_id 1, type_vocab_size 2 (the checkpoints
  // all say 1), layer_norm_eps 1e-12 (they say 1e-5).
  UsePaddingPositions(j.contains("pad_token_id") ? IntAtLeast(j, "pad_token_id", file, 0) : 1, file,
                      c);
  if (j.contains("type_vocab_size")) c.type_vocab = PositiveInt(j, "type_vocab_size", file);
  ReadLayerSettings(j, file, c);
  spec.layout.base_prefix = "roberta.";
  spec.layout.head_dense = "classifier.dense";
  spec.layout.head_out = "classifier.out_proj";
  spec.layout.head_dense_in_base = false;
  return spec;
}

}  // namespace ember::engine
