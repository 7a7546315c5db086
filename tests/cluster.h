// A real ember cluster for tests: ember-router processes (one unless told) and N ember-worker
// processes attached to all of them, on ipc:// endpoints in a fresh temporary directory, torn
// down (and their logs printed, if the test failed) when the object goes away.
#ifndef EMBER_TESTS_CLUSTER_H_
#define EMBER_TESTS_CLUSTER_H_

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/curve.h"
#include "tests/process.h"
#include "tests/temp_dir.h"

namespace ember::testing {

struct ClusterOptions {
  int routers = 1;
  int workers = 2;
  std::vector<std::string> models;  // --model flags given to every worker
  std::vector<std::string> router_args;
  std::vector<std::string> worker_args;
  // Keys WaitForWorkers uses when the router has CURVE on (router_args).
  curve::ClientKeys client_curve;
};

class Cluster {
 public:
  explicit Cluster(ClusterOptions options);
  ~Cluster();

  const std::string& frontend(std::size_t router = 0) const { return routers_.at(router).frontend; }
  const std::string& backend(std::size_t router = 0) const { return routers_.at(router).backend; }
  // Every router's frontend, comma-separated, as clients take a list.
  std::string frontends() const;

  // Waits (bounded) until `router` lists `workers` workers with no model still LOADING;
  // false on timeout.
  bool WaitForWorkers(std::size_t workers,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60),
                      std::size_t router = 0);

  Process& router(std::size_t i = 0) { return *routers_.at(i).process; }
  Process& worker(std::size_t i) { return *workers_.at(i); }
  std::size_t workers() const { return workers_.size(); }
  // Starts one more worker with routing id `id`, attached to `routers` (empty: all).
  void AddWorker(const std::string& id, const std::vector<std::size_t>& routers = {});
  // Kills worker `i` with SIGKILL and starts it again as it was (same id, routers, flags).
  void RestartWorker(std::size_t i);
  // Kills router `i` with SIGKILL and starts a new one on the same endpoints.
  void RestartRouter(std::size_t i = 0);
  void KillRouter(std::size_t i) { routers_.at(i).process->Signal(SIGKILL); }
  void StartRouter(std::size_t i);

  // Prints every process log to stderr (used when a test fails).
  void DumpLogs() const;
  // What router `i` (every process that ran as it) has logged so far.
  std::string RouterLog(std::size_t i = 0) const;
  // What the worker with routing id `id` has logged so far.
  std::string WorkerLog(const std::string& id) const;

 private:
  struct RouterProcess {
    std::string frontend, backend;
    std::unique_ptr<Process> process;
  };

  ClusterOptions options_;
  TempDir dir_;
  std::vector<RouterProcess> routers_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::vector<std::pair<std::vector<std::string>, std::string>> worker_starts_;  // argv, log
};

// Paths baked in by CMake.
std::string RouterBinary();
std::string WorkerBinary();
std::string TinyModelDir();

}  // namespace ember::testing

#endif  // EMBER_TESTS_CLUSTER_H_
