#include "engine/encoder/cuda/aten_kernels.h"

#include <c10/cuda/CUDAStream.h>

#include <stdexcept>
#include <string>

namespace ember::engine::cuda {
namespace {

cudaStream_t StreamOf(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

// gamma as the kernels take it: float32, contiguous, on t's device.
at::Tensor Gamma(const at::Tensor& gamma, const at::Tensor& t) {
  return gamma.to(t.device(), at::kFloat).contiguous();
}

void RequireContiguousCuda(const at::Tensor& t, const char* what) {
  if (!t.is_cuda() || !t.is_contiguous()) {
    throw std::invalid_argument(std::string(what) + ": expected a contiguous CUDA tensor");
  }
}

}  // namespace

DType KernelType(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    default:
      throw std::invalid_argument(std::string("CUDA kernels: tensors of dtype ") +
                                  c10::toString(t) + " (expected float32, float16 or bfloat16)");
  }
}

at::Tensor RmsNormRows(const at::Tensor& x, const at::Tensor& gamma, double eps) {
  RequireContiguousCuda(x, "RmsNormRows");
  const std::int64_t n = x.size(-1), rows = x.numel() / n;
  at::Tensor out = at::empty_like(x);
  const at::Tensor g = Gamma(gamma, x);
  RmsNorm(KernelType(x.scalar_type()), x.data_ptr(), out.data_ptr(), n, rows, 1, n,
          g.data_ptr<float>(), static_cast<float>(eps), StreamOf(x));
  return out;
}

void NormAndRotateHeads(at::Tensor& qkv, std::int64_t q_heads, std::int64_t kv_heads,
                        std::int64_t head_dim, const at::Tensor& q_gamma, const at::Tensor& k_gamma,
                        double eps, const at::Tensor& positions, const at::Tensor& cos,
                        const at::Tensor& sin) {
  RequireContiguousCuda(qkv, "NormAndRotateHeads");
  const DType dtype = KernelType(qkv.scalar_type());
  const std::int64_t rows = qkv.size(0), ld = qkv.size(1);
  const cudaStream_t stream = StreamOf(qkv);
  auto* base = static_cast<char*>(qkv.data_ptr());
  if (q_gamma.defined()) {
    const at::Tensor qg = Gamma(q_gamma, qkv), kg = Gamma(k_gamma, qkv);
    RmsNorm(dtype, base, base, ld, rows, q_heads, head_dim, qg.data_ptr<float>(),
            static_cast<float>(eps), stream);
    char* keys = base + q_heads * head_dim * static_cast<std::int64_t>(qkv.element_size());
    RmsNorm(dtype, keys, keys, ld, rows, kv_heads, head_dim, kg.data_ptr<float>(),
            static_cast<float>(eps), stream);
  }
  if (cos.defined()) {
    RotateHalf(dtype, base, ld, rows, q_heads + kv_heads, head_dim,
               positions.data_ptr<std::int32_t>(), cos.data_ptr<float>(), sin.data_ptr<float>(),
               stream);
  }
}

at::Tensor GatedActivationRows(const at::Tensor& inner, Activation act) {
  RequireContiguousCuda(inner, "GatedActivationRows");
  const std::int64_t n = inner.size(-1) / 2, rows = inner.numel() / (2 * n);
  at::Tensor out = at::empty({rows, n}, inner.options());
  GatedActivation(KernelType(inner.scalar_type()), inner.data_ptr(), rows, n, act, out.data_ptr(),
                  StreamOf(inner));
  return out;
}

}  // namespace ember::engine::cuda
