#include "client/keys_command.h"

#include <stdlib.h>

#include <cstdio>
#include <string>

#include "common/curve.h"

namespace ember::ctl {

void AddKeysCommand(CLI::App& app) {
  // Set before any subcommand runs: CLI11 calls option callbacks while
  // parsing, and subcommands act after parsing.
  app.add_option_function<std::string>(
         "--curve-key",
         [](const std::string& path) { ::setenv("EMBER_CURVE_KEY", path.c_str(), 1); },
         "this client's CURVE key pair file (or $EMBER_CURVE_KEY)")
      ->check(CLI::ExistingFile);
  app.add_option_function<std::string>(
         "--curve-server-key",
         [](const std::string& path) { ::setenv("EMBER_CURVE_SERVER_KEY", path.c_str(), 1); },
         "the router's CURVE public key file (or $EMBER_CURVE_SERVER_KEY)")
      ->check(CLI::ExistingFile);

  auto* keys = app.add_subcommand("keys", "CURVE key pairs (docs/security.md)");
  keys->require_subcommand(1);
  auto* generate =
      keys->add_subcommand("generate", "write a new key pair to PREFIX.key and PREFIX.pub");
  auto prefix = std::make_shared<std::string>();
  generate->add_option("--out", *prefix, "file prefix, e.g. /etc/ember/keys/router")->required();
  generate->callback([prefix] {
    curve::KeyPair pair;
    try {
      pair = curve::Generate();
      curve::WriteKeyFiles(pair, *prefix);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "emberctl: %s\n", e.what());
      throw CLI::RuntimeError(1);  // CLI11_PARSE returns 1, printing nothing more
    }
    std::printf("%s.key (secret, mode 0600) and %s.pub written; public key %s\n", prefix->c_str(),
                prefix->c_str(), pair.public_key.c_str());
  });
}

}  // namespace ember::ctl
