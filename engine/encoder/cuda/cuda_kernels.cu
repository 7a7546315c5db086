#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "engine/encoder/cuda/cuda_kernels.h"

namespace ember::engine::cuda {
namespace {

// Loads and stores in the compute dtype; all arithmetic is float32.
__device__ __forceinline__ float Load(const float* p, std::int64_t i) { return p[i]; }
__device__ __forceinline__ float Load(const __half* p, std::int64_t i) {
  return __half2float(p[i]);
}
__device__ __forceinline__ float Load(const __nv_bfloat16* p, std::int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void Store(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void Store(__half* p, std::int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void Store(__nv_bfloat16* p, std::int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets
// it. scratch: 32 floats of shared memory, free again when this returns to all threads.
__device__ float BlockSum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // a previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// out = LayerNorm(row) * gamma + beta for a row in shared memory that each thread wrote at its
// own columns (c = threadIdx.x + k * blockDim.x), so no barrier is needed before the sums.
// Two passes (mean, then squared deviations), as the CPU reference.
template <class T>
__device__ void NormalizeRow(const float* row, std::int64_t n, const T* gamma, const T* beta,
                             float eps, T* out, float* scratch) {
  float s = 0.0f;
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) s += row[c];
  const float mean = BlockSum(s, scratch) / static_cast<float>(n);
  float q = 0.0f;
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float d = row[c] - mean;
    q += d * d;
  }
  const float inv = rsqrtf(BlockSum(q, scratch) / static_cast<float>(n) + eps);
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    Store(out, c, (row[c] - mean) * inv * Load(gamma, c) + Load(beta, c));
  }
}

template <class T>
__global__ void EmbedLayerNormKernel(const std::int32_t* ids, const std::int32_t* positions,
                                     std::int64_t n, const T* word, const T* pos, const T* type0,
                                     const T* gamma, const T* beta, float eps, T* out) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const std::int64_t t = blockIdx.x;
  const T* w = word + static_cast<std::int64_t>(ids[t]) * n;
  const T* p = pos + static_cast<std::int64_t>(positions[t]) * n;
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    row[c] = Load(w, c) + (Load(p, c) + Load(type0, c));
  }
  NormalizeRow(row, n, gamma, beta, eps, out + t * n, scratch);
}

template <class T>
__global__ void AddLayerNormKernel(T* x, const T* y, const T* bias, const T* gamma, const T* beta,
                                   std::int64_t n, float eps) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const std::int64_t r = blockIdx.x;
  T* xr = x + r * n;
  const T* yr = y ? y + r * n : nullptr;
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    float add = 0.0f;
    if (yr) add += Load(yr, c);
    if (bias) add += Load(bias, c);
    row[c] = Load(xr, c) + add;
  }
  NormalizeRow(row, n, gamma, beta, eps, xr, scratch);
}

// RowLayout::kWarp (the default: passed its CUDA tests on an H200, 1-4% faster than kBlock): one
// warp per row, the row in registers.

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The rows a warp LayerNorm normalises, element by element in float32: src(r, c).
template <class T>
struct EmbeddingRows {  // word[ids[r]] + pos[positions[r]] + type0, as EmbedLayerNormKernel
  const std::int32_t* ids;
  const std::int32_t* positions;
  const T* word;
  const T* pos;
  const T* type0;
  std::int64_t n;
  __device__ float operator()(std::int64_t r, std::int64_t c) const {
    return Load(word, ids[r] * n + c) + (Load(pos, positions[r] * n + c) + Load(type0, c));
  }
};
template <class T>
struct SumRows {  // x[r] + (y[r] + bias), y and bias optional, as AddLayerNormKernel
  const T* x;
  const T* y;
  const T* bias;
  std::int64_t n;
  __device__ float operator()(std::int64_t r, std::int64_t c) const {
    float add = 0.0f;
    if (y) add += Load(y, r * n + c);
    if (bias) add += Load(bias, c);
    return Load(x, r * n + c) + add;
  }
};

