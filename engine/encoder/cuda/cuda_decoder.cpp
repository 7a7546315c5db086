#include "engine/encoder/cuda/cuda_decoder.h"

#include <c10/cuda/CUDAStream.h>

#include "engine/encoder/cuda/aten_kernels.h"
#include "engine/encoder/cuda/cuda_kernels.h"
#include "engine/encoder/cuda/device_batch.h"
#include "engine/encoder/cuda/varlen_attention.h"

namespace ember::engine {
namespace {

// RMSNorm of every row of x [rows, hidden] by gamma (float32 [hidden]) into a new tensor.
at::Tensor Norm(const at::Tensor& x, const at::Tensor& gamma, float eps, cudaStream_t stream) {
  const int64_t n = x.size(1);
  at::Tensor out = at::empty_like(x);
  cuda::RmsNorm(cuda::KernelType(x.scalar_type()), x.data_ptr(), out.data_ptr(), n, x.size(0), 1, n,
                gamma.data_ptr<float>(), eps, stream);
  return out;
}

// The last hidden states after the final norm, in the compute dtype: [tokens, hidden], or with
// last_only [sequences, hidden], each sequence's last token's.
at::Tensor DecodeRows(const CudaDecoderWeights& w, const cuda::DeviceBatch& in, bool last_only,
                      cudaStream_t stream) {
  const int64_t nh = w.heads, nkv = w.kv_heads, hd = w.head_dim;
  const int64_t qw = nh * hd, kvw = nkv * hd, n = w.intermediate;
  const cuda::DType dtype = cuda::KernelType(w.word_emb.scalar_type());
  const at::Tensor positions = in.position_tensor();
  // The residual stream, in the compute dtype: the token embeddings as they are (no norm and no
  // position table in a decoder).
  at::Tensor x = at::index_select(w.word_emb, 0, in.buffer.narrow(0, 0, in.tokens));
  // Last-token pooling reads one row per sequence: after the last layer's attention (which
  // needs every token's keys and values) only those rows go on. Sequence i's last token is
  // row offsets[i + 1] - 1.
  const auto count = static_cast<int64_t>(w.layers.size());
  for (int64_t i = 0; i < count; ++i) {
    const CudaDecoderWeights::Layer& l = w.layers[static_cast<size_t>(i)];
    const at::Tensor normed = Norm(x, l.ln1_w, w.eps, stream);
    at::Tensor qkv = l.qkv_b.defined() ? at::addmm(l.qkv_b, normed, l.qkv_w.t())
                                       : at::mm(normed, l.qkv_w.t());  // [tokens, qw + 2 kvw]
    cuda::NormAndRotateHeads(qkv, nh, nkv, hd, l.q_norm_w, l.k_norm_w, w.eps, positions, l.rope_cos,
                             l.rope_sin);
    at::Tensor ctx =
        cuda::VarlenAttention(qkv.narrow(1, 0, qw).view({in.tokens, nh, hd}),
                              qkv.narrow(1, qw, kvw).view({in.tokens, nkv, hd}),
                              qkv.narrow(1, qw + kvw, kvw).view({in.tokens, nkv, hd}),
                              in.cu_seqlens, in.max_len, {.causal = w.causal, .window = l.window})
            .reshape({in.tokens, qw});
    if (last_only && i == count - 1) {
      const at::Tensor rows = in.cu_seqlens.narrow(0, 1, in.sequences).sub(1);
      x = x.index_select(0, rows);
      ctx = ctx.index_select(0, rows);
    }
    x.addmm_(ctx, l.out_w.t());  // x += ctx o_proj^T, the residual added by the GEMM itself
    const at::Tensor gate_up = at::mm(Norm(x, l.ln2_w, w.eps, stream), l.gate_up_w.t());
    at::Tensor act = at::empty({x.size(0), n}, x.options());
    cuda::GatedActivation(dtype, gate_up.data_ptr(), x.size(0), n, w.act, act.data_ptr(), stream);
    x.addmm_(act, l.down_w.t());
  }
  return Norm(x, w.final_norm_w, w.eps, stream);
}

cudaStream_t StreamOf(const CudaDecoderWeights& w) {
  return c10::cuda::getCurrentCUDAStream(w.word_emb.device().index()).stream();
}

}  // namespace

uint64_t CudaDecoderWeights::dense_bytes() const {
  uint64_t bytes = 0;
  for (const Layer& l : layers) {
    for (const at::Tensor* t : {&l.qkv_w, &l.qkv_b, &l.out_w, &l.gate_up_w, &l.down_w}) {
      if (t->defined()) bytes += t->nbytes();
    }
  }
  return bytes;
}

std::vector<float> CudaDecode(const CudaDecoderWeights& w, const TokenBatch& batch, Pooling pooling,
                              bool normalize) {
  const auto seqs = static_cast<int64_t>(batch.size());
  if (seqs == 0) return {};
  const cudaStream_t stream = StreamOf(w);
  const cuda::DeviceBatch in = cuda::ToDevice(batch, w.word_emb.device());
  const bool last_only = pooling == Pooling::kLastToken;
  const at::Tensor x = DecodeRows(w, in, last_only, stream);
  if (!last_only) return cuda::PoolToHost(x, in, pooling, normalize);
  at::Tensor pooled = x.to(at::kFloat);  // already one row per sequence
  if (normalize) {
    pooled.div_(at::linalg_vector_norm(pooled, 2, at::IntArrayRef{1}, /*keepdim=*/true)
                    .clamp_min(kNormalizeEps));
  }
  return cuda::CopyToHost(pooled);
}

std::vector<float> CudaDecodeTokens(const CudaDecoderWeights& w, const TokenBatch& batch) {
  if (batch.empty()) return {};
  const cuda::DeviceBatch in = cuda::ToDevice(batch, w.word_emb.device());
  return cuda::CopyToHost(DecodeRows(w, in, /*last_only=*/false, StreamOf(w)).to(at::kFloat));
}

}  // namespace ember::engine
