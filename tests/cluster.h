// A real ember cluster for tests: one ember-router and N ember-worker
// processes on ipc:// endpoints in a fresh temporary directory, torn down
// (and their logs printed, if the test failed) when the object goes away.
#ifndef EMBER_TESTS_CLUSTER_H_
#define EMBER_TESTS_CLUSTER_H_

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

  const std::string& frontend() const { return frontend_; }
  const std::string& backend() const { return backend_; }

  // Waits (bounded) until the router lists `workers` workers with no model still LOADING;
  // false on timeout.
  bool WaitForWorkers(std::size_t workers,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

  Process& router() { return *router_; }
  Process& worker(std::size_t i) { return *workers_.at(i); }
  // Starts one more worker with routing id `id`.
  void AddWorker(const std::string& id);
  // Kills the router with SIGKILL and starts a new one on the same endpoints.
  void RestartRouter();

  // Prints every process log to stderr (used when a test fails).
  void DumpLogs() const;
  // What the (current) router has logged so far.
  std::string RouterLog() const;

 private:
  void StartRouter();

  ClusterOptions options_;
  TempDir dir_;
  std::string frontend_, backend_;
  std::unique_ptr<Process> router_;
  std::vector<std::unique_ptr<Process>> workers_;
};

// Paths baked in by CMake.
std::string RouterBinary();
std::string WorkerBinary();
std::string TinyModelDir();

}  // namespace ember::testing

#endif  // EMBER_TESTS_CLUSTER_H_
