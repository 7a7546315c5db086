// emberctl: the ember command line (embed, similarity, rerank, tokenize, models, keys, status).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "client/keys_command.h"
#include "client/models_command.h"
#include "client/rerank_command.h"
#include "client/similarity_command.h"
#include "client/tokenize_command.h"

namespace {

struct GlobalFlags {
  // Router frontends; with several, each call fails over to the next (client/client.h).
  std::vector<std::string> routers = {"tcp://127.0.0.1:5555"};
  int timeout_ms = 30'000;
};

int Embed(const GlobalFlags& flags, const std::string& model, const std::vector<std::string>& texts,
          bool json, bool full, int version, bool no_truncate, std::uint32_t dimensions,
          const std::string& prompt_name) {
  ember::Client client(flags.routers, {});
  ember::EmbedOptions options;
  options.timeout = std::chrono::milliseconds(flags.timeout_ms);
  options.version = static_cast<std::uint32_t>(version);
  options.truncate = !no_truncate;
  options.dimensions = dimensions;
  options.prompt_name = prompt_name;
  const ember::Embeddings e = client.Embed(model, texts, options);
  if (json) {
    nlohmann::json out = {
        {"model", e.model()},
        {"version", e.version()},
        {"worker", e.worker()},
        {"dim", e.dim()},
        {"data", nlohmann::json::array()},
        {"usage", {{"prompt_tokens", e.total_tokens()}, {"total_tokens", e.total_tokens()}}}};
    for (std::size_t i = 0; i < e.size(); ++i) {
      out["data"].push_back({{"index", i}, {"text", texts[i]}, {"embedding", e[i]}});
      if (!e.tokens().empty()) out["data"].back()["tokens"] = e.tokens()[i];
    }
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("model %s version %u (worker %s): %zu vectors of dim %zu, %llu tokens\n",
              e.model().c_str(), e.version(), e.worker().c_str(), e.size(), e.dim(),
              static_cast<unsigned long long>(e.total_tokens()));
  for (std::size_t i = 0; i < e.size(); ++i) {
    const auto v = e[i];
    double norm = 0;
    for (float x : v) norm += double{x} * x;
    std::printf("[%zu] dim=%zu norm=%.6f  [", i, v.size(), std::sqrt(norm));
    const std::size_t shown = full ? v.size() : std::min<std::size_t>(v.size(), 4);
    for (std::size_t j = 0; j < shown; ++j) std::printf("%s%.5f", j ? ", " : "", v[j]);
    std::printf("%s]  %s\n", shown < v.size() ? ", ..." : "", texts[i].c_str());
  }
  return 0;
}

int Status(const GlobalFlags& flags, bool json) {
  ember::Client client(flags.routers, {});
  const auto status = client.Status(std::chrono::milliseconds(flags.timeout_ms));
  if (json) {
    nlohmann::json out = {{"router", status.router_version},
                          {"requests", status.requests},
                          {"workers", nlohmann::json::array()}};
    for (const auto& w : status.workers) {
      nlohmann::json models = nlohmann::json::array();
      for (const auto& m : w.models) {
        models.push_back({{"name", m.name},
                          {"version", m.version},
                          {"dim", m.dim},
                          {"state", ember::protocol::ModelStateName(m.state)},
                          {"memory_bytes", m.memory_bytes}});
      }
      out["workers"].push_back({{"id", w.id},
                                {"device", w.device},
                                {"models", models},
                                {"capacity", w.capacity},
                                {"in_flight", w.in_flight},
                                {"completed", w.completed},
                                {"failed", w.failed},
                                {"last_seen_ms", w.last_seen_ms},
                                {"weight", w.weight},
                                {"ewma_ms", w.ewma_ms},
                                {"p50_ms", w.p50_ms},
                                {"p99_ms", w.p99_ms},
                                {"rss_bytes", w.rss_bytes},
                                {"health", w.health},
                                {"routers", w.routers}});
    }
    out["models"] = nlohmann::json::array();
    for (const auto& m : status.models) {
      out["models"].push_back(
          {{"name", m.name}, {"policy", m.policy}, {"queued", m.queued}, {"workers", m.workers}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%s, %llu requests, %zu workers\n", status.router_version.c_str(),
              static_cast<unsigned long long>(status.requests), status.workers.size());
  std::printf("%-28s %-7s %-20s %6s %5s %9s %6s %7s %7s %7s %7s %6s %-8s %s\n", "WORKER", "DEVICE",
              "MODELS", "WEIGHT", "CAP", "INFLIGHT", "DONE", "ERR%", "EWMAms", "P50ms", "P99ms",
              "SEENms", "HEALTH", "ROUTERS");
  for (const auto& w : status.workers) {
    std::string models;
    for (const auto& m : w.models) {
      models += (models.empty() ? "" : ",") + m.name + ":" + std::to_string(m.version);
    }
    std::string routers;
    for (const auto& r : w.routers) routers += (routers.empty() ? "" : ",") + r;
    const double total = static_cast<double>(w.completed + w.failed);
    std::printf("%-28s %-7s %-20s %6.2f %5u %9u %6llu %7.2f %7.2f %7.2f %7.2f %6u %-8s %s\n",
                w.id.c_str(), w.device.c_str(), models.c_str(), w.weight, w.capacity, w.in_flight,
                static_cast<unsigned long long>(w.completed),
                total > 0 ? 100.0 * static_cast<double>(w.failed) / total : 0.0, w.ewma_ms,
                w.p50_ms, w.p99_ms, w.last_seen_ms, w.health.empty() ? "-" : w.health.c_str(),
                routers.empty() ? "-" : routers.c_str());
  }
  if (!status.models.empty()) {
    std::printf("\n%-28s %-22s %8s %7s\n", "MODEL", "POLICY", "WORKERS", "QUEUED");
    for (const auto& m : status.models) {
      std::printf("%-28s %-22s %8u %7u\n", m.name.c_str(), m.policy.c_str(), m.workers, m.queued);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GlobalFlags flags;
  CLI::App app{"emberctl: talk to an ember cluster"};
  app.require_subcommand(1);
  app.add_option("--router", flags.routers,
                 "router frontend endpoint; repeat (or comma-separate) for several routers")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--timeout-ms", flags.timeout_ms, "request timeout")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();

  auto* embed = app.add_subcommand("embed", "embed texts and print the vectors");
  std::string model;
  std::vector<std::string> texts;
  bool json = false, full = false, no_truncate = false;
  int version = 0;
  std::uint32_t dimensions = 0;
  std::string prompt_name;
  embed->add_option("model", model, "model name")->required();
  embed->add_option("texts", texts, "texts to embed")->required();
  embed->add_flag("--json", json, "print JSON (OpenAI-like layout)");
  embed->add_flag("--full", full, "print every component, not the first four");
  embed->add_option("--model-version", version, "model version (0: latest)")
      ->check(CLI::Range(0, 1 << 30));
  embed->add_flag("--no-truncate", no_truncate, "fail with TOO_LONG instead of truncating");
  embed->add_option("--dimensions", dimensions,
                    "the first N components, normalised again (Matryoshka models; 0: all)");
  embed->add_option("--prompt-name", prompt_name,
                    "one of the model's prompts (e.g. query) before each text; default: the "
                    "model's default prompt");

  ember::ctl::AddSimilarityCommand(app, flags.routers, flags.timeout_ms);
  ember::ctl::AddRerankCommand(app, flags.routers, flags.timeout_ms);
  ember::ctl::AddTokenizeCommand(app, flags.routers, flags.timeout_ms);
  ember::ctl::AddModelsCommand(app, flags.routers, flags.timeout_ms);
  ember::ctl::AddKeysCommand(app);

  auto* status = app.add_subcommand("status", "show the router's workers and models");
  bool status_json = false;
  status->add_flag("--json", status_json, "print JSON");

  CLI11_PARSE(app, argc, argv);
  try {
    if (embed->parsed()) {
      return Embed(flags, model, texts, json, full, version, no_truncate, dimensions, prompt_name);
    }
    if (status->parsed()) return Status(flags, status_json);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "emberctl: %s: %s\n", std::string(ember::ErrorCodeName(e.code())).c_str(),
                 e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "emberctl: %s\n", e.what());
    return 1;
  }
  return 0;
}
