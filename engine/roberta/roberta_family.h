// The RoBERTa family (model_type "roberta", "xlm-roberta", "camembert": multilingual-e5,
// bge-m3, paraphrase-multilingual, bge-reranker-v2-m3, ...): config.json to an EncoderSpec.
// The layers are BERT's; what differs is
//  - positions: a token's is padding_idx + 1 + the number of non-padding tokens before it
//    (HF's create_position_ids_from_input_ids), so 514 rows hold 512 tokens, and a typed pad
//    token takes position padding_idx and shifts none;
//  - one token type (type_vocab_size 1): a pair is one segment;
//  - the classifier head (RobertaClassificationHead): classifier.dense, tanh, classifier.out_proj
//    on the <s> token, outside the base model; no pooler.
#ifndef EMBER_ENGINE_ROBERTA_ROBERTA_FAMILY_H_
#define EMBER_ENGINE_ROBERTA_ROBERTA_FAMILY_H_

#include <filesystem>

#include "engine/encoder/config_json.h"
#include "engine/encoder/encoder_config.h"

namespace ember::engine {

EncoderSpec ParseRobertaFamily(const config_json::Json& config, const std::filesystem::path& file);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ROBERTA_ROBERTA_FAMILY_H_