// out[r] = LayerNorm(src(r, .)) * gamma + beta, one warp per row with the row in registers (K
// elements per lane, n <= 32 * K): no shared memory and no block barrier, and 4 rows per block
// instead of one 128-thread block per row. A warp reads its whole row before it writes any of
// it, so out may be the rows src reads (in place). Two passes, as NormalizeRow.
template <class T, int K, class Rows>
__global__ void LayerNormWarpKernel(Rows src, std::int64_t rows, int n, const T* gamma,
                                    const T* beta, float eps, T* out) {
  const std::int64_t r =
      static_cast<std::int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (r >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x & 31;
  float v[K];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = lane + 32 * k;
    v[k] = c < n ? src(r, c) : 0.0f;
    s += v[k];
  }
  const float mean = WarpSum(s) / static_cast<float>(n);
  float q = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const float d = v[k] - mean;
    if (lane + 32 * k < n) q += d * d;
  }
  const float inv = rsqrtf(WarpSum(q) / static_cast<float>(n) + eps);
  T* o = out + r * n;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int c = lane + 32 * k;
    if (c < n) Store(o, c, (v[k] - mean) * inv * Load(gamma, c) + Load(beta, c));
  }
}

// Launches the warp kernel with the registers per lane chosen from n; false if n > 1024.
template <class T, class Rows>
bool LaunchWarpLayerNorm(const Rows& src, std::int64_t rows, std::int64_t n, const void* gamma,
                         const void* beta, float eps, void* out, cudaStream_t stream) {
  constexpr std::int64_t kWarps = 4;  // rows per block
  const auto blocks = static_cast<unsigned>((rows + kWarps - 1) / kWarps);
  auto launch = [&](auto per_lane) {
    constexpr int K = decltype(per_lane)::value;
    LayerNormWarpKernel<T, K, Rows><<<blocks, 32 * kWarps, 0, stream>>>(
        src, rows, static_cast<int>(n), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        eps, static_cast<T*>(out));
  };
  if (n <= 128) {
    launch(std::integral_constant<int, 4>{});
  } else if (n <= 256) {
    launch(std::integral_constant<int, 8>{});
  } else if (n <= 384) {
    launch(std::integral_constant<int, 12>{});
  } else if (n <= 512) {
    launch(std::integral_constant<int, 16>{});
  } else if (n <= 768) {
    launch(std::integral_constant<int, 24>{});
  } else if (n <= 1024) {
    launch(std::integral_constant<int, 32>{});
  } else {
    return false;
  }
  return true;
}

__device__ __forceinline__ float Activate(float v, Activation act) {
  switch (act) {
    case Activation::kGeluTanh:
      return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case Activation::kRelu:
      return v > 0.0f ? v : 0.0f;
    case Activation::kSilu:
      return v / (1.0f + __expf(-v));
    case Activation::kGeluErf:
      break;
  }
  return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
}

template <class T>
__global__ void BiasActivationKernel(T* y, std::int64_t total, std::int64_t n, const T* bias,
                                     Activation act) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    Store(y, i, Activate(Load(y, i) + Load(bias, i % n), act));
  }
}

template <class T>
__global__ void PoolRowsKernel(const T* hidden, std::int64_t dim, const std::int32_t* offsets,
                               Pooling pooling, bool normalize, float* out) {
  extern __shared__ float vec[];
  __shared__ float scratch[32];
  const std::int64_t i = blockIdx.x;
  const std::int64_t begin = offsets[i], end = offsets[i + 1];
  const bool mean = pooling == Pooling::kMean;
  const std::int64_t first = pooling == Pooling::kLastToken ? end - 1 : begin;
  float sq = 0.0f;
  for (std::int64_t c = threadIdx.x; c < dim; c += blockDim.x) {
    float v = Load(hidden, first * dim + c);
    if (mean) {
      for (std::int64_t t = begin + 1; t < end; ++t) v += Load(hidden, t * dim + c);
      v /= static_cast<float>(end - begin);
    }
    vec[c] = v;
    sq += v * v;
  }
  float scale = 1.0f;
  if (normalize) {
    scale = 1.0f / fmaxf(sqrtf(BlockSum(sq, scratch)), static_cast<float>(kNormalizeEps));
  }
  for (std::int64_t c = threadIdx.x; c < dim; c += blockDim.x) out[i * dim + c] = vec[c] * scale;
}

