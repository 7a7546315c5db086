#include "engine/encoder/classifier_head.h"

namespace ember::engine {

std::vector<float> ClassifierHead::Apply(const float* cls, std::int64_t rows) const {
  std::vector<float> out(static_cast<std::size_t>(rows * labels()));
  if (rows == 0) return out;
  // from_blob borrows the caller's rows; the results are copied out before it returns.
  const at::Tensor x = at::from_blob(const_cast<float*>(cls), {rows, dense_w.size(1)}, at::kFloat);
  const at::Tensor pooled = at::tanh(at::addmm(dense_b, x, dense_w.t()));
  const at::Tensor logits = at::addmm(b, pooled, w.t()).contiguous();
  std::copy_n(logits.data_ptr<float>(), out.size(), out.data());
  return out;
}

}  // namespace ember::engine
