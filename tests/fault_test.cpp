// Faults under load: a worker killed with SIGKILL, a router restarted, more
// load than capacity, deadlines. Every request still gets exactly one answer.
// Each test is bounded in time (RunLoad's limit, explicit deadlines).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/load_client.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kHeartbeatMs = 200, kLiveness = 3;

ClusterOptions TinyCluster(int workers, std::vector<std::string> worker_args = {},
                           std::vector<std::string> router_args = {}) {
  ClusterOptions options;
  options.workers = workers;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness",
                         std::to_string(kLiveness)};
  options.router_args.insert(options.router_args.end(), router_args.begin(), router_args.end());
  options.worker_args = {"--heartbeat-ms", std::to_string(kHeartbeatMs)};
  options.worker_args.insert(options.worker_args.end(), worker_args.begin(), worker_args.end());
  return options;
}

bool Lists(const protocol::StatusReply& status, const std::string& id) {
  for (const auto& w : status.workers) {
    if (w.id == id) return true;
  }
  return false;
}

// The fault test: 8 clients, 3 workers, kill -9 one mid-run.
TEST(FaultTest, KilledWorkerLosesNoRequest) {
  // --slowdown keeps requests in flight on every worker when the kill lands.
  Cluster cluster(TinyCluster(3, {"--slowdown", "3"}));
  ASSERT_TRUE(cluster.WaitForWorkers(3));
  const Reference reference = LoadTinyReference();

  std::atomic<int> answered{0};
  LoadOptions options;
  options.requests_per_client = 150;
  LoadResult load;
  std::thread driver([&] { load = RunLoad(cluster.frontend(), reference, options, &answered); });

  // Kill w2 once the run is well under way.
  const auto wait_until = Clock::now() + 60s;
  while (answered < 300 && Clock::now() < wait_until) std::this_thread::sleep_for(5ms);
  ASSERT_GE(answered, 300) << "load did not get going";
  cluster.worker(1).Signal(SIGKILL);
  const auto killed = Clock::now();

  // The router must take it out of dispatch within liveness x interval of
  // its last message (plus our polling and scheduling slack).
  Client client(cluster.frontend());
  Clock::duration removed_after{};
  while (Clock::now() - killed < 10s) {
    if (!Lists(client.Status(), "w2")) {
      removed_after = Clock::now() - killed;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  driver.join();

  ASSERT_GT(removed_after.count(), 0) << "w2 never left the router's table";
  EXPECT_LE(removed_after, std::chrono::milliseconds(kHeartbeatMs * kLiveness + 300));
  EXPECT_EQ(load.sent, 8 * 150);
  EXPECT_EQ(load.replies, load.sent);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.error_count(), 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_GT(load.served_by["w1"], 0);
  EXPECT_GT(load.served_by["w3"], 0);
}

// The router dies and comes back on the same endpoints: workers register
// again within 3 heartbeats and a client's retries get through.
TEST(FaultTest, RouterRestartWorkersReregisterAndClientsRetry) {
  Cluster cluster(TinyCluster(2));
  ASSERT_TRUE(cluster.WaitForWorkers(2));
  Client client(cluster.frontend());
  EXPECT_EQ(client.Embed("tiny", {"before"}).size(), 1u);

  cluster.RestartRouter();
  const auto restarted = Clock::now();
  ASSERT_TRUE(cluster.WaitForWorkers(2, 10s));
  EXPECT_LE(Clock::now() - restarted, std::chrono::milliseconds(3 * kHeartbeatMs + 400));

  EmbedOptions options;
  options.timeout = 2s;
  options.attempts = 3;
  EXPECT_EQ(client.Embed("tiny", {"after"}, options).size(), 1u);
}

// A client whose request was lost with the router gets its answer by retrying.
TEST(FaultTest, ClientRetriesAcrossRouterRestart) {
  Cluster cluster(TinyCluster(1));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  cluster.router().Signal(SIGKILL);
  std::thread restart([&] {
    std::this_thread::sleep_for(300ms);
    cluster.RestartRouter();
  });
  EmbedOptions options;
  options.timeout = 1s;
  options.attempts = 6;
  const auto start = Clock::now();
  std::string outcome;
  try {
    outcome = std::to_string(client.Embed("tiny", {"retried"}, options).size());
  } catch (const Error& e) {
    outcome = std::string(ErrorCodeName(e.code())) + ": " + e.what();
  }
  restart.join();
  EXPECT_EQ(outcome, "1");
  EXPECT_LT(Clock::now() - start, 8s);
}

// More requests than capacity + queue: the excess is refused at once with
// OVERLOADED, everything else is served, nothing is lost.
TEST(FaultTest, OverloadIsRefusedWithTypedError) {
  Cluster cluster(TinyCluster(1, {"--capacity", "2", "--slowdown", "40"}, {"--max-queue", "4"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 4;
  options.requests_per_client = 10;
  options.window = 5;
  options.limit = 60s;
  LoadResult load = RunLoad(cluster.frontend(), reference, options);
  EXPECT_EQ(load.sent, 40);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_EQ(load.replies + load.errors[ErrorCode::kOverloaded], 40)
      << "replies " << load.replies << " missing " << load.missing << " timeouts "
      << load.errors[ErrorCode::kTimeout] << " unavailable "
      << load.errors[ErrorCode::kUnavailable];
  EXPECT_GT(load.errors[ErrorCode::kOverloaded], 0);
  EXPECT_GT(load.replies, 0);
}

// A request that cannot be served before its deadline gets TIMEOUT, and the
// late result is never delivered as a second answer.
TEST(FaultTest, DeadlineGivesTimeoutOnce) {
  Cluster cluster(TinyCluster(1, {"--capacity", "1", "--slowdown", "200"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 2;
  options.requests_per_client = 3;
  options.window = 3;
  options.timeout_ms = 150;
  options.limit = 30s;
  LoadResult load = RunLoad(cluster.frontend(), reference, options);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.replies + load.errors[ErrorCode::kTimeout], 6);
  EXPECT_GT(load.errors[ErrorCode::kTimeout], 0);
}

}  // namespace
}  // namespace ember::testing
