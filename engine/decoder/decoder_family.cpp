#include "engine/decoder/decoder_family.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ember::engine {
namespace {

using config_json::BoolOr;
using config_json::Fail;
using config_json::Json;

// The value at `key` unless it is absent or null.
const Json* Find(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// rope_theta: the hub config's key, or transformers 5's rope_parameters (default rope_type
// only); a scaled RoPE (rope_scaling: yarn, dynamic, linear, llama3) is refused.
double RopeTheta(const Json& j, const std::filesystem::path& file, double fallback) {
  if (const Json* scaling = Find(j, "rope_scaling")) {
    Fail(file.string() + ": rope_scaling " + scaling->dump() +
         " is not supported (default RoPE only)");
  }
  double theta = fallback;
  if (const Json* params = Find(j, "rope_parameters"); params != nullptr && params->is_object()) {
    if (const Json* type = Find(*params, "rope_type"); type != nullptr && *type != "default") {
      Fail(file.string() + ": rope_parameters.rope_type " + type->dump() +
           " is not supported (default RoPE only)");
    }
    config_json::ReadPositive(*params, "rope_theta", file, theta);
  }
  config_json::ReadPositive(j, "rope_theta", file, theta);
  return theta;
}

}  // namespace

EncoderSpec ParseDecoderFamily(const Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  const std::string type = j.at("model_type").get<std::string>();
  if (IsSequenceClassifier(j)) {
    Fail(file.string() + ": " + j["architectures"].dump() +
         " (a decoder classifier or reranker) is not served; " + type +
         " embedding models are (docs/models.md)");
  }
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = type;
  ReadShape(j, file, c);
  c.type_vocab = 1;
  c.pre_norm = true;
  c.norm = EncoderConfig::Norm::kRms;
  c.gated_ffn = true;
  c.act = Activation::kSilu;
  if (const Json* act = Find(j, "hidden_act")) c.act = ParseActivation(*act, file);
  c.eps = 1e-6;
  ReadPositive(j, "rms_norm_eps", file, c.eps);
  c.kv_heads = Find(j, "num_key_value_heads") ? PositiveInt(j, "num_key_value_heads", file) : 0;
  if (c.kv_heads > 0 && c.heads % c.kv_heads != 0) {
    Fail(file.string() + ": num_key_value_heads " + std::to_string(c.kv_heads) +
         " does not divide num_attention_heads " + std::to_string(c.heads));
  }
  if (Find(j, "head_dim")) c.head_dim = PositiveInt(j, "head_dim", file);
  if (c.head_size() % 2 != 0) {
    Fail(file.string() + ": head size " + std::to_string(c.head_size()) +
         " is odd; RoPE rotates pairs of dims");
  }
  c.rope_theta = RopeTheta(j, file, type == "mistral" ? 10000.0 : 1000000.0);
  c.causal = BoolOr(j, "is_causal", file, true);
  c.qk_norm = type == "qwen3";
  // Which layers attend within sliding_window: transformers 5's layer_types where the config
  // has them; else Mistral's every layer where sliding_window is set, Qwen's layers from
  // max_window_layers on where use_sliding_window is true (how transformers derives layer_types).
  std::vector<bool> sliding(static_cast<size_t>(c.layers), false);
  if (auto types = SlidingLayerTypes(j, file, c.layers)) {
    sliding = std::move(*types);
  } else if (type == "mistral") {
    sliding.assign(sliding.size(), Find(j, "sliding_window") != nullptr);
  } else if (BoolOr(j, "use_sliding_window", file, false)) {
    const int64_t from =
        Find(j, "max_window_layers") ? IntAtLeast(j, "max_window_layers", file, 0) : c.layers;
    for (int64_t i = from; i < c.layers; ++i) sliding[static_cast<size_t>(i)] = true;
  }
  if (std::find(sliding.begin(), sliding.end(), true) != sliding.end()) {
    // HF's window: a query sees the keys after q - sliding_window, itself and W - 1 before it.
    c.sliding_window = PositiveInt(j, "sliding_window", file) - 1;
    if (c.sliding_window > 0) c.sliding_layer = std::move(sliding);
  }

  EncoderLayout& l = spec.layout;
  l.base_prefix = "model.";
  l.word_embeddings = "embed_tokens";
  l.embedding_ln = "";
  l.layer_prefix = "layers.";
  l.query = "self_attn.q_proj";
  l.key = "self_attn.k_proj";
  l.value = "self_attn.v_proj";
  l.attn_out = "self_attn.o_proj";
  l.attn_ln = "input_layernorm";
  l.gate = "mlp.gate_proj";
  l.inter = "mlp.up_proj";
  l.out = "mlp.down_proj";
  l.ffn_ln = "post_attention_layernorm";
  l.final_ln = "norm";
  if (c.qk_norm) {
    l.q_norm = "self_attn.q_norm";
    l.k_norm = "self_attn.k_norm";
  }
  l.token_type_embeddings = false;
  l.norm_bias = false;
  // Qwen2's query, key and value projections always have biases; Qwen3's and Mistral's none
  // unless attention_bias says so (Qwen3Config's key). No bias on the output projection or the
  // feed-forward.
  l.attention_bias = type == "qwen2" || BoolOr(j, "attention_bias", file, false);
  l.attn_out_bias = type != "qwen2" && l.attention_bias;
  l.ffn_bias = false;
  return spec;
}

}  // namespace ember::engine
