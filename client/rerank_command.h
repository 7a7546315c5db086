// `emberctl rerank MODEL QUERY TEXT...`: scores each text against the query with a cross-encoder
// in one request and prints the texts best first (TEI's /rerank from the shell).
#ifndef EMBER_CLIENT_RERANK_COMMAND_H_
#define EMBER_CLIENT_RERANK_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ember::ctl {

// Adds the "rerank" subcommand to `app`. `routers` and `timeout_ms` are the global flags, read
// when the command runs. A failure prints the reason and ends emberctl with exit code 2.
void AddRerankCommand(CLI::App& app, const std::vector<std::string>& routers,
                      const int& timeout_ms);

}  // namespace ember::ctl

#endif  // EMBER_CLIENT_RERANK_COMMAND_H_
