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

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
  frontend_ = "ipc://" + (dir_.path() / "frontend").string();
  backend_ = "ipc://" + (dir_.path() / "backend").string();
  StartRouter();
  for (int i = 0; i < options_.workers; ++i) AddWorker("w" + std::to_string(i + 1));
}

void Cluster::StartRouter() {
  std::vector<std::string> argv = {RouterBinary(), "--frontend", frontend_, "--backend", backend_};
  argv.insert(argv.end(), options_.router_args.begin(), options_.router_args.end());
  router_ = std::make_unique<Process>(argv, (dir_.path() / "router.log").string());
}

void Cluster::RestartRouter() {
  router_->Signal(SIGKILL);
  StartRouter();
}

void Cluster::AddWorker(const std::string& id) {
  std::vector<std::string> argv = {WorkerBinary(), "--router", backend_, "--id", id,
                                   "--threads",    "1"};
  for (const auto& m : options_.models) {
    argv.push_back("--model");
    argv.push_back(m);
  }
  argv.insert(argv.end(), options_.worker_args.begin(), options_.worker_args.end());
  workers_.push_back(std::make_unique<Process>(argv, (dir_.path() / (id + ".log")).string()));
}

Cluster::~Cluster() {
  if (::testing::Test::HasFailure()) DumpLogs();
  workers_.clear();
  router_.reset();
}

bool Cluster::WaitForWorkers(std::size_t workers, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Client client(frontend_, options_.client_curve);
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
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string Cluster::RouterLog() const {
  std::ifstream in(dir_.path() / "router.log");
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
