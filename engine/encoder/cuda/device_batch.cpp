#include "engine/encoder/cuda/device_batch.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>

#include "engine/encoder/cuda/aten_kernels.h"  // KernelType
#include "engine/encoder/cuda/cuda_kernels.h"
#include "engine/encoder/positions.h"

namespace ember::engine::cuda {

DeviceBatch ToDevice(const TokenBatch& batch, at::Device device, std::int64_t pad_id) {
  DeviceBatch d;
  d.tokens = static_cast<std::int64_t>(batch.tokens());
  d.sequences = static_cast<std::int64_t>(batch.size());
  d.max_len = static_cast<std::int64_t>(batch.max_length());
  at::Tensor host = at::empty({2 * d.tokens + d.sequences + 1},
                              at::TensorOptions().dtype(at::kInt).pinned_memory(true));
  std::int32_t* const ids = host.data_ptr<std::int32_t>();
  std::memcpy(ids, batch.ids().data(), sizeof(std::int32_t) * static_cast<size_t>(d.tokens));
  for (size_t i = 0; i < batch.size(); ++i) {
    PositionRows(batch.sequence(i), 0, pad_id, ids + d.tokens + batch.offsets()[i]);
  }
  std::memcpy(ids + 2 * d.tokens, batch.offsets().data(),
              sizeof(std::int32_t) * static_cast<size_t>(d.sequences + 1));
  d.buffer = host.to(device, /*non_blocking=*/true);
  d.ids = d.buffer.data_ptr<std::int32_t>();
  d.positions = d.ids + d.tokens;
  d.cu_seqlens = d.buffer.narrow(0, 2 * d.tokens, d.sequences + 1);
  return d;
}

std::vector<float> CopyToHost(const at::Tensor& rows) {
  at::Tensor result =
      at::empty(rows.sizes(), at::TensorOptions().dtype(at::kFloat).pinned_memory(true));
  result.copy_(rows, /*non_blocking=*/true);
  // The pinned buffer comes back to the caching host allocator, which reuses it for a later
  // batch once its copy is done.
  at::cuda::CUDAEvent done(cudaEventBlockingSync | cudaEventDisableTiming);
  done.record(c10::cuda::getCurrentCUDAStream(rows.device().index()));
  done.synchronize();
  const float* p = result.data_ptr<float>();
  return std::vector<float>(p, p + result.numel());
}

std::vector<float> PoolToHost(const at::Tensor& rows, const DeviceBatch& in, Pooling pooling,
                              bool normalize) {
  const at::Tensor pooled =
      at::empty({in.sequences, rows.size(1)}, rows.options().dtype(at::kFloat));
  PoolRows(KernelType(rows.scalar_type()), rows.data_ptr(), rows.size(1),
           in.cu_seqlens.data_ptr<std::int32_t>(), in.sequences, pooling, normalize,
           pooled.data_ptr<float>(), c10::cuda::getCurrentCUDAStream(rows.device().index()));
  return CopyToHost(pooled);
}

}  // namespace ember::engine::cuda
