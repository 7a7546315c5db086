// The worker's settings, each declared once (common/settings.h): the defaults live in the
// structs, WorkerSettings() and BatcherSettings() give each its flag, TOML key, range and
// comment, and RenderWorkerConfig() is config/worker.toml. Precedence: defaults, then the file,
// then flags (batcher flags override every model's batcher, the file's included).
#ifndef EMBER_WORKER_WORKER_SETTINGS_H_
#define EMBER_WORKER_WORKER_SETTINGS_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/settings.h"
#include "worker/batcher.h"
#include "worker/worker.h"

namespace ember::worker {

// A model given by path: --model NAME[:VERSION]=PATH, or a [models.NAME] table.
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
  // For models that do not set their own; max-batch-size and max-batch-tokens 0: by device
  // (ResolveByDevice).
  BatcherOptions batcher_defaults = [] {
    BatcherOptions b;
    b.max_batch_size = 0;
    b.max_batch_tokens = 0;
    return b;
  }();
  std::vector<ModelConfig> models;
  std::string repository;  // model repository root; empty: none
  std::string version_policy = "latest";
  // NAME or NAME:VERSION to load from the repository at startup; empty: every model there, as
  // its version policy says.
  std::vector<std::string> load;
  // CURVE (docs/security.md): this worker's key pair file and the router's public key file;
  // both empty: CURVE off.
  std::string curve_key, curve_server_key;
};

// The dynamic batcher's keys: top level (every model's defaults), [models.NAME] tables, and
// a repository version's config.toml.
const settings::Table<BatcherOptions>& BatcherSettings();
// Every other top-level key and flag of the worker.
const settings::Table<WorkerConfig>& WorkerSettings();

// Reads a worker TOML file into *config (absent keys keep their values; [models.NAME] tables
// add models whose batchers start from the file's defaults). Throws std::runtime_error naming
// the file and key.
void LoadWorkerConfig(const std::filesystem::path& path, WorkerConfig* config);

// config/worker.toml: every setting with its comment, as shipped.
std::string RenderWorkerConfig();

// Parses a --model flag: NAME=PATH or NAME:VERSION=PATH.
ModelConfig ParseModelFlag(const std::string& text, const BatcherOptions& batcher);

}  // namespace ember::worker

#endif  // EMBER_WORKER_WORKER_SETTINGS_H_
