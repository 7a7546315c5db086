#include "engine/mpnet/mpnet_family.h"

namespace ember::engine {

EncoderSpec ParseMpnetFamily(const config_json::Json& j, const std::filesystem::path& file) {
  using namespace config_json;
  EncoderSpec spec;
  EncoderConfig& c = spec.config;
  c.family = "mpnet";
  ReadShape(j, file, c);
  UsePaddingPositions(/*pad=*/1, file, c);  // MPNetEmbeddings.padding_idx, whatever the config
  c.type_vocab = 1;
  // MPNetConfig's defaults: 32 buckets, layer_norm_eps 1e-12 (the checkpoints say 1e-5).
  c.relative_buckets = j.contains("relative_attention_num_buckets")
                           ? PositiveInt(j, "relative_attention_num_buckets", file)
                           : 32;
  if (c.relative_buckets < 32) {
    Fail(file.string() + ": relative_attention_num_buckets " + std::to_string(c.relative_buckets) +
         " is under the 32 buckets MPNet's attention looks up");
  }
  ReadLayerSettings(j, file, c);
  EncoderLayout& l = spec.layout;
  l.base_prefix = "mpnet.";
  l.query = "attention.attn.q";
  l.key = "attention.attn.k";
  l.value = "attention.attn.v";
  l.attn_out = "attention.attn.o";
  l.attn_ln = "attention.LayerNorm";
  l.token_type_embeddings = false;
  l.head_dense = "classifier.dense";
  l.head_out = "classifier.out_proj";
  l.head_dense_in_base = false;
  return spec;
}

}  // namespace ember::engine
