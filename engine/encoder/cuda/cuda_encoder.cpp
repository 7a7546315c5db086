#include "engine/encoder/cuda/cuda_encoder.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>
#include <stdexcept>
#include <tuple>

#include "engine/encoder/cuda/aten_kernels.h"
#include "engine/encoder/cuda/cuda_kernels.h"

namespace ember::engine {
namespace {

// Self-attention over the packed stream: q, k, v [tokens, heads, head_dim] (views into the QKV
// GEMM's output, last dimension contiguous; q pre-scaled, hence scale 1), cu_seqlens int32
// [sequences + 1] on the device. Returns the context [tokens, heads, head_dim]. Each sequence
// attends only to its own tokens, which is what BERT's padding mask means.
at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& cu_seqlens, int64_t max_len) {
  if (q.scalar_type() == at::kFloat) {
    // Flash attention has no float32 kernel; the memory-efficient one (CUTLASS) does, and takes
    // the packed stream as one "batch" of [1, tokens, heads, head_dim].
    auto out = at::_efficient_attention_forward(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), /*bias=*/std::nullopt, cu_seqlens,
        cu_seqlens, max_len, max_len, /*dropout_p=*/0.0, /*custom_mask_type=*/0,
        /*compute_log_sumexp=*/false, /*scale=*/1.0);
    return std::get<0>(out).squeeze(0);
  }
  auto out = at::_flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, max_len, max_len,
                                          /*dropout_p=*/0.0, /*is_causal=*/false,
                                          /*return_debug_mask=*/false, /*scale=*/1.0);
  return std::get<0>(out);
}

}  // namespace

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

std::vector<float> CudaEncode(const CudaEncoderWeights& w, const TokenBatch& batch, Pooling pooling,
                              bool normalize) {
  const auto seqs = static_cast<int64_t>(batch.size());
  if (seqs == 0) return {};
  const auto tokens = static_cast<int64_t>(batch.tokens());
  const int64_t h = w.hidden, nh = w.heads, hd = h / nh;
  const at::Device device = w.word_emb.device();
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  const cuda::DType dtype = cuda::KernelType(w.word_emb.scalar_type());
  const at::TensorOptions opts = w.word_emb.options();

  // ids, positions and offsets in one page-locked buffer, copied to the device in one
  // asynchronous transfer (the caching host allocator keeps the buffer until it is done).
  at::Tensor host =
      at::empty({2 * tokens + seqs + 1}, at::TensorOptions().dtype(at::kInt).pinned_memory(true));
  int32_t* const ids_h = host.data_ptr<int32_t>();
  int32_t* const pos_h = ids_h + tokens;
  int32_t* const off_h = pos_h + tokens;
  std::memcpy(ids_h, batch.ids().data(), sizeof(int32_t) * static_cast<size_t>(tokens));
  std::memcpy(off_h, batch.offsets().data(), sizeof(int32_t) * static_cast<size_t>(seqs + 1));
  batch.Positions(pos_h);
  const at::Tensor dev = host.to(device, /*non_blocking=*/true);
  const int32_t* ids_d = dev.data_ptr<int32_t>();
  const int32_t* pos_d = ids_d + tokens;
  const at::Tensor cu_seqlens = dev.narrow(0, 2 * tokens, seqs + 1);
  const auto max_len = static_cast<int64_t>(batch.max_length());

  at::Tensor x = at::empty({tokens, h}, opts);
  cuda::EmbedLayerNorm(dtype, ids_d, pos_d, tokens, h, w.word_emb.data_ptr(), w.pos_emb.data_ptr(),
                       w.type_emb0.data_ptr(), w.emb_ln_w.data_ptr(), w.emb_ln_b.data_ptr(), w.eps,
                       x.data_ptr(), stream, w.layernorm);
  for (const CudaEncoderWeights::Layer& l : w.layers) {
    const at::Tensor qkv = at::addmm(l.qkv_b, x, l.qkv_w.t()).view({tokens, 3, nh, hd});
    const at::Tensor ctx =
        Attention(qkv.select(1, 0), qkv.select(1, 1), qkv.select(1, 2), cu_seqlens, max_len)
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
  const at::Tensor pooled = at::empty({seqs, h}, opts.dtype(at::kFloat));
  cuda::PoolRows(dtype, x.data_ptr(), h, cu_seqlens.data_ptr<int32_t>(), seqs, pooling, normalize,
                 pooled.data_ptr<float>(), stream);
  at::Tensor result =
      at::empty({seqs, h}, at::TensorOptions().dtype(at::kFloat).pinned_memory(true));
  result.copy_(pooled, /*non_blocking=*/true);
  // Wait for this batch alone, and yield the core meanwhile (a blocking-sync event, not a
  // spinning stream synchronisation): the worker's tokenizer threads need the cores while
  // the GPU computes. The pinned buffers come back to the caching host allocator, which
  // reuses them for the next batch once their copies are done.
  at::cuda::CUDAEvent done(cudaEventBlockingSync | cudaEventDisableTiming);
  done.record(c10::cuda::getCurrentCUDAStream(device.index()));
  done.synchronize();
  const float* p = result.data_ptr<float>();
  return std::vector<float>(p, p + seqs * h);
}

uint64_t FreeDeviceMemory(int device) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  size_t free = 0, total = 0;
  C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

}  // namespace ember::engine
