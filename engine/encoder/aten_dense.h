// One dense layer of the ATen (and CUDA) BERT forwards, y = x W^T + b, in the model's compute
// precision: fp32, bf16 or fp16 weights for addmm, or int8 weights prepacked for LibTorch's
// quantized::linear_dynamic. Included by engine/encoder/encoder_model.cpp only (it needs ATen).
#ifndef EMBER_ENGINE_ENCODER_ATEN_DENSE_H_
#define EMBER_ENGINE_ENCODER_ATEN_DENSE_H_

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/encoder/encoder_model.h"

namespace ember::engine {

// One dense layer, y = x W^T + b, in the model's compute precision.
class Dense {
 public:
  Dense() = default;
  // w [out, in], b [out]: float32 on the device. int8 quantises w per output channel
  // (symmetric, scale = max |w_row| / 127) and prepacks it for quantized::linear_dynamic.
  Dense(at::Tensor w, at::Tensor b, Precision precision) {
    if (precision == Precision::kInt8) {
      const at::Tensor scales = (w.abs().amax({1}) / 127.0).clamp_min(1e-12).to(at::kDouble);
      const at::Tensor zeros = at::zeros({w.size(0)}, at::kLong);
      const at::Tensor qw = at::quantize_per_channel(w, scales, zeros, 0, at::kQInt8);
      bytes_ = static_cast<uint64_t>(qw.numel()) + b.nbytes() + scales.nbytes();
      std::vector<c10::IValue> stack{qw, b};  // (Tensor, Tensor? bias)
      PrepackOp().callBoxed(&stack);
      packed_ = std::move(stack.at(0));
      return;
    }
    if (precision == Precision::kBf16) {
      w = w.to(at::kBFloat16);
      b = b.to(at::kBFloat16);
    } else if (precision == Precision::kFp16) {
      w = w.to(at::kHalf);
      b = b.to(at::kHalf);
    }
    // Stored transposed, [in, out] contiguous, for addmm: x [N, in] * wt [in, out] is the
    // GEMM's natural no-transpose layout (measured ~1-3% faster than at::linear's w.t() view
    // with OpenBLAS on this CPU, within noise for oneDNN bf16).
    wt_ = w.t().contiguous();
    b_ = std::move(b);
    bytes_ = wt_.nbytes() + b_.nbytes();
  }

  // Output dtype: float32 for int8, else the weights' dtype (the input is cast to it).
  at::Tensor operator()(const at::Tensor& x) const {
    if (!packed_.isNone()) {
      std::vector<c10::IValue> stack{x, packed_, /*reduce_range=*/false};
      DynamicOp().callBoxed(&stack);
      return stack.at(0).toTensor();
    }
    return at::addmm(b_, x.scalar_type() == wt_.scalar_type() ? x : x.to(wt_.scalar_type()), wt_);
  }
  uint64_t bytes() const { return bytes_; }

 private:
  static const c10::OperatorHandle& PrepackOp() {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
    return op;
  }
  static const c10::OperatorHandle& DynamicOp() {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
    return op;
  }
  at::Tensor wt_, b_;
  c10::IValue packed_;  // int8: LinearPackedParamsBase
  uint64_t bytes_ = 0;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_ATEN_DENSE_H_
