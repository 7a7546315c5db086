// How every emberctl subcommand ends on an ember error: the typed reason on stderr
// ("emberctl: CODE: message") and exit code 2, whichever command failed.
#ifndef EMBER_CLIENT_CTL_FAILURE_H_
#define EMBER_CLIENT_CTL_FAILURE_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/error_code.h"

namespace ember::ctl {

// Runs `command`; an ember::Error it throws is printed and becomes CLI11's exit code 2.
template <class Command>
void ReportingFailure(Command&& command) {
  try {
    command();
  } catch (const Error& e) {
    std::fprintf(stderr, "emberctl: %s: %s\n", std::string(ErrorCodeName(e.code())).c_str(),
                 e.what());
    throw CLI::RuntimeError(2);
  }
}

}  // namespace ember::ctl

#endif  // EMBER_CLIENT_CTL_FAILURE_H_
