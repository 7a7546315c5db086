// ember-router: the cluster's broker. See router/router.h.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "common/shutdown_signal.h"
#include "router/router.h"

int main(int argc, char** argv) {
  ember::router::RouterOptions options;
  CLI::App app{"ember-router: dispatches embedding requests from clients to workers"};
  app.set_config("--config", "", "TOML file with the same keys as the long flags");
  app.add_option("--frontend", options.frontend, "endpoint clients connect to")
      ->capture_default_str();
  app.add_option("--backend", options.backend, "endpoint workers connect to")
      ->capture_default_str();
  int heartbeat_ms = static_cast<int>(options.heartbeat_interval.count());
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval")
      ->check(CLI::Range(10, 60'000))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness, "heartbeats a worker may miss")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  int timeout_ms = static_cast<int>(options.default_timeout.count());
  app.add_option("--default-timeout-ms", timeout_ms, "deadline of requests that set none")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  options.default_timeout = std::chrono::milliseconds(timeout_ms);
  spdlog::set_level(spdlog::level::from_str(log_level));

  ember::ShutdownSignal shutdown;
  try {
    ember::router::Router router(options);
    router.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-router: {}", e.what());
    return 1;
  }
  return 0;
}
