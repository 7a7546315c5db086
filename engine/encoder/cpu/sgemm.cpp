#include "engine/encoder/cpu/sgemm.h"

#ifdef EMBER_HAVE_BLAS
#include <dlfcn.h>

#include <stdexcept>
#include <string>
#else
#include <ATen/ATen.h>
#endif

namespace ember::engine {

#ifdef EMBER_HAVE_BLAS
namespace {

using SgemmFn = void(const char* transa, const char* transb, const int* m, const int* n,
                     const int* k, const float* alpha, const float* a, const int* lda,
                     const float* b, const int* ldb, const float* beta, float* c, const int* ldc);

// The system BLAS's sgemm_, looked up in libblas.so.3 itself. A plain `sgemm_` call would bind
// to whichever loaded library exports the name first, and the torch wheel's libtorch_cpu.so
// exports MKL's: which one a binary got depended on its link order (ember-worker OpenBLAS,
// ember-model-bench MKL). The CPU encoder is tuned and measured on OpenBLAS (OpenMP build),
// which shares the encoder's OpenMP threads.
SgemmFn* SystemSgemm() {
  static SgemmFn* const fn = [] {
    void* blas = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    void* sym = blas != nullptr ? dlsym(blas, "sgemm_") : nullptr;
    if (sym == nullptr) {
      throw std::runtime_error(std::string("cannot find sgemm_ in libblas.so.3: ") + dlerror());
    }
    return reinterpret_cast<SgemmFn*>(sym);
  }();
  return fn;
}

}  // namespace
#endif

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc) {
#ifdef EMBER_HAVE_BLAS
  const char ta = trans_a ? 'T' : 'N', tb = trans_b ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb),
            ildc = static_cast<int>(ldc);
  const float one = 1.0f, zero = 0.0f;
  SystemSgemm()(&ta, &tb, &im, &in, &ik, &one, a, &ilda, b, &ildb, &zero, c, &ildc);
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
