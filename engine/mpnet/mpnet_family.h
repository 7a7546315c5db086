// The MPNet family (model_type "mpnet": all-mpnet-base-v2, multi-qa-mpnet-base-dot-v1,
// paraphrase-mpnet-base-v2, ...): config.json to an EncoderSpec. The layers are BERT's with
// their own names (attention.attn.q/k/v/o, attention.LayerNorm); what differs is
//  - positions: RoBERTa's (engine/roberta/roberta_family.h) with padding_idx 1, which HF's
//    MPNetEmbeddings fixes whatever pad_token_id says;
//  - no token type embeddings: a pair is one segment;
//  - a relative attention bias shared by the layers (EncoderConfig::relative_buckets);
//  - the classifier head (MPNetClassificationHead): classifier.dense, tanh,
//    classifier.out_proj, outside the base model ("mpnet.").
#ifndef EMBER_ENGINE_MPNET_MPNET_FAMILY_H_
#define EMBER_ENGINE_MPNET_MPNET_FAMILY_H_

#include <filesystem>

#include "engine/encoder/config_json.h"
#include "engine/encoder/encoder_config.h"

namespace ember::engine {

EncoderSpec ParseMpnetFamily(const config_json::Json& config, const std::filesystem::path& file);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_MPNET_MPNET_FAMILY_H_
