// Column-major single-precision GEMM on raw pointers (the BLAS sgemm interface), for the CPU
// encoder's attention and its dense layers when the build has no oneDNN. LibTorch-free header.
#pragma once

#include <cstdint>

namespace ember::engine {

// C = op(A) * op(B) (alpha 1, beta 0), column-major with leading dimensions, so attention can
// read Q/K/V in place from the fused QKV output and write the context straight into its rows.
// The system BLAS's sgemm_ when the build has one (EMBER_HAVE_BLAS): single-threaded inside an
// OpenMP parallel region, else on the calling thread's OpenMP thread count. Without a BLAS,
// at::mm on strided views: correct, but it pays ATen's per-call cost.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace ember::engine
