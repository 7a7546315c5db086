// ember-worker: serves models on one device for an ember router.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "common/config_file.h"
#include "common/shutdown_signal.h"
#include "engine/backend_factory.h"
#include "worker/model_repository.h"
#include "worker/worker.h"
#include "worker/worker_settings.h"

namespace {

std::string DefaultId(const std::string& device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + device + "/" + std::to_string(getpid());
}

}  // namespace

int main(int argc, char** argv) {
  namespace worker = ember::worker;
  worker::WorkerConfig config;
  std::string config_path = ember::config::ConfigFlag(argc, argv);
  try {
    if (!config_path.empty()) worker::LoadWorkerConfig(config_path, &config);
  } catch (const std::exception& e) {
    spdlog::critical("ember-worker: {}", e.what());
    return 1;
  }

  CLI::App app{"ember-worker: runs embedding models for an ember router"};
  app.add_option("--config", config_path, "TOML file (config/worker.toml); flags override it");
  bool print_config = false;
  app.add_flag("--print-config", print_config,
               "print the commented configuration file (config/worker.toml) and exit");
  std::vector<std::string> model_flags;
  app.add_option("--model", model_flags,
                 "NAME[:VERSION]=PATH of a model to serve (repeatable): a HuggingFace / "
                 "sentence-transformers folder or a TorchScript file")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  worker::WorkerSettings().AddFlags(app, &config);
  // Batcher flags override every model's setting, the file's included.
  const auto batcher_flags = worker::BatcherSettings().AddFlags(app, &config.batcher_defaults);
  CLI11_PARSE(app, argc, argv);
  if (print_config) {
    std::cout << worker::RenderWorkerConfig();
    return 0;
  }
  worker::WorkerOptions& options = config.worker;
  if (options.id.empty()) options.id = DefaultId(options.device);
  spdlog::set_level(spdlog::level::from_str(config.log_level));

  ember::ShutdownSignal shutdown;
  try {
    options.curve = ember::curve::ClientKeys::Load(config.curve_key, config.curve_server_key);
    for (const auto& text : model_flags) {
      config.models.push_back(worker::ParseModelFlag(text, config.batcher_defaults));
    }
    if (config.models.empty() && config.repository.empty()) {
      throw std::invalid_argument("no model to serve: give --model or --repository");
    }
    worker::ModelSource source;
    source.repository = std::make_unique<worker::ModelRepository>(
        config.repository, worker::VersionPolicy::Parse(config.version_policy),
        config.batcher_defaults,
        ember::engine::BackendOptions{.device = options.device, .threads = config.threads});
    // Models given by path load the way repository versions do: in the background, warmed
    // up, while the worker already heartbeats.
    for (auto& m : config.models) {
      batcher_flags.ApplyTo(config.batcher_defaults, m.batcher);
      source.repository->AddFixed(m.name, m.version, m.path, m.batcher);
    }
    source.startup = worker::StartupLoads(*source.repository, config.load);
    source.load = [](const worker::ModelSpec& spec) {
      // A 7-8B model takes minutes to load: how far it has come, at most every 5 s.
      ember::engine::BackendOptions load = spec.load;
      const auto start = std::chrono::steady_clock::now();
      auto last = start;
      load.progress = [&](const ember::engine::LoadProgress& p) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last < std::chrono::seconds(5)) return;
        last = now;
        spdlog::info(
            "model {} version {}: {} of {} layers loaded, {:.2f} of {:.2f} GiB read ({:.0f} s)",
            spec.name, spec.version, p.layers_loaded, p.layers,
            static_cast<double>(p.bytes_read) / (1u << 30),
            static_cast<double>(p.bytes_total) / (1u << 30),
            std::chrono::duration<double>(now - start).count());
      };
      ember::engine::Model model = ember::engine::LoadModel(spec.path, std::move(load));
      ember::engine::WarmUp(model);
      const ember::engine::Backend& backend = *model.backend;
      spdlog::info(
          "model {} version {} ready: dim {}, batches of up to {} texts / {} {} tokens, "
          "delay {} us",
          spec.name, spec.version, backend.dim(), spec.batcher.max_batch_size,
          spec.batcher.max_batch_tokens, backend.pads() ? "padded" : "real",
          spec.batcher.max_queue_delay.count());
      return model;
    };
    worker::Worker worker(options, std::move(source));
    worker.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-worker: {}", e.what());
    return 1;
  }
  return 0;
}
