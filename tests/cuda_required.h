// For tests that need an NVIDIA GPU: EMBER_SKIP_WITHOUT_CUDA() skips the test where LibTorch sees
// none, and fails it instead when EMBER_REQUIRE_CUDA is set (scripts/gpu-check.sh and
// scripts/gpu-model-bench.sh set it on the GPU machine, where a skip would hide a broken setup).
#ifndef EMBER_TESTS_CUDA_REQUIRED_H_
#define EMBER_TESTS_CUDA_REQUIRED_H_

#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace ember::testing {

inline bool CudaRequired() {
  const char* required = std::getenv("EMBER_REQUIRE_CUDA");
  return required != nullptr && *required != '\0';
}

}  // namespace ember::testing

#define EMBER_SKIP_WITHOUT_CUDA()                                                   \
  do {                                                                              \
    if (!at::hasCUDA()) {                                                           \
      if (::ember::testing::CudaRequired()) {                                       \
        FAIL() << "EMBER_REQUIRE_CUDA is set but LibTorch sees no CUDA device";     \
      }                                                                             \
      GTEST_SKIP() << "no CUDA device (EMBER_REQUIRE_CUDA=1 makes this a failure)"; \
    }                                                                               \
  } while (false)

#endif  // EMBER_TESTS_CUDA_REQUIRED_H_
