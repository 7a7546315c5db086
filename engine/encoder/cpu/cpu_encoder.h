// The float32 encoder forward on CPU, on raw pointers: ember's default CPU path (EncoderModel
// with precision fp32 or bf16 on device "cpu"; docs/performance.md "Fused fp32 path").
//
// Against the same forward written as ATen ops (EncoderOptions::fused = false) it differs in four
// ways; docs/performance.md "Fused fp32 path" measures each:
//  - Sequences are packed, not padded: the rows of all sequences lie back to back, dense
//    layers run on sum(lengths) rows and attention per sequence, so a batch of mixed lengths
//    costs what its tokens cost.
//  - Each layer is 4 GEMMs on weights packed at load with the bias and GELU in their epilogue
//    (packed_dense.h: oneDNN, or the system BLAS), attention on the system BLAS, and 2 fused
//    residual + LayerNorm passes (cpu_kernels.h) on preallocated buffers, instead of ~25 ATen
//    ops with their allocations.
//  - Large batches run in chunks of up to 512 tokens, whose activations stay in cache.
//  - Threads share each op (oneDNN / BLAS / at::parallel_for inside it).
//
// This header is free of LibTorch; the .cpp uses ATen's parallel_for and softmax.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/encoder/cpu/packed_dense.h"
#include "engine/pooling.h"
#include "engine/token_batch.h"

namespace ember::engine {

// A per-head bias on attention scores by the distance from query to key (MPNet;
// engine/encoder/relative_attention_bias.h): head h adds
// table[h * (2 * span - 1) + (key - query) + span - 1] to a score. A null table: none.
struct RelativeBias {
  const float* table = nullptr;
  int64_t span = 0;  // sequences are at most this long
};

// The heads of an attention: `heads` query heads of head_dim floats, and kv_heads key and value
// heads (grouped-query attention: query head i reads key and value head i / (heads / kv_heads);
// kv_heads divides heads).
struct AttentionHeads {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
  int64_t row_width() const { return q_width() + 2 * kv_width(); }  // a row of qkv
};

// Which keys a query sees besides its own sequence's: window > 0, only those at most `window`
// positions away (sliding-window attention); causal, only those at or before it.
struct AttentionMask {
  int64_t window = 0;
  bool causal = false;
};

// The dense layers are owned; the other pointers borrow float32 row-major contiguous tensors
// that the caller keeps alive.
struct CpuEncoderWeights {
  int64_t hidden = 0, intermediate = 0;
  AttentionHeads heads;
  float eps = 1e-12f;
  const float* word_emb = nullptr;          // [vocab, H]
  const uint16_t* word_emb_bf16 = nullptr;  // or the same in bfloat16 (a bf16 checkpoint's)
  // [max_tokens, H]: row t is the position of a sequence's token t (EncoderConfig's
  // position_offset applied); with a padding id, row -1 is a padding token's (positions.h).
  // Null: no position table (RoPE in the layers).
  const float* pos_emb = nullptr;
  int64_t pad_id = -1;
  const float* type_emb0 = nullptr;  // [H]: token type 0 (single texts, a pair's first); or null
  const float* type_emb1 = nullptr;  // [H]: token type 1 (a pair's second); null: none
  // [H]. Null: no norm after the embeddings, and then no position table and no token types
  // either (a decoder): the token embeddings as they are.
  const float* emb_ln_w = nullptr;
  const float* emb_ln_b = nullptr;  // [H]
  RelativeBias relative_bias;
  // EncoderConfig::pre_norm: ln1 before the attention (null in a layer without it), ln2 before
  // the feed-forward, and final_ln after the last layer; else BERT's post-norm.
  bool pre_norm = false;
  // Pre-norm only: every norm an RMSNorm (its weight only) instead of a LayerNorm.
  bool rms_norm = false;
  bool causal = false;                // attention to the tokens at or before each query only
  const float* final_ln_w = nullptr;  // [H]
  const float* final_ln_b = nullptr;  // [H]
  // EncoderConfig::gated_ffn: `inter` gives 2I without activation and GatedActivation applies
  // `act`.
  bool gated_ffn = false;
  Activation act = Activation::kGeluErf;
  struct Layer {
    // H -> heads.row_width(): queries, keys, values; queries pre-scaled by 1/sqrt(hd) (with
    // q_norm: that norm's weights instead).
    PackedDense qkv;
    // Qwen3: RMSNorm weights [head_dim] of each query head and each key head, before RoPE.
    // Null: none.
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    PackedDense attn_out;          // heads.q_width() -> H
    const float* ln1_w = nullptr;  // [H]
    const float* ln1_b = nullptr;  // [H]
    PackedDense inter;             // H -> I, with the activation (gated: H -> 2I, without)
    PackedDense out;               // I -> H
    const float* ln2_w = nullptr;  // [H]
    const float* ln2_b = nullptr;  // [H]
    // RoPE (pos_emb null): cos and sin [max_tokens, hd / 2] of the positions, rotating the
    // queries and keys after qkv (rotary_embedding.h). Null: none.
    const float* rope_cos = nullptr;
    const float* rope_sin = nullptr;
    int64_t window = 0;  // > 0: sliding-window attention (CpuAttention)
  };
  std::vector<Layer> layers;
};

// Embeds the batch's sequences (each non-empty, at most max_pos long, ids in range: the caller
// checks) into out [batch.size() x H], pooled (kMean or kCls) and, if normalize, L2-normalised
// (engine/pooling.h). Uses the calling thread's at::get_num_threads() threads. Safe to call
// concurrently.
void CpuEncode(const CpuEncoderWeights& w, const TokenBatch& batch, Pooling pooling, bool normalize,
               float* out);
// The same forward without pooling: every token's last hidden state into out [batch.tokens() x
// H], sequence i's rows from batch.offsets()[i].
void CpuEncodeTokens(const CpuEncoderWeights& w, const TokenBatch& batch, float* out);

// Self-attention of float32 rows. qkv: [rows, heads.row_width()], each row its queries, keys
// and values (Q already scaled by 1/sqrt(hd)); sequence i occupies rows [starts[i], starts[i] +
// lens[i]). Writes those rows of ctx [rows, heads.q_width()]; other rows are left as they are.
// `bias` is added to the scores before the softmax. Splits (sequence, group of heads) items
// over at::parallel_for.
void CpuAttention(const float* qkv, std::span<const int64_t> starts, std::span<const int64_t> lens,
                  AttentionHeads heads, float* ctx, RelativeBias bias = {},
                  AttentionMask mask = {});

}  // namespace ember::engine
