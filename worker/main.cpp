// ember-worker: serves models on one device for an ember router.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <regex>

#include "common/shutdown_signal.h"
#include "worker/model_loader.h"
#include "worker/worker.h"

namespace {

struct ModelFlag {
  ember::protocol::ModelInfo info;
  std::string path;
};

// Parses NAME=PATH or NAME:VERSION=PATH.
ModelFlag ParseModelFlag(const std::string& text) {
  static const std::regex kPattern(R"(^([A-Za-z0-9._\-]+)(?::([0-9]+))?=(.+)$)");
  std::smatch m;
  if (!std::regex_match(text, m, kPattern)) {
    throw CLI::ValidationError("--model",
                               "expected NAME=PATH or NAME:VERSION=PATH, got '" + text + "'");
  }
  ModelFlag flag;
  flag.info.name = m[1];
  flag.info.version = m[2].matched ? static_cast<std::uint32_t>(std::stoul(m[2])) : 1;
  flag.path = m[3];
  return flag;
}

std::string DefaultId(const std::string& device) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + device + "/" + std::to_string(getpid());
}

}  // namespace

int main(int argc, char** argv) {
  ember::worker::WorkerOptions options;
  std::vector<std::string> model_flags;
  int threads = 0;
  CLI::App app{"ember-worker: runs embedding models for an ember router"};
  // A flag given twice takes its last value, so wrappers (systemd units,
  // scripts) can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_config("--config", "", "TOML file with the same keys as the long flags");
  app.add_option("--router", options.router, "router backend endpoint")->capture_default_str();
  app.add_option("--device", options.device, "cpu or cuda:N")->capture_default_str();
  app.add_option("--model", model_flags,
                 "NAME[:VERSION]=PATH of a model to serve (repeatable): a HuggingFace / "
                 "sentence-transformers folder or a TorchScript file")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->required();
  app.add_option("--id", options.id, "routing id (default: host/device/pid)");
  app.add_option("--threads", threads, "LibTorch intra-op threads (0: LibTorch's default)")
      ->check(CLI::Range(0, 1024));
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
  app.add_option("--max-batch-texts", options.max_batch_texts, "texts per inference batch")
      ->check(CLI::Range(1, 65'536))
      ->capture_default_str();
  int heartbeat_ms = static_cast<int>(options.heartbeat_interval.count());
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval")
      ->check(CLI::Range(10, 60'000))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness, "heartbeats the router may miss")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  if (options.id.empty()) options.id = DefaultId(options.device);
  spdlog::set_level(spdlog::level::from_str(log_level));

  ember::ShutdownSignal shutdown;
  try {
    std::vector<ember::worker::LoadedModel> models;
    for (const auto& text : model_flags) {
      ModelFlag flag = ParseModelFlag(text);
      spdlog::info("loading model {} version {} from {} on {}", flag.info.name, flag.info.version,
                   flag.path, options.device);
      auto backend =
          ember::worker::LoadBackend(flag.path, {.device = options.device, .threads = threads});
      spdlog::info("model {} ready: dim {}", flag.info.name, backend->dim());
      models.push_back({flag.info, std::move(backend)});
    }
    ember::worker::Worker worker(options, std::move(models));
    worker.Run(shutdown.flag());
  } catch (const std::exception& e) {
    spdlog::critical("ember-worker: {}", e.what());
    return 1;
  }
  return 0;
}