// One block per (row, group): x's `n` elements at row * ld + group * n, normalised by their
// root mean square and scaled by gamma (float32) into out at the same place.
template <class T>
__global__ void RmsNormKernel(const T* x, T* out, std::int64_t ld, std::int64_t groups,
                              std::int64_t n, const float* gamma, float eps) {
  __shared__ float scratch[32];
  const std::int64_t row = blockIdx.x / groups, group = blockIdx.x % groups;
  const std::int64_t base = row * ld + group * n;
  float sq = 0.0f;
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    const float v = Load(x, base + c);
    sq += v * v;
  }
  const float inv = rsqrtf(BlockSum(sq, scratch) / static_cast<float>(n) + eps);
  for (std::int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    Store(out, base + c, gamma[c] * (Load(x, base + c) * inv));
  }
}

// One thread per (row, head, i < head_dim / 2): the pair (i, i + head_dim / 2) of that head
// rotated by the angle of the row's position.
template <class T>
__global__ void RotateHalfKernel(T* x, std::int64_t ld, std::int64_t rows, std::int64_t heads,
                                 std::int64_t head_dim, const std::int32_t* positions,
                                 const float* cos, const float* sin) {
  const std::int64_t half = head_dim / 2, total = rows * heads * half;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += stride) {
    const std::int64_t i = k % half, head = (k / half) % heads, row = k / (half * heads);
    const std::int64_t at = row * ld + head * head_dim + i;
    const std::int64_t angle = static_cast<std::int64_t>(positions[row]) * half + i;
    const float a = Load(x, at), b = Load(x, at + half), c = cos[angle], s = sin[angle];
    Store(x, at, a * c - b * s);
    Store(x, at + half, b * c + a * s);
  }
}

// out[r][c] = act(y[r][c]) * y[r][n + c].
template <class T>
__global__ void GatedActivationKernel(const T* y, std::int64_t rows, std::int64_t n, Activation act,
                                      T* out) {
  const std::int64_t total = rows * n;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const std::int64_t r = i / n, c = i % n;
    Store(out, i, Activate(Load(y, r * 2 * n + c), act) * Load(y, r * 2 * n + n + c));
  }
}

void Check(cudaError_t status, const char* kernel) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA kernel ") + kernel + ": " +
                             cudaGetErrorString(status));
  }
}

// Threads for a kernel with one block per row of n elements.
unsigned RowThreads(std::int64_t n) { return n >= 768 ? 256 : 128; }

// Shared memory of a row of n floats; throws beyond the 48 KiB every GPU gives by default.
std::size_t RowBytes(std::int64_t n, const char* kernel) {
  constexpr std::int64_t kMax = 48 * 1024 / sizeof(float);
  if (n <= 0 || n > kMax) {
    throw std::runtime_error(std::string("CUDA kernel ") + kernel + ": row of " +
                             std::to_string(n) + " elements (1.." + std::to_string(kMax) + ")");
  }
  return static_cast<std::size_t>(n) * sizeof(float);
}

// Calls f(T{}) with T the C++ type of dtype.
template <class F>
void WithType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat16:
      f(__half{});
      return;
    case DType::kBFloat16:
      f(__nv_bfloat16{});
      return;
    case DType::kFloat32:
      break;
  }
  f(float{});
}

}  // namespace

void EmbedLayerNorm(DType dtype, const std::int32_t* ids, const std::int32_t* positions,
                    std::int64_t tokens, std::int64_t hidden, const void* word, const void* pos,
                    const void* type0, const void* gamma, const void* beta, float eps, void* out,
                    cudaStream_t stream, RowLayout layout) {
  const std::size_t smem = RowBytes(hidden, "EmbedLayerNorm");
  if (tokens <= 0) return;
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (layout == RowLayout::kWarp &&
        LaunchWarpLayerNorm<T>(
            EmbeddingRows<T>{ids, positions, static_cast<const T*>(word),
                             static_cast<const T*>(pos), static_cast<const T*>(type0), hidden},
            tokens, hidden, gamma, beta, eps, out, stream)) {
      return;
    }
    EmbedLayerNormKernel<T><<<static_cast<unsigned>(tokens), RowThreads(hidden), smem, stream>>>(
        ids, positions, hidden, static_cast<const T*>(word), static_cast<const T*>(pos),
        static_cast<const T*>(type0), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        eps, static_cast<T*>(out));
  });
  Check(cudaGetLastError(), "EmbedLayerNorm");
}

