#include "engine/bert/cpu/sgemm.h"

#ifndef EMBER_HAVE_BLAS
#include <ATen/ATen.h>
#endif

namespace ember::engine {

#ifdef EMBER_HAVE_BLAS
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c, const int* ldc);
#endif

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc) {
#ifdef EMBER_HAVE_BLAS
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb),
            ildc = static_cast<int>(ldc);
  const float one = 1.0f, zero = 0.0f;
  sgemm_(&ta, &tb, &im, &in, &ik, &one, a, &ilda, b, &ildb, &zero, c, &ildc);
#else
  // Row-major views of the column-major operands: C^T = op(B)^T * op(A)^T.
  auto view = [](const float* p, int64_t rows, int64_t cols, int64_t ld) {
    return at::from_blob(const_cast<float*>(p), {cols, rows}, {ld, 1}, at::kFloat);
  };
  const at::Tensor at_ = trans_a ? view(a, k, m, lda).t() : view(a, m, k, lda);
  const at::Tensor bt = trans_b ? view(b, n, k, ldb).t() : view(b, k, n, ldb);
  at::Tensor ct = at::from_blob(c, {n, m}, {ldc, 1}, at::kFloat);
  ct.copy_(at::mm(bt, at_));
#endif
}

}  // namespace ember::engine
