#include "worker/worker_settings.h"

#include <regex>
#include <stdexcept>

#include "common/config_file.h"

namespace ember::worker {

const settings::Table<BatcherOptions>& BatcherSettings() {
  static const settings::Table<BatcherOptions> table = [] {
    settings::Table<BatcherOptions> t;
    t.Int(
         "max-batch-size", "texts per batch; 0: 32 on cpu, no cap on cuda",
         [](auto& b) -> auto& { return b.max_batch_size; }, 0, 65'536)
        .Section(
            "Dynamic batcher defaults for every model (each [models.NAME], and each repository\n"
            "version's config.toml, may override them): a batch leaves when it holds\n"
            "max-batch-size texts, when a preferred size can be formed, when its tokens would\n"
            "exceed max-batch-tokens, or when its oldest text has waited max-queue-delay-us.")
        .Doc(
            "Texts per batch. 0 picks by device: 32 on cpu; on cuda no cap of its own\n"
            "(65536), so that max-batch-tokens alone sizes a GPU's batches.");
    t.Duration(
         "max-queue-delay-us", "longest a text waits for its batch to fill",
         [](auto& b) -> auto& { return b.max_queue_delay; }, 0, 10'000'000)
        .Doc("Longest a text waits for its batch to fill, in microseconds.");
    t.Int(
         "max-batch-tokens",
         "tokens per batch (padded: size x longest; real tokens for backends that pack); "
         "0: 512 on cpu, 32768 on cuda",
         [](auto& b) -> auto& { return b.max_batch_tokens; }, 0, 100'000'000)
        .Doc(
            "Tokens per batch: batch size x longest text for backends that pad, the sum of the\n"
            "texts' lengths for those that pack them (the fused CPU encoder). 0 picks by\n"
            "device: 512 on cpu (throughput peaks at a few hundred tokens per batch,\n"
            "docs/batching.md), 32768 on cuda.");
    t.IntList(
         "preferred-batch-sizes", "batch sizes that leave at once when formed",
         [](auto& b) -> auto& { return b.preferred_batch_sizes; }, 1, 65'536)
        .Doc("Batch sizes that leave at once when that many texts wait; empty: none.")
        .Example("[8, 16, 32]");
    t.Int(
         "max-queue", "texts waiting per model before OVERLOADED",
         [](auto& b) -> auto& { return b.max_queue; }, 1, 100'000'000)
        .Doc(
            "Texts waiting per model; beyond it requests get OVERLOADED at once (the router\n"
            "then queues them again). A request with more texts than this is refused.");
    return t;
  }();
  return table;
}

const settings::Table<WorkerConfig>& WorkerSettings() {
  static const settings::Table<WorkerConfig> table = [] {
    settings::Table<WorkerConfig> t;
    t.TextList(
         "router", "router backend endpoint (repeat for several routers)",
         [](auto& c) -> auto& { return c.worker.routers; })
        .Doc(
            "The routers' backend endpoints. With several, the worker registers with and\n"
            "heartbeats each, and shares its capacity between the live ones (docs/balancing.md\n"
            "\"Credits across routers\"); any one may go down without losing requests.");
    t.Text(
         "id", "routing id, unique in the cluster (default: host/device/pid)",
         [](auto& c) -> auto& { return c.worker.id; })
        .Doc("Routing id, unique in the cluster; empty: host/device/pid.")
        .Example("\"gpu-a/cuda:0\"");
    t.Text(
         "device", "cpu or cuda:N", [](auto& c) -> auto& { return c.worker.device; })
        .Doc(
            "One worker per GPU: cuda:0, cuda:1, ... or cpu. The systemd template unit sets it\n"
            "from the instance name (ember-worker@0 -> cuda:0).");
    t.Int(
         "threads", "LibTorch intra-op threads per model (0: LibTorch's default)",
         [](auto& c) -> auto& { return c.threads; }, 0, 1024)
        .Doc("LibTorch intra-op threads per model; 0: LibTorch's default (1 in Debian's).");
    t.Int(
         "capacity", "texts in flight, shared by the routers",
         [](auto& c) -> auto& { return c.worker.capacity; }, 1, 100'000'000)
        .Doc(
            "Texts in flight on this worker; each of N live routers may send capacity / N.\n"
            "Keep it at most max-queue, so that a model's queue can hold all of it.");
    t.Int(
         "tokenizer-threads", "threads tokenizing for every model (0: one per core)",
         [](auto& c) -> auto& { return c.worker.tokenizer_threads; }, 0, 1024)
        .Doc(
            "Threads that tokenize the texts of every model, beside each model's scheduler\n"
            "thread; 0: one per core (as TEI).");
    t.Int(
         "batches-in-flight", "batches each model runs at once (0: 2 on cuda, 1 on cpu)",
         [](auto& c) -> auto& { return c.worker.batches_in_flight; }, 0, 64)
        .Doc(
            "Batches each model runs at once, each on an inference thread of its own; 0: the\n"
            "model's choice, 2 on cuda (the next batch's host work and copies overlap the\n"
            "current one's compute, each on a CUDA stream of its own), 1 on cpu.");
    t.Real(
         "weight", "relative speed, for weighted balancing",
         [](auto& c) -> auto& { return c.worker.weight; }, 1e-6, 1e6)
        .Doc("Relative speed, for the router's weighted round robin and adaptive policies.");
    t.Real(
         "slowdown", "make each batch take this many times as long (emulates slower hardware)",
         [](auto& c) -> auto& { return c.worker.slowdown; }, 1.0, 1000.0)
        .Doc(
            "Makes each batch take this many times as long, to emulate slower hardware in\n"
            "benchmarks and tests. 1: off.")
        .Commented();
    t.Duration(
         "heartbeat-ms", "heartbeat interval",
         [](auto& c) -> auto& { return c.worker.heartbeat_interval; }, 10, 60'000)
        .Doc("Heartbeats to the router this often, in milliseconds.");
    t.Int(
         "liveness", "heartbeats the router may miss",
         [](auto& c) -> auto& { return c.worker.liveness; }, 1, 100)
        .Doc("Heartbeats the router may miss before this worker reconnects.");
    t.Duration(
         "shutdown-grace-ms", "how long a stopping worker answers what it holds",
         [](auto& c) -> auto& { return c.worker.shutdown_grace; }, 0, 3'600'000)
        .Doc(
            "On SIGTERM the worker refuses new requests (the router sends them to another\n"
            "worker) and answers those it holds for at most this long, in milliseconds; then it\n"
            "says DISCONNECT and the router sends the rest elsewhere. Keep it below systemd's\n"
            "TimeoutStopSec and Kubernetes' terminationGracePeriodSeconds (60 s).");
    t.Text(
         "log-level", "trace, debug, info, warn, error",
         [](auto& c) -> auto& { return c.log_level; })
        .Doc("Log level: trace, debug, info, warn, error.");
    t.Text(
         "repository", "model repository: DIR/<model>/<version>/ (docs/models.md)",
         [](auto& c) -> auto& { return c.repository; })
        .Section(
            "A model repository (docs/models.md): DIR/<model>/<version>/ holding the model files\n"
            "and an optional config.toml. Models in it can be loaded, swapped and unloaded at run\n"
            "time with `emberctl models load|unload|list`.")
        .Doc("Its directory; empty: none.")
        .Example("\"/var/lib/ember/repository\"");
    t.Text(
         "version-policy", "versions to load and keep: latest, latest:N, all, versions:A,B",
         [](auto& c) -> auto& { return c.version_policy; })
        .Doc(
            "Versions loaded at startup and kept: latest, latest:N, all, versions:1,3 (a model's\n"
            "own REPO/<model>/config.toml may set its version-policy).")
        .Commented();
    t.TextList(
         "load", "NAME[:VERSION] to load from the repository at startup (default: every model)",
         [](auto& c) -> auto& { return c.load; })
        .Doc("What to load at startup (\"NAME\" or \"NAME:VERSION\"); empty: every model.")
        .Example("[\"minilm\"]");
    t.Text(
         "curve-key", "this worker's CURVE key pair file (emberctl keys generate)",
         [](auto& c) -> auto& { return c.curve_key; })
        .Example("\"/etc/ember/keys/gpu-a.key\"")
        .Section(
            "CURVE (docs/security.md), when the router has it on: this worker's key pair and the\n"
            "router's public key.")
        .Commented();
    t.Text(
         "curve-server-key", "the router's CURVE public key file; with --curve-key turns CURVE on",
         [](auto& c) -> auto& { return c.curve_server_key; })
        .Example("\"/etc/ember/keys/router.pub\"");
    return t;
  }();
  return table;
}

void LoadWorkerConfig(const std::filesystem::path& path, WorkerConfig* config) {
  const toml::table root = config::ParseFile(path);
  std::vector<std::string> known = WorkerSettings().Keys();
  for (const auto& k : BatcherSettings().Keys()) known.push_back(k);
  known.push_back("models");
  config::CheckKeys(root, known, path);
  WorkerSettings().Read(root, config, path);
  BatcherSettings().Read(root, &config->batcher_defaults, path);
  if (const toml::table* models = root["models"].as_table()) {
    std::vector<std::string> model_keys = BatcherSettings().Keys();
    model_keys.push_back("path");
    model_keys.push_back("version");
    for (const auto& [name, node] : *models) {
      const std::string key = "models." + std::string(name.str());
      const toml::table* t = node.as_table();
      if (t == nullptr) config::Bad(path, key, "expected a table");
      config::CheckKeys(*t, model_keys, path, key + ".");
      ModelConfig m;
      m.name = std::string(name.str());
      m.batcher = config->batcher_defaults;
      std::string model_path;
      config::ReadString(*t, "path", &model_path, path);
      if (model_path.empty()) config::Bad(path, key + ".path", "required");
      m.path = model_path;
      config::ReadInt(*t, "version", &m.version, 1, 1'000'000'000, path);
      BatcherSettings().Read(*t, &m.batcher, path, key + ".");
      config->models.push_back(std::move(m));
    }
  }
}

std::string RenderWorkerConfig() {
  WorkerConfig shipped;
  shipped.threads = 4;
  return "# ember-worker configuration: `ember-worker --config worker.toml`.\n"
         "# Generated by `ember-worker --print-config` (scripts/make-configs.sh): keys are the\n"
         "# worker's long flags; a flag on the command line wins (batcher flags override every\n"
         "# model's setting). Unknown keys are an error.\n" +
         WorkerSettings().Render(shipped) + BatcherSettings().Render(shipped.batcher_defaults) +
         "\n"
         "# Models to serve by path, like --model NAME[:VERSION]=PATH: a HuggingFace /\n"
         "# sentence-transformers folder (config.json, model.safetensors, vocab.txt or\n"
         "# tokenizer.json) or a TorchScript file, with optional batcher keys of its own.\n"
         "[models.minilm]\n"
         "path = \"/var/lib/ember/models/minilm\"\n"
         "version = 1\n"
         "\n"
         "# [models.bge-small]\n"
         "# path = \"/var/lib/ember/models/bge-small-en-v1.5\"\n"
         "# max-batch-size = 64\n"
         "# max-queue-delay-us = 5000\n";
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
