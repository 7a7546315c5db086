#include "engine/modernbert/modernbert_family.h"

#include <string>

namespace ember::engine {
namespace {

using config_json::Fail;
using config_json::Json;

// The rope_theta of one layer type: transformers 5's rope_parameters[type] (default rope_type
// only), else the hub config's key, else ModernBertConfig's default.
double RopeTheta(const Json& j, const char* layer_type, const char* legacy_key, double fallback,
                 const std::filesystem::path& file) {
  double theta = fallback;
  if (const auto params = j.find("rope_parameters"); params != j.end() && params->is_object()) {
    if (const auto p = params->find(layer_type); p != params->end() && p->is_object()) {
      if (const auto type = p->find("rope_type"); type != p->end() && *type != "default") {
        Fail(file.string() + ": rope_parameters." + layer_type + ".rope_type " + type->dump() +
             " is not supported (default RoPE only)");
      }
      config_json::ReadPositive(*p, "rope_theta", file, theta);
      return theta;
    }
  }
  if (const auto it = j.find(legacy_key); it != j.end() && !it->is_null()) {
    config_json::ReadPositive(j, legacy_key, file, theta);
  }
  return theta;
}

}  // namespace

EncoderSpec ParseModernBertFamily(const Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = "modernbert";
  if (IsSequenceClassifier(j)) {
    // ModernBertForSequenceClassification: pooling, then head.dense, its activation and
    // head.norm, then classifier (ModernBertPredictionHead).
    c.labels = Labels(j, file);
    const std::string pooling = j.value("classifier_pooling", std::string("cls"));
    if (pooling != "cls" && pooling != "mean") {
      Fail(file.string() + ": classifier_pooling \"" + pooling + "\" is not supported (cls, mean)");
    }
    c.classifier_mean = pooling == "mean";
    const std::string act = j.value("classifier_activation", std::string("gelu"));
    if (act != "gelu") {
      Fail(file.string() + ": classifier_activation \"" + act + "\" is not supported (gelu)");
    }
    c.classifier_gelu = true;
    spec.layout.head_dense = "head.dense";
    spec.layout.head_dense_in_base = false;
    spec.layout.head_dense_bias = BoolOr(j, "classifier_bias", file, false);
    spec.layout.head_norm = "head.norm";
    spec.layout.head_out = "classifier";
  }
  ReadShape(j, file, c);
  c.type_vocab = 1;
  c.pre_norm = true;
  c.gated_ffn = true;
  c.eps = 1e-5;
  ReadPositive(j, "norm_eps", file, c.eps);
  c.act = j.contains("hidden_activation") ? ParseActivation(j["hidden_activation"], file)
                                          : Activation::kGeluErf;
  if (const auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    Fail(file.string() + ": rope_scaling " + it->dump() + " is not supported (default RoPE only)");
  }
  c.rope_theta = RopeTheta(j, "full_attention", "global_rope_theta", 160000.0, file);
  c.sliding_rope_theta = RopeTheta(j, "sliding_attention", "local_rope_theta", 10000.0, file);
  if ((c.hidden / c.heads) % 2 != 0) {
    Fail(file.string() + ": head size " + std::to_string(c.hidden / c.heads) +
         " is odd; RoPE rotates pairs of dims");
  }
  c.sliding_window =
      (j.contains("local_attention") ? PositiveInt(j, "local_attention", file) : 128) / 2;
  c.sliding_layer.assign(static_cast<size_t>(c.layers), false);
  if (auto types = SlidingLayerTypes(j, file, c.layers)) {
    c.sliding_layer = std::move(*types);
  } else {
    const int64_t every = j.contains("global_attn_every_n_layers")
                              ? PositiveInt(j, "global_attn_every_n_layers", file)
                              : 3;
    for (int64_t i = 0; i < c.layers; ++i) c.sliding_layer[static_cast<size_t>(i)] = i % every != 0;
  }
  EncoderLayout& l = spec.layout;
  l.base_prefix = "model.";
  l.word_embeddings = "embeddings.tok_embeddings";
  l.embedding_ln = "embeddings.norm";
  l.layer_prefix = "layers.";
  l.qkv = "attn.Wqkv";
  l.attn_out = "attn.Wo";
  l.attn_ln = "attn_norm";
  l.inter = "mlp.Wi";
  l.out = "mlp.Wo";
  l.ffn_ln = "mlp_norm";
  l.final_ln = "final_norm";
  l.token_type_embeddings = false;
  l.attention_bias = BoolOr(j, "attention_bias", file, false);
  l.attn_out_bias = l.attention_bias;
  l.ffn_bias = BoolOr(j, "mlp_bias", file, false);
  l.norm_bias = BoolOr(j, "norm_bias", file, false);
  return spec;
}

}  // namespace ember::engine
