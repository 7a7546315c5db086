// ember-worker: serves models on one device for an ember router.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/config_file.h"
#include "common/shutdown_signal.h"
#include "worker/model_loader.h"
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
  CLI11_PARSE(app, argc, argv);
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  if (options.id.empty()) options.id = DefaultId(options.device);
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  ember::ShutdownSignal shutdown;
  try {
    for (const auto& text : model_flags) {
      config.models.push_back(ember::worker::ParseModelFlag(text, batcher));
    }
    if (config.models.empty()) throw std::invalid_argument("no model to serve: give --model");
    std::vector<ember::worker::LoadedModel> models;
    for (auto& m : config.models) {
      if (o_size->count()) m.batcher.max_batch_size = max_batch_size;
      if (o_delay->count())
        m.batcher.max_queue_delay = std::chrono::microseconds(max_queue_delay_us);
      if (o_tokens->count()) m.batcher.max_batch_tokens = max_batch_tokens;
      if (o_queue->count()) m.batcher.max_queue = max_queue;
      if (o_preferred->count()) m.batcher.preferred_batch_sizes = preferred;
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
    ember::worker::Worker worker(options, std::move(models));
    worker.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-worker: {}", e.what());
    return 1;
  }
  return 0;
}
