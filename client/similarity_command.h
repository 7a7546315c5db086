// `emberctl similarity MODEL QUERY TEXT...`: embeds a query and some texts in one request and
// prints each text's cosine similarity to the query, nearest first (TEI's sentence-similarity
// task from the shell; the demo's proof that a model's vectors mean something).
#ifndef EMBER_CLIENT_SIMILARITY_COMMAND_H_
#define EMBER_CLIENT_SIMILARITY_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ember::ctl {

// Adds the "similarity" subcommand to `app`. `routers` and `timeout_ms` are the global flags,
// read when the command runs. A failure prints the reason and ends emberctl with exit code 2.
void AddSimilarityCommand(CLI::App& app, const std::vector<std::string>& routers,
                          const int& timeout_ms);

}  // namespace ember::ctl

#endif  // EMBER_CLIENT_SIMILARITY_COMMAND_H_
