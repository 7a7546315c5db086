#include "router/router_options.h"

#include <stdexcept>

#include "common/config_file.h"

namespace ember::router {
namespace {

using config::Bad;
using config::ReadDuration;
using config::ReadInt;

void ReadModelOptions(const toml::table& t, ModelOptions* out, const std::filesystem::path& path) {
  if (const toml::node* node = t.get("policy")) {
    const auto name = node->value<std::string>();
    const auto kind = name ? ParsePolicyKind(*name) : std::nullopt;
    if (!kind) {
      Bad(path, "policy",
          "expected round_robin, weighted_round_robin, least_connections, response_time or "
          "adaptive");
    }
    out->policy = *kind;
  }
  ReadInt(t, "max-queue", &out->max_queue, 0, 10'000'000, path);
}

}  // namespace

void LoadRouterConfig(const std::filesystem::path& path, RouterOptions* options) {
  const toml::table root = config::ParseFile(path);
  config::CheckKeys(root,
                    {"frontend",
                     "backend",
                     "heartbeat-ms",
                     "liveness",
                     "default-timeout-ms",
                     "control-timeout-ms",
                     "max-attempts",
                     "model-retention-ms",
                     "policy",
                     "max-queue",
                     "log-level",
                     "models",
                     "workers",
                     "max-texts-per-request",
                     "max-text-bytes",
                     "max-in-flight-per-client",
                     "max-message-bytes",
                     "curve-key",
                     "client-keys",
                     "admin-keys",
                     "worker-keys",
                     "metrics-listen",
                     "cache-bytes",
                     "cache-redis",
                     "cache-redis-ttl-s",
                     "cache-redis-wait-ms",
                     "slow-factor"},
                    path);
  config::ReadString(root, "frontend", &options->frontend, path);
  config::ReadString(root, "backend", &options->backend, path);
  config::ReadString(root, "log-level", &options->log_level, path);
  config::ReadString(root, "curve-key", &options->curve_key, path);
  config::ReadString(root, "client-keys", &options->client_keys, path);
  config::ReadString(root, "admin-keys", &options->admin_keys, path);
  config::ReadString(root, "worker-keys", &options->worker_keys, path);
  config::ReadString(root, "metrics-listen", &options->metrics_listen, path);
  ReadInt(root, "cache-bytes", &options->cache_bytes, 0, std::int64_t{1} << 40, path);
  config::ReadString(root, "cache-redis", &options->cache_redis, path);
  ReadDuration(root, "cache-redis-ttl-s", &options->cache_redis_ttl, 1, 365 * 86400, path);
  ReadDuration(root, "cache-redis-wait-ms", &options->cache_redis_wait, 1, 10'000, path);
  if (const toml::node* node = root.get("slow-factor")) {
    const auto factor = node->value<double>();
    if (!factor || *factor <= 1) Bad(path, "slow-factor", "expected a number above 1");
    options->slow_factor = *factor;
  }
  ReadDuration(root, "heartbeat-ms", &options->heartbeat_interval, 10, 60'000, path);
  ReadInt(root, "liveness", &options->liveness, 1, 100, path);
  ReadDuration(root, "default-timeout-ms", &options->default_timeout, 1, 3'600'000, path);
  ReadDuration(root, "control-timeout-ms", &options->control_timeout, 1, 86'400'000, path);
  ReadInt(root, "max-attempts", &options->max_attempts, 1, 100, path);
  ReadDuration(root, "model-retention-ms", &options->model_retention, 0, 86'400'000, path);
  ReadInt(root, "max-texts-per-request", &options->max_texts_per_request, 1, 10'000'000, path);
  ReadInt(root, "max-text-bytes", &options->max_text_bytes, 1, std::int64_t{1} << 32, path);
  ReadInt(root, "max-in-flight-per-client", &options->max_in_flight_per_client, 1, 10'000'000,
          path);
  ReadInt(root, "max-message-bytes", &options->max_message_bytes, 1024, std::int64_t{1} << 34,
          path);
  ReadModelOptions(root, &options->model_defaults, path);
  if (const toml::table* models = root["models"].as_table()) {
    for (const auto& [name, node] : *models) {
      const toml::table* t = node.as_table();
      if (t == nullptr) Bad(path, "models." + std::string(name.str()), "expected a table");
      config::CheckKeys(*t, {"policy", "max-queue"}, path,
                        "models." + std::string(name.str()) + ".");
      ModelOptions m = options->model_defaults;
      ReadModelOptions(*t, &m, path);
      options->models[std::string(name.str())] = m;
    }
  }
  if (const toml::table* workers = root["workers"].as_table()) {
    for (const auto& [id, node] : *workers) {
      const auto weight =
          node.as_table() ? (*node.as_table())["weight"].value<double>() : std::nullopt;
      if (!weight || *weight <= 0) {
        Bad(path, "workers." + std::string(id.str()) + ".weight", "expected a positive number");
      }
      options->worker_weights[std::string(id.str())] = *weight;
    }
  }
}

}  // namespace ember::router
