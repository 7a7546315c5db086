// ember-gateway: OpenAI- and TEI-compatible HTTP API for an ember cluster.
// See gateway/gateway.h.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/config_file.h"
#include "common/shutdown_signal.h"
#include "gateway/gateway.h"
#include "gateway/gateway_settings.h"

int main(int argc, char** argv) {
  namespace gateway = ember::gateway;
  gateway::GatewayConfig config;
  std::string config_path = ember::config::ConfigFlag(argc, argv);
  try {
    if (!config_path.empty()) gateway::LoadGatewayConfig(config_path, &config);
  } catch (const std::exception& e) {
    spdlog::critical("ember-gateway: {}", e.what());
    return 1;
  }
  CLI::App app{"ember-gateway: OpenAI- and TEI-compatible HTTP API for an ember cluster"};
  app.add_option("--config", config_path, "TOML file (config/gateway.toml); flags override it");
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "print the commented configuration file (config/gateway.toml) and exit");
  gateway::GatewaySettings().AddFlags(app, &config);
  CLI11_PARSE(app, argc, argv);
  if (print_config) {
    std::cout << gateway::RenderGatewayConfig();
    return 0;
  }
  gateway::GatewayOptions& options = config.gateway;
  gateway::ParseListen(config.listen, &options.host, &options.port);  // validated by the table
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  // Before any thread starts, so that every thread has the signals blocked.
  ember::ShutdownSignal shutdown;
  try {
    gateway::Gateway server(options);
    const int port = server.Bind();
    // Tests read the port from this line when they ask for port 0.
    spdlog::info("ember-gateway listening on http://{}:{}, router {}, {} event loops", options.host,
                 port, fmt::join(options.routers, ","), options.threads);
    server.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-gateway: {}", e.what());
    return 1;
  }
  spdlog::info("ember-gateway stopped");
  return 0;
}
