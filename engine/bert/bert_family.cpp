#include "engine/bert/bert_family.h"

namespace ember::engine {

EncoderSpec ParseBertFamily(const config_json::Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  if (auto it = j.find("position_embedding_type"); it != j.end() && *it != "absolute") {
    Fail(file.string() + ": position_embedding_type " + it->dump() + " is not supported");
  }
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = "bert";
  ReadShape(j, file, c);
  if (j.contains("type_vocab_size")) c.type_vocab = PositiveInt(j, "type_vocab_size", file);
  ReadPositive(j, "layer_norm_eps", file, c.eps);
  if (auto it = j.find("hidden_act"); it != j.end()) c.act = ParseActivation(*it, file);
  if (IsSequenceClassifier(j)) c.labels = Labels(j, file);
  spec.layout.base_prefix = "bert.";
  return spec;
}

}  // namespace ember::engine
