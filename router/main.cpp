// ember-router: the cluster's broker. See router/router.h.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/config_file.h"
#include "common/shutdown_signal.h"
#include "router/router.h"

int main(int argc, char** argv) {
  namespace router = ember::router;
  router::RouterOptions options;
  std::string config = ember::config::ConfigFlag(argc, argv);
  try {
    if (!config.empty()) router::LoadRouterConfig(config, &options);
  } catch (const std::exception& e) {
    spdlog::critical("ember-router: {}", e.what());
    return 1;
  }
  CLI::App app{"ember-router: dispatches embedding requests from clients to workers"};
  app.add_option("--config", config, "TOML file (config/router.toml); flags override it");
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "print the commented configuration file (config/router.toml) and exit");
  router::RouterSettings().AddFlags(app, &options);
  // The model flags set the defaults only: models with a [models.NAME] table keep theirs.
  router::ModelSettings().AddFlags(app, &options.model_defaults);
  CLI11_PARSE(app, argc, argv);
  if (print_config) {
    std::cout << router::RenderRouterConfig();
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(options.log_level));

  ember::ShutdownSignal shutdown;
  try {
    router::Router router(options);
    router.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-router: {}", e.what());
    return 1;
  }
  return 0;
}
