// ember-worker: serves models on one device for an ember router.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/config_file.h"
#include "common/shutdown_signal.h"
#include "worker/model_loader.h"
#include "worker/model_repository.h"
#include "worker/worker.h"
#include "worker/worker_config.h"

namespace {

std::string DefaultId(const std::string& device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + device + "/" + std::to_string(getpid());
}

}  // namespace

int main(int argc, char** argv) {
  ember::worker::WorkerConfig config;
  std::string config_path = ember::config::ConfigFlag(argc, argv);
  try {
    if (!config_path.empty()) ember::worker::LoadWorkerConfig(config_path, &config);
  } catch (const std::exception& e) {
    spdlog::critical("ember-worker: {}", e.what());
    return 1;
  }
  ember::worker::WorkerOptions& options = config.worker;
  ember::worker::BatcherOptions& batcher = config.batcher_defaults;
  std::vector<std::string> model_flags;

  CLI::App app{"ember-worker: runs embedding models for an ember router"};
  // A flag given twice takes its last value, so wrappers (systemd units,
  // scripts) can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--config", config_path, "TOML file (config/worker.toml); flags override it");
  app.add_option("--router", options.router, "router backend endpoint")->capture_default_str();
  app.add_option("--device", options.device, "cpu or cuda:N")->capture_default_str();
  app.add_option("--model", model_flags,
                 "NAME[:VERSION]=PATH of a model to serve (repeatable): a HuggingFace / "
                 "sentence-transformers folder or a TorchScript file")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--repository", config.repository,
                 "model repository: DIR/<model>/<version>/ (docs/models.md)");
  app.add_option("--version-policy", config.version_policy,
                 "versions to load and keep: latest, latest:N, all, versions:A,B")
      ->capture_default_str();
  app.add_option("--load", config.load,
                 "NAME[:VERSION] to load from the repository at startup (repeatable; "
                 "default: every model in it)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--id", options.id, "routing id (default: host/device/pid)");
  app.add_option("--threads", config.threads, "LibTorch intra-op threads (0: LibTorch's default)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--capacity", options.capacity, "requests in flight the router may send")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--weight", options.weight, "relative speed, for weighted balancing")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--slowdown", options.slowdown,
                 "make each batch take this many times as long (emulates slower hardware)")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str();
  // Batcher flags override every model's setting, including the file's.
  std::size_t max_batch_size = batcher.max_batch_size;
  std::int64_t max_queue_delay_us = batcher.max_queue_delay.count();
  std::size_t max_batch_tokens = batcher.max_batch_tokens;
  std::size_t max_queue = batcher.max_queue;
  std::vector<std::size_t> preferred = batcher.preferred_batch_sizes;
  auto* o_size = app.add_option("--max-batch-size", max_batch_size, "texts per batch")
                     ->check(CLI::Range(1, 65'536))
                     ->capture_default_str();
  auto* o_delay = app.add_option("--max-queue-delay-us", max_queue_delay_us,
                                 "longest a text waits for its batch to fill")
                      ->check(CLI::Range(0, 10'000'000))
                      ->capture_default_str();
  auto* o_tokens = app.add_option("--max-batch-tokens", max_batch_tokens,
                                  "padded tokens per batch (batch size x longest text); "
                                  "0: 512 on cpu, 16384 on cuda")
                       ->check(CLI::Range(0, 100'000'000))
                       ->capture_default_str();
  auto* o_queue =
      app.add_option("--max-queue", max_queue, "texts waiting per model before OVERLOADED")
          ->check(CLI::Range(1, 100'000'000))
          ->capture_default_str();
  auto* o_preferred = app.add_option("--preferred-batch-sizes", preferred,
                                     "batch sizes that leave at once when formed")
                          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                          ->delimiter(',');
  int heartbeat_ms = static_cast<int>(options.heartbeat_interval.count());
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval")
      ->check(CLI::Range(10, 60'000))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness, "heartbeats the router may miss")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  app.add_option("--curve-key", config.curve_key,
                 "this worker's CURVE key pair file (emberctl keys generate; docs/security.md)");
  app.add_option("--curve-server-key", config.curve_server_key,
                 "the router's CURVE public key file; with --curve-key turns CURVE on");
  CLI11_PARSE(app, argc, argv);
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  if (options.id.empty()) options.id = DefaultId(options.device);
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  // Flags beat the file, for every model and for the repository's defaults.
  auto apply_flags = [&](ember::worker::BatcherOptions& b) {
    if (o_size->count()) b.max_batch_size = max_batch_size;
    if (o_delay->count()) b.max_queue_delay = std::chrono::microseconds(max_queue_delay_us);
    if (o_tokens->count()) b.max_batch_tokens = max_batch_tokens;
    if (o_queue->count()) b.max_queue = max_queue;
    if (o_preferred->count()) b.preferred_batch_sizes = preferred;
  };
  apply_flags(batcher);

  ember::ShutdownSignal shutdown;
  try {
    options.curve = ember::curve::ClientKeys::Load(config.curve_key, config.curve_server_key);
    for (const auto& text : model_flags) {
      config.models.push_back(ember::worker::ParseModelFlag(text, batcher));
    }
    ember::worker::RepositorySource source;
    if (!config.repository.empty()) {
      source.repository = std::make_unique<ember::worker::ModelRepository>(
          config.repository, ember::worker::VersionPolicy::Parse(config.version_policy), batcher,
          ember::worker::LoadOptions{.device = options.device, .threads = config.threads});
      source.startup = ember::worker::StartupLoads(*source.repository, config.load);
      source.load = [](const ember::worker::ModelSpec& spec) {
        auto backend = ember::worker::LoadBackend(spec.path, spec.load);
        ember::worker::WarmUp(*backend);
        return backend;
      };
    }
    if (config.models.empty() && !source.repository) {
      throw std::invalid_argument("no model to serve: give --model or --repository");
    }
    std::vector<ember::worker::LoadedModel> models;
    for (auto& m : config.models) {
      apply_flags(m.batcher);
      if (m.batcher.max_batch_tokens == 0) {
        m.batcher.max_batch_tokens = options.device.starts_with("cuda")
                                         ? ember::worker::kGpuBatchTokens
                                         : ember::worker::kCpuBatchTokens;
      }
      spdlog::info("loading model {} version {} from {} on {}", m.name, m.version, m.path.string(),
                   options.device);
      auto backend =
          ember::worker::LoadBackend(m.path, {.device = options.device, .threads = config.threads});
      spdlog::info("model {} ready: dim {}, batches of up to {} texts / {} tokens, delay {} us",
                   m.name, backend->dim(), m.batcher.max_batch_size, m.batcher.max_batch_tokens,
                   m.batcher.max_queue_delay.count());
      models.push_back({{m.name, m.version, 0}, std::move(backend), m.batcher});
    }
    ember::worker::Worker worker(options, std::move(models), std::move(source));
    worker.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-worker: {}", e.what());
    return 1;
  }
  return 0;
}
