#include "worker/worker_config.h"

#include <regex>
#include <stdexcept>

#include "common/config_file.h"

namespace ember::worker {
namespace {

using config::Bad;
using config::ReadDuration;
using config::ReadInt;

}  // namespace

void ReadBatcher(const toml::table& t, BatcherOptions* out, const std::filesystem::path& path) {
  ReadInt(t, "max-batch-size", &out->max_batch_size, 1, 65'536, path);
  ReadDuration(t, "max-queue-delay-us", &out->max_queue_delay, 0, 10'000'000, path);
  ReadInt(t, "max-batch-tokens", &out->max_batch_tokens, 0, 100'000'000, path);
  ReadInt(t, "max-queue", &out->max_queue, 1, 100'000'000, path);
  if (const toml::node* node = t.get("preferred-batch-sizes")) {
    const toml::array* sizes = node->as_array();
    if (sizes == nullptr) Bad(path, "preferred-batch-sizes", "expected an array of integers");
    out->preferred_batch_sizes.clear();
    for (const auto& s : *sizes) {
      const auto v = s.value<std::int64_t>();
      if (!v || *v < 1) Bad(path, "preferred-batch-sizes", "expected positive integers");
      out->preferred_batch_sizes.push_back(static_cast<std::size_t>(*v));
    }
  }
}

void LoadWorkerConfig(const std::filesystem::path& path, WorkerConfig* config) {
  const toml::table root = config::ParseFile(path);
  config::CheckKeys(root,
                    {"router",
                     "id",
                     "device",
                     "log-level",
                     "threads",
                     "capacity",
                     "weight",
                     "heartbeat-ms",
                     "liveness",
                     "max-batch-size",
                     "max-queue-delay-us",
                     "max-batch-tokens",
                     "max-queue",
                     "preferred-batch-sizes",
                     "models",
                     "repository",
                     "version-policy",
                     "load",
                     "curve-key",
                     "curve-server-key"},
                    path);
  WorkerOptions& w = config->worker;
  config::ReadString(root, "router", &w.router, path);
  config::ReadString(root, "id", &w.id, path);
  config::ReadString(root, "device", &w.device, path);
  config::ReadString(root, "log-level", &config->log_level, path);
  config::ReadString(root, "curve-key", &config->curve_key, path);
  config::ReadString(root, "curve-server-key", &config->curve_server_key, path);
  ReadInt(root, "threads", &config->threads, 0, 1024, path);
  ReadInt(root, "capacity", &w.capacity, 1, 1'000'000, path);
  config::ReadDouble(root, "weight", &w.weight, 1e-6, 1e6, path);
  ReadDuration(root, "heartbeat-ms", &w.heartbeat_interval, 10, 60'000, path);
  ReadInt(root, "liveness", &w.liveness, 1, 100, path);
  ReadBatcher(root, &config->batcher_defaults, path);
  config::ReadString(root, "repository", &config->repository, path);
  config::ReadString(root, "version-policy", &config->version_policy, path);
  if (const toml::node* node = root.get("load")) {
    const toml::array* names = node->as_array();
    if (names == nullptr) Bad(path, "load", "expected an array of \"NAME\" or \"NAME:VERSION\"");
    config->load.clear();
    for (const auto& n : *names) {
      const auto v = n.value<std::string>();
      if (!v) Bad(path, "load", "expected strings");
      config->load.push_back(*v);
    }
  }
  if (const toml::table* models = root["models"].as_table()) {
    for (const auto& [name, node] : *models) {
      const std::string key = "models." + std::string(name.str());
      const toml::table* t = node.as_table();
      if (t == nullptr) Bad(path, key, "expected a table");
      config::CheckKeys(*t,
                        {"path", "version", "max-batch-size", "max-queue-delay-us",
                         "max-batch-tokens", "max-queue", "preferred-batch-sizes"},
                        path, key + ".");
      ModelConfig m;
      m.name = std::string(name.str());
      m.batcher = config->batcher_defaults;
      std::string model_path;
      config::ReadString(*t, "path", &model_path, path);
      if (model_path.empty()) Bad(path, key + ".path", "required");
      m.path = model_path;
      ReadInt(*t, "version", &m.version, 1, 1'000'000'000, path);
      ReadBatcher(*t, &m.batcher, path);
      config->models.push_back(std::move(m));
    }
  }
}

ModelConfig ParseModelFlag(const std::string& text, const BatcherOptions& batcher) {
  static const std::regex kPattern(R"(^([A-Za-z0-9._\-]+)(?::([0-9]+))?=(.+)$)");
  std::smatch m;
  if (!std::regex_match(text, m, kPattern)) {
    throw std::invalid_argument("--model: expected NAME=PATH or NAME:VERSION=PATH, got '" + text +
                                "'");
  }
  ModelConfig model;
  model.name = m[1];
  model.version = m[2].matched ? static_cast<std::uint32_t>(std::stoul(m[2])) : 1;
  model.path = std::string(m[3]);
  model.batcher = batcher;
  return model;
}

}  // namespace ember::worker
