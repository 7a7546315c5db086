// The BERT encoder forward on CUDA, built for the GPU rather than ported to it: ember's default
// path on device "cuda" (EncoderModel with EncoderOptions::fused; docs/cuda.md "The CUDA encoder").
//
// Against the ATen forward (EncoderOptions::fused = false: padded [B, L] batches, the full
// [B, heads, L, L] score matrix, ~100 ops per call) it:
//  - runs the batch as one packed token stream (engine/token_batch.h: offsets are flash
//    attention's cu_seqlens), so no op ever sees padding;
//  - runs attention on that stream with LibTorch's variable-length flash attention kernel
//    (float16 / bfloat16) or its memory-efficient one (float32), never materialising scores;
//  - keeps weights and activations in the compute dtype, with float32 accumulation in the
//    GEMMs (cuBLAS) and in its own kernels;
//  - fuses the element-wise work into kernels of its own (cuda_kernels.h): embeddings +
//    LayerNorm, bias + GELU, bias + residual + LayerNorm, pooling + L2 normalisation;
//    per layer that is 4 GEMMs, 1 attention call and 2 kernels + 1 in place.
// Only the pooled vectors come back to the host.
#ifndef EMBER_ENGINE_ENCODER_CUDA_CUDA_ENCODER_H_
#define EMBER_ENGINE_ENCODER_CUDA_CUDA_ENCODER_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "engine/encoder/cpu/cpu_kernels.h"  // Activation
#include "engine/encoder/cuda/cuda_kernels.h"
#include "engine/pooling.h"
#include "engine/token_batch.h"

namespace ember::engine {

// Every tensor lives on one CUDA device in the compute dtype (float32, float16 or bfloat16),
// contiguous. Dense weights are [out, in] as HF stores them.
struct CudaEncoderWeights {
  int64_t hidden = 0, heads = 0, intermediate = 0;
  float eps = 1e-12f;
  Activation act = Activation::kGeluErf;
  // RoBERTa's padding id (-1: none): a padding token typed in a text takes the table row before
  // pos_emb's first, which must exist (pos_emb a view into the model's whole table).
  int64_t pad_id = -1;
  cuda::RowLayout layernorm = cuda::RowLayout::kWarp;           // cuda_kernels.h
  at::Tensor word_emb, pos_emb, type_emb0, emb_ln_w, emb_ln_b;  // type_emb0: token type 0
  struct Layer {
    at::Tensor qkv_w, qkv_b;  // [3H, H], [3H]: query rows pre-scaled by 1/sqrt(head_dim)
    at::Tensor attn_out_w, attn_out_b, ln1_w, ln1_b;
    at::Tensor inter_w, inter_b, out_w, out_b, ln2_w, ln2_b;
  };
  std::vector<Layer> layers;

  // Bytes of the dense layers' weights and biases (the embeddings and LayerNorms are the
  // model's own tensors, shared with it).
  uint64_t dense_bytes() const;
};

// Embeds the batch's sequences (each non-empty, at most max_pos long, ids in range: the caller
// checks) on the calling thread's current CUDA stream of the weights' device, and waits for
// the result (on an event of that stream, yielding the core): float32 [batch.size() x hidden] on
// the host, pooled and, if normalize, L2-normalised (engine/pooling.h). Throws c10::Error or
// std::runtime_error on a CUDA failure. Safe to call concurrently (on different streams or the
// same).
std::vector<float> CudaEncode(const CudaEncoderWeights& w, const TokenBatch& batch, Pooling pooling,
                              bool normalize);

// Every token's last hidden state, float32 [batch.tokens() x hidden] on the host, sequence i's
// rows from batch.offsets()[i] (EncoderModel::TokenStates: bge-m3's token-level heads). As
// CudaEncode otherwise.
std::vector<float> CudaEncodeTokens(const CudaEncoderWeights& w, const TokenBatch& batch);

// Bytes free on CUDA device `device` (cudaMemGetInfo; what LibTorch's caching allocator holds
// counts as taken). Throws c10::Error on a CUDA failure.
uint64_t FreeDeviceMemory(int device);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_CUDA_CUDA_ENCODER_H_
