#include "tests/cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include "client/client.h"

namespace ember::testing {

std::string RouterBinary() { return EMBER_ROUTER_BIN; }
std::string WorkerBinary() { return EMBER_WORKER_BIN; }
std::string TinyModelDir() { return EMBER_TINY_DIR; }

namespace {

// Router 0 keeps the names a one-router cluster always had.
std::string Numbered(const std::string& name, std::size_t i) {
  return i == 0 ? name : name + std::to_string(i);
}

}  // namespace

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
  for (std::size_t i = 0; i < static_cast<std::size_t>(std::max(options_.routers, 1)); ++i) {
    routers_.push_back({.frontend = "ipc://" + (dir_.path() / Numbered("frontend", i)).string(),
                        .backend = "ipc://" + (dir_.path() / Numbered("backend", i)).string(),
                        .process = nullptr});
    StartRouter(i);
  }
  for (int i = 0; i < options_.workers; ++i) AddWorker("w" + std::to_string(i + 1));
}

std::string Cluster::frontends() const {
  std::string list;
  for (const auto& r : routers_) list += (list.empty() ? "" : ",") + r.frontend;
  return list;
}

void Cluster::StartRouter(std::size_t i) {
  RouterProcess& r = routers_.at(i);
  std::vector<std::string> argv = {RouterBinary(), "--frontend", r.frontend, "--backend",
                                   r.backend};
  argv.insert(argv.end(), options_.router_args.begin(), options_.router_args.end());
  r.process =
      std::make_unique<Process>(argv, (dir_.path() / (Numbered("router", i) + ".log")).string());
}

void Cluster::RestartRouter(std::size_t i) {
  KillRouter(i);
  StartRouter(i);
}

void Cluster::AddWorker(const std::string& id, const std::vector<std::size_t>& routers) {
  std::vector<std::string> argv = {WorkerBinary(), "--id", id, "--threads", "1"};
  for (std::size_t i = 0; i < routers_.size(); ++i) {
    if (!routers.empty() && std::ranges::find(routers, i) == routers.end()) continue;
    argv.push_back("--router");
    argv.push_back(routers_[i].backend);
  }
  for (const auto& m : options_.models) {
    argv.push_back("--model");
    argv.push_back(m);
  }
  argv.insert(argv.end(), options_.worker_args.begin(), options_.worker_args.end());
  const std::string log = (dir_.path() / (id + ".log")).string();
  workers_.push_back(std::make_unique<Process>(argv, log));
  worker_starts_.emplace_back(std::move(argv), log);
}

void Cluster::RestartWorker(std::size_t i) {
  workers_.at(i)->Signal(SIGKILL);
  const auto& [argv, log] = worker_starts_.at(i);
  workers_[i] = std::make_unique<Process>(argv, log);
}

Cluster::~Cluster() {
  if (::testing::Test::HasFailure()) DumpLogs();
  workers_.clear();
  for (auto& r : routers_) r.process.reset();
}

bool Cluster::WaitForWorkers(std::size_t workers, std::chrono::milliseconds timeout,
                             std::size_t router) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Client client(frontend(router), options_.client_curve);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      // Registered and serving: models given at startup load in the background.
      std::size_t serving = 0;
      for (const auto& w : client.Status(std::chrono::milliseconds(500)).workers) {
        serving += std::ranges::none_of(w.models, [](const protocol::ModelInfo& m) {
          return m.state == protocol::ModelState::kLoading;
        });
      }
      if (serving >= workers) return true;
    } catch (const Error&) {
      // Router not up yet.
    }
    // Often enough that a test timing a registration (multi_router_test) reads it to ~20 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string Cluster::RouterLog(std::size_t i) const {
  std::ifstream in(dir_.path() / (Numbered("router", i) + ".log"));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string Cluster::WorkerLog(const std::string& id) const {
  std::ifstream in(dir_.path() / (id + ".log"));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void Cluster::DumpLogs() const {
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    if (entry.path().extension() != ".log") continue;
    std::cerr << "----- " << entry.path().filename().string() << " -----\n"
              << std::ifstream(entry.path()).rdbuf() << "\n";
  }
}

}  // namespace ember::testing
