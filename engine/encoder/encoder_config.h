// A transformer as ember runs it, whatever family's config.json it was read from
// (engine/encoder/encoder_families.h): its shape, its position and token-type scheme, its
// activation, its classifier head, and where its checkpoint keeps each tensor. Encoders (BERT,
// RoBERTa, MPNet, ModernBERT) and the decoder LLMs used as embedders (Qwen2, Qwen3, Mistral:
// RMSNorm, grouped-query and causal attention, SwiGLU) are the same stack of layers with other
// settings. A family's folder
// (engine/bert/, engine/roberta/, ...) holds only the mapping from its config.json and
// checkpoint names to this; the runtime (encoder_model.h) knows no family. Plain data, no
// LibTorch.
#ifndef EMBER_ENGINE_ENCODER_ENCODER_CONFIG_H_
#define EMBER_ENGINE_ENCODER_ENCODER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/encoder/cpu/cpu_kernels.h"

namespace ember::engine {

struct EncoderConfig {
  std::string family;  // config.json's model_type, for messages ("bert", "xlm-roberta", ...)
  int64_t hidden = 0, layers = 0, heads = 0, intermediate = 0, vocab = 0;
  // Rows of the position table (with RoPE: the longest sequence), and the row of a sequence's
  // first token: RoBERTa's positions start at padding_idx + 1 (2 for XLM-R), so 514 rows take
  // 512 tokens.
  int64_t max_pos = 0, position_offset = 0;
  // RoBERTa: the padding id, whose tokens take position padding_idx and leave the others'
  // positions as if they were not there (-1: none; positions are 0, 1, ... + position_offset).
  int64_t pad_id = -1;
  int64_t type_vocab = 2;  // token types; 1: a pair is one segment
  // MPNet: a bias on every layer's attention scores by the bucketed distance from query to key
  // (T5's buckets: 32, exact below 8, logarithmic to 128), read from a table of
  // `relative_buckets` rows, one column per head. 0: none.
  int64_t relative_buckets = 0;
  // ModernBERT's layer: pre-norm (x + f(LayerNorm(x)) for attention and feed-forward, no norm
  // before the first layer's attention, a final LayerNorm after the last layer) instead of
  // BERT's post-norm (LayerNorm(x + f(x))).
  bool pre_norm = false;
  // Rotary position embeddings (RoPE, rotate-half over each head's full width; HF's default
  // rope_type) instead of a position table: rope_theta for global layers, sliding_rope_theta
  // for sliding-window ones. 0: a position table (max_pos rows).
  double rope_theta = 0, sliding_rope_theta = 0;
  // Sliding-window attention: a layer with sliding_layer[i] set attends only to keys at most
  // `sliding_window` positions from the query (ModernBERT: local_attention / 2). Empty: every
  // layer attends globally.
  int64_t sliding_window = 0;
  std::vector<bool> sliding_layer{};
  // The feed-forward's first projection gives 2 x intermediate: act(first half) * second half
  // (ModernBERT's GeGLU, the decoders' SwiGLU), instead of act(all).
  bool gated_ffn = false;
  // Every norm (the layers' and the final one): LayerNorm (mean and variance, weight and bias) or
  // RMSNorm (the decoders': x / sqrt(mean(x^2) + eps) * weight).
  enum class Norm { kLayerNorm, kRms };
  Norm norm = Norm::kLayerNorm;
  // Grouped-query attention: kv_heads key and value heads, each read by heads / kv_heads query
  // heads in turn (0: as many as query heads). head_dim: the width of one head (0: hidden /
  // heads; Qwen3's is its own, so queries may be wider than the hidden state).
  int64_t kv_heads = 0, head_dim = 0;
  // Qwen3: an RMSNorm over each query and key head (weights [head_dim]) before RoPE.
  bool qk_norm = false;
  // A decoder's attention: a token attends to itself and the tokens before it only. false:
  // bidirectional (encoders; gte-Qwen2 and Qwen3 variants whose config sets is_causal false).
  bool causal = false;
  double eps = 1e-12;
  Activation act = Activation::kGeluErf;
  // A ...ForSequenceClassification checkpoint (a cross-encoder or text classifier): its outputs
  // are the classifier head's logits, one per label (id2label in id order, else num_labels'
  // "LABEL_i", else HF's two). Empty: an encoder that embeds.
  std::vector<std::string> labels{};
  // A classifier's head: the mean of the last hidden states instead of the first token's
  // (ModernBERT's classifier_pooling "mean"), and GELU instead of tanh after its dense layer
  // (ModernBERT's classifier_activation).
  bool classifier_mean = false;
  bool classifier_gelu = false;

