// The decoder embedders' forward on CUDA (Qwen3, Qwen2, Mistral: issue 37), as the CUDA encoder
// (cuda_encoder.h) runs BERT: the batch as one packed token stream (engine/token_batch.h, whose
// offsets are flash attention's cu_seqlens), so no op ever sees padding, and a 32k-token text
// costs attention memory linear in its length instead of the padded forward's [heads, L, L].
//
// Per layer (pre-norm): RMSNorm (kernel) -> the fused QKV GEMM (cuBLAS; Qwen2's bias in its
// epilogue) -> Qwen3's per-head q/k norms and RoPE at each token's position in its own sequence
// (kernels, in place) -> variable-length attention, causal or not, grouped-query heads read as
// they are stored, Mistral's sliding window -> the output GEMM accumulated onto the residual
// stream (beta = 1: no separate add) -> RMSNorm -> the [gate; up] GEMM -> SwiGLU (kernel) -> the
// down GEMM accumulated onto the residual. Last-token pooling runs the last layer's output
// GEMM, feed-forward and final norm on the pooled rows alone.
//
// Attention: float16 / bfloat16 take LibTorch's variable-length flash kernel, which reads
// grouped keys and values without copies and applies the causal mask and the window per
// sequence; float32 takes the memory-efficient kernel (CUTLASS), with the grouped heads repeated
// and no window (EncoderModel runs a float32 model with sliding-window layers on its ATen forward).
//
// Used only with EncoderOptions::cuda_decoder_kernels (off by default): written and compiled
// without a GPU; tests/cuda_encoder_test.cpp holds it to the fused CPU encoder once one runs it.
#ifndef EMBER_ENGINE_ENCODER_CUDA_CUDA_DECODER_H_
#define EMBER_ENGINE_ENCODER_CUDA_CUDA_DECODER_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "engine/encoder/cpu/cpu_kernels.h"  // Activation
#include "engine/pooling.h"
#include "engine/token_batch.h"

namespace ember::engine {

// Every tensor on one CUDA device, contiguous: dense weights [out, in] (as HF stores them) in
// the compute dtype (float32, float16 or bfloat16); norm weights float32 (the kernels' gamma);
// RoPE tables float32 [max positions, head_dim / 2] (rotary_embedding.h).
struct CudaDecoderWeights {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  float eps = 1e-6f;
  Activation act = Activation::kSilu;
  bool causal = true;
  at::Tensor word_emb;  // [vocab, hidden], compute dtype
  struct Layer {
    at::Tensor ln1_w;         // input_layernorm
    at::Tensor qkv_w, qkv_b;  // [q_width + 2 kv_width, hidden]; bias undefined: none (Qwen3)
    // Qwen3's per-head norms [head_dim] (q_norm_w pre-scaled by 1/sqrt(head_dim)); undefined:
    // none, and the query rows of qkv_w carry that scale instead.
    at::Tensor q_norm_w, k_norm_w;
    at::Tensor out_w;      // o_proj [hidden, q_width]
    at::Tensor ln2_w;      // post_attention_layernorm
    at::Tensor gate_up_w;  // [gate; up] [2 intermediate, hidden]
    at::Tensor down_w;     // [hidden, intermediate]
    at::Tensor rope_cos, rope_sin;
    // > 0: keys at most `window` positions from the query (causal: before it). float16 and
    // bfloat16 only.
    int64_t window = 0;
  };
  std::vector<Layer> layers;
  at::Tensor final_norm_w;

  // Bytes of the dense layers' weights (the embeddings and RoPE tables are the model's own
  // tensors, shared with it).
  uint64_t dense_bytes() const;
};

// Embeds the batch's sequences (each non-empty, within the RoPE tables, ids in range: the caller
// checks) on the calling thread's current CUDA stream of the weights' device, and
// waits for the result on an event of that stream, yielding the core: float32 [batch.size() x
// hidden] on the host, pooled (kMean, kCls or kLastToken) and, if normalize, L2-normalised
// (engine/pooling.h). Throws c10::Error or std::runtime_error on a CUDA failure. Safe to call
// concurrently.
std::vector<float> CudaDecode(const CudaDecoderWeights& w, const TokenBatch& batch, Pooling pooling,
                              bool normalize);

// Every token's last hidden state (after the final norm), float32 [batch.tokens() x hidden] on
// the host, sequence i's rows from batch.offsets()[i] (EncoderModel::TokenStates). As CudaDecode
// otherwise.
std::vector<float> CudaDecodeTokens(const CudaDecoderWeights& w, const TokenBatch& batch);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_CUDA_CUDA_DECODER_H_
