// ember-router: the cluster's broker. See router/router.h.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "common/config_file.h"
#include "common/shutdown_signal.h"
#include "router/router.h"

int main(int argc, char** argv) {
  ember::router::RouterOptions options;
  std::string config = ember::config::ConfigFlag(argc, argv);
  try {
    if (!config.empty()) ember::router::LoadRouterConfig(config, &options);
  } catch (const std::exception& e) {
    spdlog::critical("ember-router: {}", e.what());
    return 1;
  }

  CLI::App app{"ember-router: dispatches embedding requests from clients to workers"};
  // A flag given twice takes its last value, so wrappers (systemd units,
  // scripts) can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--config", config, "TOML file (config/router.toml); flags override it");
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
  std::string policy(ember::router::PolicyKindName(options.model_defaults.policy));
  app.add_option("--policy", policy,
                 "default balancing policy: round_robin, weighted_round_robin, "
                 "least_connections, response_time, adaptive")
      ->check([](const std::string& name) {
        return ember::router::ParsePolicyKind(name) ? "" : "unknown policy '" + name + "'";
      })
      ->capture_default_str();
  app.add_option("--max-queue", options.model_defaults.max_queue,
                 "requests per model waiting for worker credit before OVERLOADED")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  app.add_option("--max-texts-per-request", options.max_texts_per_request,
                 "texts in one request before BAD_REQUEST")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--max-text-bytes", options.max_text_bytes, "bytes of one text before BAD_REQUEST")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-in-flight-per-client", options.max_in_flight_per_client,
                 "requests one client may have in flight before OVERLOADED")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--max-message-bytes", options.max_message_bytes,
                 "largest frontend message; ZeroMQ drops a client that sends more")
      ->check(CLI::Range(std::int64_t{1024}, std::int64_t{1} << 34))
      ->capture_default_str();
  // CURVE (docs/security.md); off unless --curve-key is given.
  app.add_option("--curve-key", options.curve_key,
                 "this router's CURVE key pair file (emberctl keys generate); turns CURVE on");
  app.add_option("--client-keys", options.client_keys,
                 "public key file or directory: clients that may embed and see status");
  app.add_option("--admin-keys", options.admin_keys,
                 "public key file or directory: clients that may also load and unload models");
  app.add_option("--worker-keys", options.worker_keys,
                 "public key file or directory: workers that may register");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "HOST:PORT to serve Prometheus metrics on (GET /metrics); empty: off")
      ->capture_default_str();
  app.add_option("--cache-bytes", options.cache_bytes,
                 "embedding cache budget in bytes (docs/caching.md); 0: off")
      ->capture_default_str();
  app.add_option("--cache-redis", options.cache_redis,
                 "Redis second tier for the cache: unix:/PATH or tcp://HOST:PORT; empty: off");
  int redis_ttl_s = static_cast<int>(options.cache_redis_ttl.count());
  app.add_option("--cache-redis-ttl-s", redis_ttl_s, "expiry of vectors stored in Redis")
      ->check(CLI::Range(1, 365 * 86400))
      ->capture_default_str();
  int redis_wait_ms = static_cast<int>(options.cache_redis_wait.count());
  app.add_option("--cache-redis-wait-ms", redis_wait_ms,
                 "longest a request waits for Redis before going to a worker")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  app.add_option("--slow-factor", options.slow_factor,
                 "a worker whose p50 exceeds this many times its peers' median is slow")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str();
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  options.default_timeout = std::chrono::milliseconds(timeout_ms);
  options.cache_redis_ttl = std::chrono::seconds(redis_ttl_s);
  options.cache_redis_wait = std::chrono::milliseconds(redis_wait_ms);
  // The default only: models with a [models.NAME] table keep their policy.
  options.model_defaults.policy = *ember::router::ParsePolicyKind(policy);
  spdlog::set_level(spdlog::level::from_str(options.log_level));

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