void AddLayerNorm(DType dtype, void* x, const void* y, const void* bias, const void* gamma,
                  const void* beta, std::int64_t rows, std::int64_t n, float eps,
                  cudaStream_t stream, RowLayout layout) {
  const std::size_t smem = RowBytes(n, "AddLayerNorm");
  if (rows <= 0) return;
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if (layout == RowLayout::kWarp &&
        LaunchWarpLayerNorm<T>(SumRows<T>{static_cast<const T*>(x), static_cast<const T*>(y),
                                          static_cast<const T*>(bias), n},
                               rows, n, gamma, beta, eps, x, stream)) {
      return;
    }
    AddLayerNormKernel<T><<<static_cast<unsigned>(rows), RowThreads(n), smem, stream>>>(
        static_cast<T*>(x), static_cast<const T*>(y), static_cast<const T*>(bias),
        static_cast<const T*>(gamma), static_cast<const T*>(beta), n, eps);
  });
  Check(cudaGetLastError(), "AddLayerNorm");
}

void BiasActivation(DType dtype, void* y, std::int64_t rows, std::int64_t n, const void* bias,
                    Activation act, cudaStream_t stream) {
  const std::int64_t total = rows * n;
  if (total <= 0) return;
  constexpr unsigned kThreads = 256;
  // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
  const auto blocks =
      static_cast<unsigned>(std::min<std::int64_t>((total + kThreads - 1) / kThreads, 65536));
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    BiasActivationKernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(y), total, n,
                                                             static_cast<const T*>(bias), act);
  });
  Check(cudaGetLastError(), "BiasActivation");
}

void PoolRows(DType dtype, const void* hidden, std::int64_t dim, const std::int32_t* offsets,
              std::int64_t sequences, Pooling pooling, bool normalize, float* out,
              cudaStream_t stream) {
  const std::size_t smem = RowBytes(dim, "PoolRows");
  if (sequences <= 0) return;
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    PoolRowsKernel<T><<<static_cast<unsigned>(sequences), RowThreads(dim), smem, stream>>>(
        static_cast<const T*>(hidden), dim, offsets,
        pooling == Pooling::kAuto ? Pooling::kMean : pooling, normalize, out);
  });
  Check(cudaGetLastError(), "PoolRows");
}

namespace {

// Blocks for a grid-stride kernel over `total` elements: enough to fill the GPU several times
// over.
unsigned GridBlocks(std::int64_t total, unsigned threads) {
  return static_cast<unsigned>(std::min<std::int64_t>((total + threads - 1) / threads, 65536));
}

}  // namespace

void RmsNorm(DType dtype, const void* x, void* out, std::int64_t ld, std::int64_t rows,
             std::int64_t groups, std::int64_t n, const float* gamma, float eps,
             cudaStream_t stream) {
  if (rows <= 0 || groups <= 0 || n <= 0) return;
  const std::int64_t blocks = rows * groups;
  if (blocks > 0x7fffffff) throw std::runtime_error("CUDA kernel RmsNorm: too many rows");
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    RmsNormKernel<T><<<static_cast<unsigned>(blocks), RowThreads(n), 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(out), ld, groups, n, gamma, eps);
  });
  Check(cudaGetLastError(), "RmsNorm");
}

void RotateHalf(DType dtype, void* x, std::int64_t ld, std::int64_t rows, std::int64_t heads,
                std::int64_t head_dim, const std::int32_t* positions, const float* cos,
                const float* sin, cudaStream_t stream) {
  const std::int64_t total = rows * heads * (head_dim / 2);
  if (total <= 0) return;
  constexpr unsigned kThreads = 256;
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    RotateHalfKernel<T><<<GridBlocks(total, kThreads), kThreads, 0, stream>>>(
        static_cast<T*>(x), ld, rows, heads, head_dim, positions, cos, sin);
  });
  Check(cudaGetLastError(), "RotateHalf");
}

void GatedActivation(DType dtype, const void* y, std::int64_t rows, std::int64_t n, Activation act,
                     void* out, cudaStream_t stream) {
  const std::int64_t total = rows * n;
  if (total <= 0) return;
  constexpr unsigned kThreads = 256;
  WithType(dtype, [&](auto zero) {
    using T = decltype(zero);
    GatedActivationKernel<T><<<GridBlocks(total, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(y), rows, n, act, static_cast<T*>(out));
  });
  Check(cudaGetLastError(), "GatedActivation");
}

}  // namespace ember::engine::cuda
