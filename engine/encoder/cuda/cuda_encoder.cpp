#include "engine/encoder/cuda/cuda_encoder.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "engine/encoder/cuda/aten_kernels.h"
#include "engine/encoder/cuda/cuda_kernels.h"
#include "engine/encoder/cuda/device_batch.h"
#include "engine/encoder/cuda/varlen_attention.h"

namespace ember::engine {

uint64_t CudaEncoderWeights::dense_bytes() const {
  uint64_t bytes = 0;
  for (const Layer& l : layers) {
    for (const at::Tensor* t : {&l.qkv_w, &l.qkv_b, &l.attn_out_w, &l.attn_out_b, &l.inter_w,
                                &l.inter_b, &l.out_w, &l.out_b}) {
      bytes += t->nbytes();
    }
  }
  return bytes;
}

namespace {

cudaStream_t StreamOf(const CudaEncoderWeights& w) {
  return c10::cuda::getCurrentCUDAStream(w.word_emb.device().index()).stream();
}

// The last hidden states of the batch, [tokens, hidden] in the compute dtype.
at::Tensor EncodeRows(const CudaEncoderWeights& w, const cuda::DeviceBatch& in,
                      cudaStream_t stream) {
  const int64_t tokens = in.tokens, h = w.hidden, nh = w.heads, hd = h / nh;
  const cuda::DType dtype = cuda::KernelType(w.word_emb.scalar_type());
  const at::Tensor& cu_seqlens = in.cu_seqlens;

  at::Tensor x = at::empty({tokens, h}, w.word_emb.options());
  cuda::EmbedLayerNorm(dtype, in.ids, in.positions, tokens, h, w.word_emb.data_ptr(),
                       w.pos_emb.data_ptr(), w.type_emb0.data_ptr(), w.emb_ln_w.data_ptr(),
                       w.emb_ln_b.data_ptr(), w.eps, x.data_ptr(), stream, w.layernorm);
  for (const CudaEncoderWeights::Layer& l : w.layers) {
    const at::Tensor qkv = at::addmm(l.qkv_b, x, l.qkv_w.t()).view({tokens, 3, nh, hd});
    const at::Tensor ctx = cuda::VarlenAttention(qkv.select(1, 0), qkv.select(1, 1),
                                                 qkv.select(1, 2), cu_seqlens, in.max_len)
                               .reshape({tokens, h});
    const at::Tensor attn = at::mm(ctx, l.attn_out_w.t());
    cuda::AddLayerNorm(dtype, x.data_ptr(), attn.data_ptr(), l.attn_out_b.data_ptr(),
                       l.ln1_w.data_ptr(), l.ln1_b.data_ptr(), tokens, h, w.eps, stream,
                       w.layernorm);
    const at::Tensor inner = at::mm(x, l.inter_w.t());
    cuda::BiasActivation(dtype, inner.data_ptr(), tokens, w.intermediate, l.inter_b.data_ptr(),
                         w.act, stream);
    const at::Tensor out = at::mm(inner, l.out_w.t());
    cuda::AddLayerNorm(dtype, x.data_ptr(), out.data_ptr(), l.out_b.data_ptr(), l.ln2_w.data_ptr(),
                       l.ln2_b.data_ptr(), tokens, h, w.eps, stream, w.layernorm);
  }
  return x;
}

}  // namespace

std::vector<float> CudaEncode(const CudaEncoderWeights& w, const TokenBatch& batch, Pooling pooling,
                              bool normalize) {
  if (batch.empty()) return {};
  const cuda::DeviceBatch in = cuda::ToDevice(batch, w.word_emb.device(), w.pad_id);
  return cuda::PoolToHost(EncodeRows(w, in, StreamOf(w)), in, pooling, normalize);
}

std::vector<float> CudaEncodeTokens(const CudaEncoderWeights& w, const TokenBatch& batch) {
  if (batch.empty()) return {};
  const cuda::DeviceBatch in = cuda::ToDevice(batch, w.word_emb.device(), w.pad_id);
  return cuda::CopyToHost(EncodeRows(w, in, StreamOf(w)).to(at::kFloat));
}

uint64_t FreeDeviceMemory(int device) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  size_t free = 0, total = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace ember::engine
