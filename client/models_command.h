// `emberctl models load | unload | list`: model management from the shell.
#ifndef EMBER_CLIENT_MODELS_COMMAND_H_
#define EMBER_CLIENT_MODELS_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ember::ctl {

// Adds the "models" subcommand to `app`. `router` and `timeout_ms` are the
// global flags, read when the command runs. A failure prints the reason
// and ends emberctl with a non-zero exit code.
void AddModelsCommand(CLI::App& app, const std::vector<std::string>& routers,
                      const int& timeout_ms);

}  // namespace ember::ctl

#endif  // EMBER_CLIENT_MODELS_COMMAND_H_
