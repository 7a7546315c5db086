// ember-gateway: OpenAI- and TEI-compatible HTTP API for an ember cluster.
// See gateway/gateway.h.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "common/shutdown_signal.h"
#include "gateway/gateway.h"

namespace {

// "host:port", "[v6]:port" or ":port" (all interfaces).
bool ParseListen(const std::string& listen, std::string* host, int* port) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  if (host->empty()) *host = "0.0.0.0";
  try {
    std::size_t used = 0;
    *port = std::stoi(listen.substr(colon + 1), &used);
    return used == listen.size() - colon - 1 && *port >= 0 && *port <= 65535;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  ember::gateway::GatewayOptions options;
  std::string listen = "127.0.0.1:8080";
  int timeout_ms = static_cast<int>(options.timeout.count());
  int health_timeout_ms = static_cast<int>(options.health_timeout.count());
  std::string log_level = "info";

  CLI::App app{"ember-gateway: OpenAI- and TEI-compatible HTTP API for an ember cluster"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // Keys in the file are the long flag names (config/gateway.toml).
  app.set_config("--config", "", "TOML file (config/gateway.toml); flags override it");
  // A typo in the file should stop the gateway, not be ignored.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("--listen", listen, "HTTP address host:port (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--router", options.router, "router frontend endpoint")->capture_default_str();
  app.add_option("--threads", options.threads, "HTTP handler threads (requests served at once)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--timeout-ms", timeout_ms, "deadline of each embedding request")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  app.add_option("--health-timeout-ms", health_timeout_ms, "how long GET /health waits")
      ->check(CLI::Range(1, 60'000))
      ->capture_default_str();
  app.add_option("--attempts", options.attempts,
                 "tries per request when the router is silent or answers UNAVAILABLE")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  app.add_option("--max-body-bytes", options.max_body_bytes, "larger request bodies get 413")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 32))
      ->capture_default_str();
  app.add_option("--default-model", options.default_model,
                 "model (name[:version]) for TEI /embed requests that name none");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (!ParseListen(listen, &options.host, &options.port)) {
    spdlog::critical("ember-gateway: --listen must be host:port, got '{}'", listen);
    return 1;
  }
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.health_timeout = std::chrono::milliseconds(health_timeout_ms);
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Before any thread starts, so that every thread has the signals blocked.
  ember::ShutdownSignal shutdown;
  try {
    ember::gateway::Gateway gateway(options);
    const int port = gateway.Bind();
    // Tests read the port from this line when they ask for port 0.
    spdlog::info("ember-gateway listening on http://{}:{}, router {}, {} threads", options.host,
                 port, options.router, options.threads);
    gateway.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-gateway: {}", e.what());
    return 1;
  }
  spdlog::info("ember-gateway stopped");
  return 0;
}
