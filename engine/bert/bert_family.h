// The BERT family (model_type "bert": BertModel, BertForSequenceClassification; all-MiniLM,
// bge-*-en, e5-*-v2, gte-*, ms-marco cross-encoders): config.json to an EncoderSpec.
// Absolute positions from 0, two token types, the pooler + classifier head.
#ifndef EMBER_ENGINE_BERT_BERT_FAMILY_H_
#define EMBER_ENGINE_BERT_BERT_FAMILY_H_

#include <filesystem>

#include "engine/encoder/config_json.h"
#include "engine/encoder/encoder_config.h"

namespace ember::engine {

EncoderSpec ParseBertFamily(const config_json::Json& config, const std::filesystem::path& file);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_BERT_BERT_FAMILY_H_
