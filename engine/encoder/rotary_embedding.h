// Rotary position embeddings (RoPE) as HF's default rope_type computes them (ModernBERT,
// and the decoders of issue 37): the query and key of the token at position p are rotated, in
// each pair (i, i + d/2) of a head's d dims, by the angle p * theta^(-2i/d) ("rotate_half").
// The angles are float32 products as HF's (position.float() * inv_freq, both float32, with
// the same ATen ops): in double they would differ by up to 5e-4 rad at position 8,000, which
// shows in the output.
#ifndef EMBER_ENGINE_ENCODER_ROTARY_EMBEDDING_H_
#define EMBER_ENGINE_ENCODER_ROTARY_EMBEDDING_H_

#include <ATen/ATen.h>

#include <cstdint>

namespace ember::engine {

// cos and sin of every position's angles, float32 [positions, head_dim / 2] each, on the CPU.
struct RotaryTable {
  at::Tensor cos, sin;
};

// Throws std::invalid_argument unless head_dim is even and theta > 0.
RotaryTable MakeRotaryTable(double theta, int64_t head_dim, int64_t positions);

// x: [..., L, heads, head_dim] (any leading dims), rotated as token t of each sequence sits at
// position t; `table` on x's device, in any dtype (computed in float32, as HF does, returned
// in x's). The reference form: the ATen forward runs it, the fused kernels are held to it.
at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTable& table);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_ROTARY_EMBEDDING_H_
