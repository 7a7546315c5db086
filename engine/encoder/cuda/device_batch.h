// A batch's way onto the device and its vectors' way back, for the packed CUDA forwards
// (cuda_encoder.h, cuda_decoder.h): both on the calling thread's current CUDA stream.
#ifndef EMBER_ENGINE_ENCODER_CUDA_DEVICE_BATCH_H_
#define EMBER_ENGINE_ENCODER_CUDA_DEVICE_BATCH_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "engine/pooling.h"
#include "engine/token_batch.h"

namespace ember::engine::cuda {

// The token ids, each token's position in its own sequence and the offsets (flash attention's
// cu_seqlens) of a batch, on the device: one int32 buffer, filled in page-locked memory and
// copied in one asynchronous transfer (the caching host allocator keeps the host side until the
// copy is done). Positions are 0, 1, ... per sequence, except in RoBERTa's scheme (pad_id >= 0,
// positions.h): a padding token typed in a text takes -1 (the table row before a sequence's
// first) and does not count for the tokens after it.
struct DeviceBatch {
  at::Tensor buffer;  // int32 [2 tokens + sequences + 1]: ids, positions, offsets
  const std::int32_t* ids = nullptr;
  const std::int32_t* positions = nullptr;
  at::Tensor cu_seqlens;  // int32 [sequences + 1], a view of buffer
  std::int64_t tokens = 0, sequences = 0, max_len = 0;

  // buffer's positions as a tensor, int32 [tokens].
  at::Tensor position_tensor() const { return buffer.narrow(0, tokens, tokens); }
};

DeviceBatch ToDevice(const TokenBatch& batch, at::Device device, std::int64_t pad_id = -1);

// rows (float32, contiguous, on the device) copied to the host once the current stream has
// computed them. The wait is on a blocking-sync event for this stream alone, yielding the core
// meanwhile: the worker's tokenizer threads need the cores while the GPU computes.
std::vector<float> CopyToHost(const at::Tensor& rows);

// Every sequence of `in` pooled from rows [in.tokens, hidden] (the compute dtype, on the
// device) by the PoolRows kernel (kMean or kCls) and, if normalize, L2-normalised: float32
// [in.sequences x hidden] on the host, as CopyToHost. The CUDA encoder's and decoder's pooling.
std::vector<float> PoolToHost(const at::Tensor& rows, const DeviceBatch& in, Pooling pooling,
                              bool normalize);

}  // namespace ember::engine::cuda

#endif  // EMBER_ENGINE_ENCODER_CUDA_DEVICE_BATCH_H_
