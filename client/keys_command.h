// `emberctl keys generate --out PREFIX` and the global CURVE flags
// (--curve-key, --curve-server-key) that let every emberctl command reach a
// router with CURVE on (docs/security.md).
#ifndef EMBER_CLIENT_KEYS_COMMAND_H_
#define EMBER_CLIENT_KEYS_COMMAND_H_

#include <CLI/CLI.hpp>

namespace ember::ctl {

// Adds the "keys" subcommand and the global CURVE flags to `app`. The flags
// hand their files to ember::Client through $EMBER_CURVE_KEY and
// $EMBER_CURVE_SERVER_KEY (curve::ClientKeys::FromEnvironment), so the
// commands need no CURVE code of their own.
void AddKeysCommand(CLI::App& app);

}  // namespace ember::ctl

#endif  // EMBER_CLIENT_KEYS_COMMAND_H_
