// What every fuzz target does when a property it checks does not hold: say which, and abort,
// so libFuzzer (or fuzz_driver.cpp) keeps the input as a crash.
#ifndef EMBER_FUZZ_CHECK_H_
#define EMBER_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

namespace ember::fuzz {

inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace ember::fuzz

#endif  // EMBER_FUZZ_CHECK_H_
