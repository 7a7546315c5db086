#include "engine/encoder/classifier_head.h"

namespace ember::engine {

std::vector<float> ClassifierHead::Apply(const float* cls, std::int64_t rows) const {
  std::vector<float> out(static_cast<std::size_t>(rows * labels()));
  if (rows == 0) return out;
  // from_blob borrows the caller's rows; the results are copied out before it returns.
  const at::Tensor x = at::from_blob(const_cast<float*>(cls), {rows, dense_w.size(1)}, at::kFloat);
  const at::Tensor dense =
      dense_b.defined() ? at::addmm(dense_b, x, dense_w.t()) : at::mm(x, dense_w.t());
  at::Tensor pooled = gelu ? at::gelu(dense) : at::tanh(dense);
  if (norm_w.defined()) {
    pooled = at::layer_norm(pooled, {pooled.size(1)}, norm_w, norm_b, norm_eps);
  }
  const at::Tensor logits = at::addmm(b, pooled, w.t()).contiguous();
  std::copy_n(logits.data_ptr<float>(), out.size(), out.data());
  return out;
}

}  // namespace ember::engine
