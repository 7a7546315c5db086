#include "engine/bert/bert_family.h"

namespace ember::engine {

EncoderSpec ParseBertFamily(const config_json::Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  RequireAbsolutePositions(j, file);
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = "bert";
  ReadShape(j, file, c);
  if (j.contains("type_vocab_size")) c.type_vocab = PositiveInt(j, "type_vocab_size", file);
  ReadLayerSettings(j, file, c);
  spec.layout.base_prefix = "bert.";
  return spec;
}

}  // namespace ember::engine
