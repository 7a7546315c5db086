// The decoder LLMs served as embedders (model_type "qwen3": Qwen3-Embedding-0.6B/4B/8B; "qwen2":
// gte-Qwen2-1.5B/7B-instruct; "mistral": e5-mistral-7b-instruct, ...): config.json to an
// EncoderSpec, run by the same runtime as the encoders. Against BERT their layers are
//  - pre-norm with RMSNorm (rms_norm_eps), no norm after the embeddings, a final RMSNorm;
//  - without position table: RoPE over each head's full width (rope_theta; default rope_type
//    only, rope_scaling refused by name);
//  - grouped-query attention (num_key_value_heads), heads of head_dim (Qwen3's own, else
//    hidden_size / num_attention_heads), Qwen3's RMSNorm over each query and key head;
//  - causal attention, or bidirectional where the config says `is_causal: false`; Mistral's
//    sliding_window (a query sees itself and the sliding_window - 1 tokens before it);
//  - a SwiGLU feed-forward (mlp.gate_proj, up_proj, down_proj) without biases; Qwen2's query, key
//    and value projections have biases.
// Tensor names are the base model's (embed_tokens, layers.N.self_attn.q_proj, ...), under
// "model." in a ...ForCausalLM checkpoint. Pooling is the folder's (sentence-transformers:
// last token for these models). A ...ForSequenceClassification is refused by name.
#ifndef EMBER_ENGINE_DECODER_DECODER_FAMILY_H_
#define EMBER_ENGINE_DECODER_DECODER_FAMILY_H_

#include <filesystem>

#include "engine/encoder/config_json.h"
#include "engine/encoder/encoder_config.h"

namespace ember::engine {

EncoderSpec ParseDecoderFamily(const config_json::Json& config, const std::filesystem::path& file);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_DECODER_DECODER_FAMILY_H_
