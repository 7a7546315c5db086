#include "router/router_options.h"

#include <toml++/toml.h>

#include <stdexcept>

namespace ember::router {
namespace {

[[noreturn]] void Bad(const std::filesystem::path& path, std::string_view key,
                      const std::string& why) {
  throw std::runtime_error(path.string() + ": " + std::string(key) + ": " + why);
}

template <class T>
void ReadInt(const toml::table& t, std::string_view key, T* out, std::int64_t lo, std::int64_t hi,
             const std::filesystem::path& path) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return;
  const auto v = node->value<std::int64_t>();
  if (!v || *v < lo || *v > hi) {
    Bad(path, key,
        "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<T>(*v);
}

void ReadMillis(const toml::table& t, std::string_view key, std::chrono::milliseconds* out,
                std::int64_t lo, std::int64_t hi, const std::filesystem::path& path) {
  std::int64_t ms = out->count();
  ReadInt(t, key, &ms, lo, hi, path);
  *out = std::chrono::milliseconds(ms);
}

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
  toml::table root;
  try {
    root = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(path.string() + ": " + std::string(e.description()));
  }
  if (auto v = root["frontend"].value<std::string>()) options->frontend = *v;
  if (auto v = root["backend"].value<std::string>()) options->backend = *v;
  ReadMillis(root, "heartbeat-ms", &options->heartbeat_interval, 10, 60'000, path);
  ReadInt(root, "liveness", &options->liveness, 1, 100, path);
  ReadMillis(root, "default-timeout-ms", &options->default_timeout, 1, 3'600'000, path);
  ReadInt(root, "max-attempts", &options->max_attempts, 1, 100, path);
  ReadMillis(root, "model-retention-ms", &options->model_retention, 0, 86'400'000, path);
  ReadModelOptions(root, &options->model_defaults, path);
  if (const toml::table* models = root["models"].as_table()) {
    for (const auto& [name, node] : *models) {
      const toml::table* t = node.as_table();
      if (t == nullptr) Bad(path, "models." + std::string(name.str()), "expected a table");
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
