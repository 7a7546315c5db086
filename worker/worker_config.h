// The worker's settings: defaults, then a TOML file (config/worker.toml
// documents every key), then command-line flags.
#ifndef EMBER_WORKER_WORKER_CONFIG_H_
#define EMBER_WORKER_WORKER_CONFIG_H_

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "worker/batcher.h"
#include "worker/worker.h"

namespace ember::worker {

struct ModelConfig {
  std::string name;
  std::uint32_t version = 1;
  std::filesystem::path path;
  BatcherOptions batcher;
};

struct WorkerConfig {
  WorkerOptions worker;
  int threads = 0;  // LibTorch intra-op threads per model
  std::string log_level = "info";
  BatcherOptions batcher_defaults;  // for models that do not set their own
  std::vector<ModelConfig> models;
  std::string repository;  // model repository root; empty: none
  std::string version_policy = "latest";
  // NAME or NAME:VERSION to load from the repository at startup; empty:
  // every model there, as its version policy says.
  std::vector<std::string> load;
  // CURVE (docs/security.md): this worker's key pair file and the router's
  // public key file; both empty: CURVE off.
  std::string curve_key, curve_server_key;
};

// Reads a worker TOML file into *config (absent keys keep their values;
// [models.NAME] tables add models whose batchers start from the file's
// defaults). Throws std::runtime_error naming the file and key.
void LoadWorkerConfig(const std::filesystem::path& path, WorkerConfig* config);

// Reads the batcher keys (max-batch-size, max-queue-delay-us,
// max-batch-tokens, max-queue, preferred-batch-sizes) present in `t`.
void ReadBatcher(const toml::table& t, BatcherOptions* out, const std::filesystem::path& path);

// Parses a --model flag: NAME=PATH or NAME:VERSION=PATH.
ModelConfig ParseModelFlag(const std::string& text, const BatcherOptions& batcher);

}  // namespace ember::worker

#endif  // EMBER_WORKER_WORKER_CONFIG_H_
