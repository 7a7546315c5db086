#include "engine/encoder/rotary_embedding.h"

#include <stdexcept>

namespace ember::engine {

RotaryTable MakeRotaryTable(double theta, int64_t head_dim, int64_t positions) {
  if (head_dim <= 0 || head_dim % 2 != 0 || !(theta > 0) || positions <= 0) {
    throw std::invalid_argument("rotary embedding: head_dim " + std::to_string(head_dim) +
                                " must be even and positive, theta " + std::to_string(theta) +
                                " positive");
  }
  // HF: inv_freq = 1 / (base ** (arange(0, dim, 2).float() / dim)); freqs = p.float() * inv_freq.
  const at::Tensor exponent = at::arange(0, head_dim, 2, at::kFloat) / head_dim;
  const at::Tensor inv_freq = 1.0 / at::pow(theta, exponent);
  const at::Tensor freqs = at::arange(positions, at::kFloat).unsqueeze(1) * inv_freq.unsqueeze(0);
  return {.cos = freqs.cos().contiguous(), .sin = freqs.sin().contiguous()};
}

at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTable& table) {
  const int64_t len = x.size(-3), half = x.size(-1) / 2;
  // [L, 1, d/2]: broadcast over heads and leading dims.
  const at::Tensor cos = table.cos.narrow(0, 0, len).unsqueeze(1).to(at::kFloat);
  const at::Tensor sin = table.sin.narrow(0, 0, len).unsqueeze(1).to(at::kFloat);
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor x1 = xf.narrow(-1, 0, half), x2 = xf.narrow(-1, half, half);
  return at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1).to(x.scalar_type());
}

}  // namespace ember::engine
