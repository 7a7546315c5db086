#include "client/models_command.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/client.h"
#include "client/ctl_failure.h"

namespace ember::ctl {
namespace {

using std::chrono::milliseconds;

struct Target {
  std::string model;  // NAME or NAME:VERSION
  std::vector<std::string> workers;
  bool json = false;
};

std::pair<std::string, std::uint32_t> SplitVersion(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {text, 0};
  const std::string digits = text.substr(colon + 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      digits.size() > 9) {
    throw CLI::ValidationError("model", "expected NAME or NAME:VERSION, got '" + text + "'");
  }
  return {text.substr(0, colon), static_cast<std::uint32_t>(std::stoul(digits))};
}

double MiB(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// One line on stderr saying where each worker's load stands, rewritten in
// place, while `done` is not set. Only on a terminal.
void ShowProgress(const std::vector<std::string>& routers, const std::string& model,
                  std::uint32_t version, const std::future<void>& done) {
  if (!isatty(STDERR_FILENO)) return;
  Client client(routers, {});
  const auto start = std::chrono::steady_clock::now();
  while (done.wait_for(milliseconds(500)) != std::future_status::ready) {
    std::string line;
    try {
      for (const auto& w : client.Status(milliseconds(2000)).workers) {
        for (const auto& m : w.models) {
          if (m.name != model || (version != 0 && m.version != version)) continue;
          line += " " + w.id + " v" + std::to_string(m.version) + " " +
                  std::string(protocol::ModelStateName(m.state));
        }
      }
    } catch (const Error&) {
      line = " (router busy)";
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "\r\033[K%s %.1fs:%s", model.c_str(), secs, line.c_str());
    std::fflush(stderr);
  }
  std::fprintf(stderr, "\r\033[K");
}

void PrintReply(const protocol::ControlReply& reply, bool json) {
  if (json) {
    nlohmann::json out = {
        {"op", protocol::ControlOpName(reply.op)}, {"model", reply.model}, {"results", {}}};
    for (const auto& r : reply.results) {
      out["results"].push_back({{"worker", r.worker},
                                {"ok", r.ok},
                                {"version", r.version},
                                {"memory_bytes", r.memory_bytes},
                                {"millis", r.millis}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (const auto& r : reply.results) {
    std::printf("%s %s version %u on %s: ok (%.1f MiB, %u ms)\n",
                std::string(protocol::ControlOpName(reply.op)).c_str(), reply.model.c_str(),
                r.version, r.worker.c_str(), MiB(r.memory_bytes), r.millis);
  }
}

int Manage(const std::string& op, const std::vector<std::string>& routers, int timeout_ms,
           const Target& t) {
  const auto [model, version] = SplitVersion(t.model);
  ControlOptions options;
  options.workers = t.workers;
  options.timeout = milliseconds(timeout_ms);
  std::promise<void> finished;
  std::future<void> done = finished.get_future();
  std::thread progress;
  if (op == "load") {
    progress = std::thread([&] { ShowProgress(routers, model, version, done); });
  }
  int code = 0;
  try {
    Client client(routers, {});
    const auto reply = op == "load" ? client.Load(model, version, options)
                                    : client.Unload(model, version, options);
    finished.set_value();
    if (progress.joinable()) progress.join();
    PrintReply(reply, t.json);
  } catch (const Error& e) {
    finished.set_value();
    if (progress.joinable()) progress.join();
    std::fprintf(stderr, "emberctl: %s: %s\n", std::string(ErrorCodeName(e.code())).c_str(),
                 e.what());
    code = 2;
  }
  return code;
}

int List(const std::vector<std::string>& routers, int timeout_ms, bool json) {
  Client client(routers, {});
  const auto status = client.Status(milliseconds(timeout_ms));
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& w : status.workers) {
      for (const auto& m : w.models) {
        out.push_back({{"model", m.name},
                       {"version", m.version},
                       {"worker", w.id},
                       {"device", w.device},
                       {"state", protocol::ModelStateName(m.state)},
                       {"memory_bytes", m.memory_bytes},
                       {"message", m.message},
                       {"worker_rss_bytes", w.rss_bytes}});
      }
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%-20s %7s %-28s %-8s %-10s %10s %13s  %s\n", "MODEL", "VERSION", "WORKER", "DEVICE",
              "STATE", "MEMORY_MiB", "WORKER_RSS_MiB", "");
  for (const auto& w : status.workers) {
    for (const auto& m : w.models) {
      std::printf("%-20s %7u %-28s %-8s %-10s %10.1f %13.1f  %s\n", m.name.c_str(), m.version,
                  w.id.c_str(), w.device.c_str(),
                  std::string(protocol::ModelStateName(m.state)).c_str(), MiB(m.memory_bytes),
                  MiB(w.rss_bytes), m.message.c_str());
    }
  }
  return 0;
}

}  // namespace

void AddModelsCommand(CLI::App& app, const std::vector<std::string>& routers,
                      const int& timeout_ms) {
  auto* models = app.add_subcommand("models", "load, unload and list model versions");
  models->require_subcommand(1);
  // Shared by the subcommands: only one of them runs.
  auto target = std::make_shared<Target>();
  auto add_target = [&](CLI::App* cmd) {
    cmd->add_option("model", target->model,
                    "NAME or NAME:VERSION (no version: " +
                        std::string(cmd->get_name() == "load" ? "the newest in the repository"
                                                              : "every version") +
                        ")")
        ->required();
    cmd->add_option("--worker", target->workers, "act on this worker only (repeatable)")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_flag("--json", target->json, "print JSON");
  };
  for (const char* op : {"load", "unload"}) {
    auto* cmd = models->add_subcommand(
        op, std::string(op) == "load"
                ? "load a version from the workers' repositories; older ones retire by policy"
                : "take a model (or one version) out of service and free it");
    add_target(cmd);
    cmd->callback([op, target, &routers, &timeout_ms] {
      if (const int code = Manage(op, routers, timeout_ms, *target); code != 0) {
        throw CLI::RuntimeError(code);
      }
    });
  }
  auto* list = models->add_subcommand("list", "every model version on every worker, with state");
  list->add_flag("--json", target->json, "print JSON");
  list->callback([target, &routers, &timeout_ms] {
    ReportingFailure([&] { List(routers, timeout_ms, target->json); });
  });
}

}  // namespace ember::ctl
