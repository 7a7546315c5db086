// The encoder families ember serves, by config.json's model_type: each family's folder
// (engine/bert/, engine/roberta/, engine/mpnet/) maps its config.json and checkpoint names to an
// EncoderSpec, and this picks the family. A model_type not served is refused at load, naming it and
// listing the served ones.
#ifndef EMBER_ENGINE_ENCODER_ENCODER_FAMILIES_H_
#define EMBER_ENGINE_ENCODER_ENCODER_FAMILIES_H_

#include <filesystem>
#include <string>

#include "engine/encoder/encoder_config.h"

namespace ember::engine {

// The spec of the model whose config.json is `file` (model_type; without one, BERT, as
// transformers' oldest checkpoints are). Throws std::runtime_error naming the file and what in
// it is wrong or not served.
EncoderSpec ReadEncoderSpec(const std::filesystem::path& file);

// "bert, camembert, roberta, xlm-roberta", for messages and docs.
std::string ServedModelTypes();

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_ENCODER_FAMILIES_H_
