// The ModernBERT family (model_type "modernbert": answerdotai/ModernBERT-base/large,
// Alibaba-NLP/gte-modernbert-base, nomic-ai/modernbert-embed-base, ...): config.json to an
// EncoderSpec. Against BERT its layers are
//  - pre-norm, the first layer's attention without a norm, a final LayerNorm after the last;
//  - without position table: RoPE on queries and keys, global_rope_theta (160,000) in global
//    layers and local_rope_theta (10,000) in sliding-window ones;
//  - global every global_attn_every_n_layers-th layer (0, 3, 6, ...), else attending to keys
//    at most local_attention / 2 (64) tokens away;
//  - a GeGLU feed-forward (mlp.Wi gives 2 x intermediate_size: act(input) * gate);
//  - without biases by default (attention_bias, mlp_bias, norm_bias), one token type.
// Both config forms are read: the hub's (global_rope_theta, local_rope_theta,
// global_attn_every_n_layers) and transformers 5's (rope_parameters, layer_types).
// ModernBertForSequenceClassification (its head: dense, GELU, LayerNorm, classifier, over CLS
// or mean pooling) is refused by name: not served yet.
#ifndef EMBER_ENGINE_MODERNBERT_MODERNBERT_FAMILY_H_
#define EMBER_ENGINE_MODERNBERT_MODERNBERT_FAMILY_H_

#include <filesystem>

#include "engine/encoder/config_json.h"
#include "engine/encoder/encoder_config.h"

namespace ember::engine {

EncoderSpec ParseModernBertFamily(const config_json::Json& config,
                                  const std::filesystem::path& file);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_MODERNBERT_MODERNBERT_FAMILY_H_