  // The longest sequence the position table takes.
  int64_t max_tokens() const { return max_pos - position_offset; }
  int64_t head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }
  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  // The widths of a token's queries and of its keys (or values), all heads together.
  int64_t q_width() const { return heads * head_size(); }
  int64_t kv_width() const { return kv_head_count() * head_size(); }
  // Whether layer i attends within the sliding window only (causal: the `sliding_window` tokens
  // before the query).
  bool sliding(int64_t layer) const {
    return layer < static_cast<int64_t>(sliding_layer.size()) &&
           sliding_layer[static_cast<size_t>(layer)];
  }
  // Whether the layers are BERT's (post-norm LayerNorm, position table, no relative bias, plain
  // feed-forward, bidirectional multi-head attention over the whole sequence): what the CUDA
  // encoder runs.
  bool bert_layers() const {
    return !pre_norm && rope_theta == 0 && relative_buckets == 0 && !gated_ffn &&
           sliding_layer.empty() && norm == Norm::kLayerNorm && q_width() == hidden &&
           kv_head_count() == heads && !qk_norm && !causal;
  }
  // Whether the layers are a decoder's (pre-norm RMSNorm, RoPE, a gated feed-forward, no
  // relative bias; grouped-query heads, q/k norms, causal or not, sliding windows all allowed):
  // what the CUDA decoder runs, given a layout it takes (encoder_model.cpp).
  bool decoder_layers() const {
    return pre_norm && norm == Norm::kRms && rope_theta > 0 && gated_ffn && relative_buckets == 0;
  }
};

// Where a family's checkpoint keeps its tensors. The defaults are BERT's names
// (embeddings.word_embeddings, encoder.layer.N.attention.self.query, ...); everything is under
// `base_prefix` in a task model's checkpoint ("bert.", "roberta.") and under none in a bare
// encoder's.
struct EncoderLayout {
  std::string base_prefix;
  // The token embeddings and the norm after them (empty: none, as in a decoder).
  std::string word_embeddings = "embeddings.word_embeddings", embedding_ln = "embeddings.LayerNorm";
  // Layer N's tensors are under layer_prefix + N + ".".
  std::string layer_prefix = "encoder.layer.";
  // The attention's query, key, value and output projections and its LayerNorm (after it in a
  // post-norm layer, before it in a pre-norm one). MPNet's are attention.attn.q/k/v/o and
  // attention.LayerNorm. `qkv`, if set, names one tensor of query, key and value rows
  // (ModernBERT's attn.Wqkv) instead of the three.
  std::string query = "attention.self.query", key = "attention.self.key",
              value = "attention.self.value", qkv, attn_out = "attention.output.dense",
              attn_ln = "attention.output.LayerNorm";
  // The feed-forward's two projections and its LayerNorm. `gate`, if set, names the gate of a
  // gated feed-forward kept apart from `inter` (the decoders' mlp.gate_proj beside up_proj): the
  // runtime joins them as [gate; inter], ModernBERT's one Wi.
  std::string inter = "intermediate.dense", out = "output.dense", ffn_ln = "output.LayerNorm";
  std::string gate;
  // Qwen3's per-head query and key norms (EncoderConfig::qk_norm).
  std::string q_norm, k_norm;
  // Pre-norm: the LayerNorm after the last layer (under the base prefix).
  std::string final_ln;
  // Which tensors have a bias (ModernBERT: none by default; Qwen2: the query, key and value
  // projections only); a missing one adds 0.
  bool attention_bias = true, attn_out_bias = true, ffn_bias = true, norm_bias = true;
  // Whether the checkpoint has embeddings.token_type_embeddings (MPNet has none: type 0 adds 0).
  bool token_type_embeddings = true;
  // The relative attention bias table [relative_buckets, heads], if the config has one.
  std::string relative_attention_bias = "encoder.relative_attention_bias.weight";
  // The classifier head: `head_dense` (tanh after it) then `head_out`, the logits. BERT: the
  // pooler, part of the base model (under the prefix), then "classifier"; RoBERTa's
  // RobertaClassificationHead: "classifier.dense" then "classifier.out_proj", outside it.
  // ModernBERT's: "head.dense" (a bias only with classifier_bias), GELU, then a LayerNorm
  // `head_norm` ("head.norm", with a bias as norm_bias says), then "classifier".
  std::string head_dense = "pooler.dense", head_out = "classifier";
  bool head_dense_in_base = true;
  bool head_dense_bias = true;
  std::string head_norm;  // empty: none
};

struct EncoderSpec {
  EncoderConfig config;
  EncoderLayout layout;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_ENCODER_CONFIG_H_
