// `emberctl tokenize MODEL TEXT...`: a model's tokens of each text and the bytes each came from
// (TEI's /tokenize from the shell).
#ifndef EMBER_CLIENT_TOKENIZE_COMMAND_H_
#define EMBER_CLIENT_TOKENIZE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ember::ctl {

// Adds the "tokenize" subcommand to `app`. `routers` and `timeout_ms` are the global flags,
// read when the command runs. A failure prints the reason and ends emberctl with exit code 2.
void AddTokenizeCommand(CLI::App& app, const std::vector<std::string>& routers,
                        const int& timeout_ms);

}  // namespace ember::ctl

#endif  // EMBER_CLIENT_TOKENIZE_COMMAND_H_
