// A Triton-style model repository on disk:
//
//   REPO/<model>/<version>/config.toml   how to run this version (optional)
//   REPO/<model>/<version>/...           the model files
//   REPO/<model>/config.toml             optional: version-policy for the model
//
// Versions are directories named by positive integers. config.toml keys
// (all optional; docs/models.md describes them):
//
//   backend = "auto" | "encoder" (or "bert") | "torchscript"
//   path = "model.pt"            # file or folder inside the version directory
//   max-batch-size, max-queue-delay-us, max-batch-tokens, max-queue,
//   preferred-batch-sizes                       # the model's batcher
//   anything else: the backend's own parameters (bert: pooling, normalize,
//   max-length, precision, lowercase), passed to it unread
//
// The repository is read when a version is loaded, so versions can be added
// while the worker runs. Models given by path (--model NAME=PATH) join it as
// fixed entries of one version each, so that they load, warm up and unload the
// same way.
#ifndef EMBER_WORKER_MODEL_REPOSITORY_H_
#define EMBER_WORKER_MODEL_REPOSITORY_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend_factory.h"
#include "worker/batcher.h"

namespace ember::worker {

// Which versions of a model a worker loads at startup and keeps loaded.
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  std::size_t latest = 1;               // kLatest: how many of the newest versions
  std::vector<std::uint32_t> versions;  // kSpecific

  // Parses "latest", "latest:N", "all" or "versions:1,3". Throws
  // std::invalid_argument with the reason.
  static VersionPolicy Parse(const std::string& text);
  std::string ToString() const;

  // The versions of `available` (ascending) to load at startup.
  std::vector<std::uint32_t> Select(const std::vector<std::uint32_t>& available) const;
  // How many versions may stay loaded at once; 0: no limit.
  std::size_t Keep() const { return kind == Kind::kLatest ? latest : 0; }
};

// Everything needed to load one model version.
struct ModelSpec {
  std::string name;
  std::uint32_t version = 0;
  std::filesystem::path path;  // what engine::LoadModel opens
  engine::BackendOptions load;
  BatcherOptions batcher;  // max_batch_size and max_batch_tokens resolved (never 0)
};

// max-batch-size and max-batch-tokens 0 mean "by device": what batches of that device want
// (kCpuBatchTexts / kGpuBatchTexts, kCpuBatchTokens / kGpuBatchTokens).
void ResolveByDevice(const std::string& device, BatcherOptions* batcher);

class ModelRepository {
 public:
  // `root` may be empty (no repository directory: only fixed models). `defaults` fills what
  // a version's config.toml leaves out; `load_defaults` carries the worker's device and
  // threads.
  ModelRepository(std::filesystem::path root, VersionPolicy policy, BatcherOptions defaults,
                  engine::BackendOptions load_defaults);

  // A model given by path (--model NAME[:VERSION]=PATH): one version, with its own batcher.
  // It hides a repository model of the same name.
  void AddFixed(std::string name, std::uint32_t version, std::filesystem::path path,
                BatcherOptions batcher);

  const std::filesystem::path& root() const { return root_; }
  // The fixed models' names, and whether `model` is one.
  std::vector<std::string> Fixed() const;
  bool IsFixed(const std::string& model) const { return fixed_.contains(model); }
  // Where models come from, for messages: "repository /var/lib/ember", or the --model list.
  std::string Describe() const;

  // Model names (directories under the root), sorted.
  std::vector<std::string> Models() const;
  // Versions of `model` on disk, ascending; empty if the model is absent.
  std::vector<std::uint32_t> Versions(const std::string& model) const;
  // The model's version policy: its own config.toml's, else the worker's.
  VersionPolicy PolicyFor(const std::string& model) const;
  // Reads REPO/model/version/config.toml. Throws std::runtime_error naming
  // the file and key for a bad config, or if the version is not there.
  ModelSpec Spec(const std::string& model, std::uint32_t version) const;

 private:
  struct FixedModel {
    std::uint32_t version = 1;
    std::filesystem::path path;
    BatcherOptions batcher;
  };

  std::filesystem::path root_;
  VersionPolicy policy_;
  BatcherOptions batcher_defaults_;
  engine::BackendOptions load_defaults_;
  std::map<std::string, FixedModel> fixed_;
};

// What a worker loads when it starts: every fixed model, then each NAME[:VERSION] of
// `requested` (NAME alone: the versions its policy selects), or, when `requested` is empty,
// every model in the repository directory by its policy. Throws std::invalid_argument for a
// malformed entry or a model not there.
std::vector<std::pair<std::string, std::uint32_t>> StartupLoads(
    const ModelRepository& repository, const std::vector<std::string>& requested);

}  // namespace ember::worker

#endif  // EMBER_WORKER_MODEL_REPOSITORY_H_
