// One dense layer of the CPU encoder, y = act(x W + b) on float32 rows, with its weights laid out
// once, at load, for the GEMM kernel that runs it (docs/performance.md "Fused fp32 path"); the
// GEMM itself in float32 or, for the bf16 precision, bfloat16.
//
// With oneDNN in the build (EMBER_HAVE_DNNL; Debian's libdnnl-dev 2.6, not the torch wheel's own
// 3.x) this is oneDNN's matmul on weights reordered to its blocked layout, with the bias and
// the activation applied inside the GEMM's epilogue: measured 105-113 GFLOP/s on one core of
// the reference machine for 16 to 2048 rows, against OpenBLAS's 60-100, which repacks the
// weights on every call and is weakest at the few rows a small batch has. Without oneDNN it is
// the system BLAS on the plain weights followed by a bias / activation pass.
//
// LibTorch-free header; no oneDNN types in it either.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "engine/encoder/cpu/cpu_kernels.h"

namespace ember::engine {

class PackedDense {
 public:
  // Whether the GEMM multiplies float32 or bfloat16 (weights stored as bf16, each call's input
  // rounded to bf16; float32 accumulation, bias, activation and output). bf16 needs oneDNN
  // and a CPU it has fast bf16 kernels for (AVX-512 and up): Supports says.
  enum class Math { kFp32, kBf16 };
  static bool Supports(Math math);

  // wt: [in, out] row-major (the transposed torch Linear weight); bias: [out]. Both are copied.
  // act: applied after the bias, or none. Throws std::runtime_error if the GEMM library refuses
  // the shape or the math, or would run bf16 math on a slow reference kernel.
  PackedDense(const float* wt, const float* bias, int64_t in, int64_t out,
              std::optional<Activation> act, Math math = Math::kFp32);
  ~PackedDense();
  PackedDense(PackedDense&&) noexcept;
  PackedDense& operator=(PackedDense&&) noexcept;

  // y [rows, out] = act(x [rows, in] W + b), row-major, rows >= 1. Safe to call concurrently.
  // Runs on the calling thread's OpenMP thread count, or single-threaded inside a parallel
  // region.
  void Apply(const float* x, int64_t rows, float* y) const;

  // Compiles now what Apply would compile on first use of each row count it can run (oneDNN
  // JIT-compiles one kernel per row count, ~0.2-0.4 ms each, and Apply runs blocks of at most
  // 256 rows): called at load, so no request pays for it. A no-op on the BLAS path.
  void Precompile() const;

  int64_t in() const;
  int64_t out() const;
  uint64_t bytes() const;  // weights and bias as stored
  // "onednn:<implementation>" or "blas".
  const char* kernel() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::engine
