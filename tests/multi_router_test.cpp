// Several routers serving the same workers (issue 16), with real processes: two ember-routers,
// three ember-workers attached to both, eight SDK clients at steady load spread over the two
// routers. One router killed with SIGKILL, or stopped with SIGSTOP (partitioned rather than
// dead): no request is lost or answered wrongly, clients carry on through the other router,
// and when the router is back the workers register with it again and load spreads again.
// Also a worker attached to only one router, and model state seen alike through either.
// Every wait and every run is bounded.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/load_client.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kHeartbeat = 200ms;

ClusterOptions TwoRouters(int workers) {
  ClusterOptions options;
  options.routers = 2;
  options.workers = workers;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  const std::string hb = std::to_string(kHeartbeat.count());
  options.router_args = {"--heartbeat-ms", hb, "--liveness", "3"};
  options.worker_args = {"--heartbeat-ms", hb, "--liveness", "3"};
  return options;
}

ClientOptions Spread(int c) {
  return ClientOptions{.curve = {},
                       .connect_timeout = 500ms,
                       .heartbeat = kHeartbeat,
                       .home = c,
                       .backoff = {.first = 200ms, .max = 1s}};
}

// One answered request as a client saw it.
struct Answer {
  Clock::time_point sent, received;
  std::string router;  // the frontend that answered
};

// Eight clients, each embedding one reference text at a time through the routers' list until
// stopped (bounded: 60 s, 20,000 requests each). Every reply is checked against the reference.
class SteadyLoad {
 public:
  SteadyLoad(const Cluster& cluster, int clients = 8) : reference_(LoadTinyReference()) {
    for (int c = 0; c < clients; ++c) {
      threads_.emplace_back([this, c, routers = cluster.frontends()] { Run(c, routers); });
    }
  }
  ~SteadyLoad() { Stop(); }

  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  // Waits (bounded) until `n` more requests have been answered.
  bool WaitForMore(int n, std::chrono::milliseconds limit = 20s) {
    const int target = answered_.load() + n;
    const auto deadline = Clock::now() + limit;
    while (answered_.load() < target && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    return answered_.load() >= target;
  }

  int errors() const { return errors_.load(); }
  int wrong() const { return wrong_.load(); }
  std::vector<Answer> answers() {
    std::lock_guard lock(mutex_);
    return answers_;
  }
  std::string first_error() {
    std::lock_guard lock(mutex_);
    return first_error_;
  }

 private:
  void Run(int c, const std::string& routers) {
    Client client(RouterList::Split(routers), Spread(c));
    const auto until = Clock::now() + 60s;
    for (int k = 0; k < 20'000 && !stop_.load() && Clock::now() < until; ++k) {
      const std::size_t pick = static_cast<std::size_t>(c * 7 + k) % reference_.texts.size();
      const auto sent = Clock::now();
      try {
        const Embeddings e =
            client.Embed("tiny", {reference_.texts[pick]}, EmbedOptions{.timeout = 10s});
        if (e.size() != 1 || MaxAbsDiff(e[0], reference_.vectors[pick]) > 1e-4f) ++wrong_;
        std::lock_guard lock(mutex_);
        answers_.push_back({sent, Clock::now(), e.router()});
        ++answered_;
      } catch (const Error& e) {
        ++errors_;
        std::lock_guard lock(mutex_);
        if (first_error_.empty())
          first_error_ = std::string(ErrorCodeName(e.code())) + ": " + e.what();
      }
    }
  }

  const Reference reference_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answered_{0}, errors_{0}, wrong_{0};
  std::mutex mutex_;
  std::vector<Answer> answers_;
  std::string first_error_;
  std::vector<std::thread> threads_;
};

// The longest any request took among those in flight at `from` or sent in [from, to).
std::chrono::milliseconds LongestAround(const std::vector<Answer>& answers, Clock::time_point from,
                                        Clock::time_point to) {
  std::chrono::milliseconds longest{0};
  for (const auto& a : answers) {
    if (a.received < from || a.sent >= to) continue;
    longest = std::max(longest,
                       std::chrono::duration_cast<std::chrono::milliseconds>(a.received - a.sent));
  }
  return longest;
}

int AnsweredBy(const std::vector<Answer>& answers, const std::string& router,
               Clock::time_point after) {
  return static_cast<int>(std::ranges::count_if(
      answers, [&](const Answer& a) { return a.router == router && a.sent >= after; }));
}

bool BothRoutersList(Cluster& cluster, std::size_t workers) {
  return cluster.WaitForWorkers(workers, 60s, 0) && cluster.WaitForWorkers(workers, 60s, 1);
}

TEST(MultiRouterTest, KilledRouterLosesNothingAndWorkersReturnToIt) {
  Cluster cluster(TwoRouters(3));
  ASSERT_TRUE(BothRoutersList(cluster, 3));
  SteadyLoad load(cluster);
  ASSERT_TRUE(load.WaitForMore(300));

  const auto killed = Clock::now();
  cluster.KillRouter(1);
  ASSERT_TRUE(load.WaitForMore(300)) << "clients did not carry on through router 0";
  std::this_thread::sleep_for(1s);  // well past the workers' liveness for router 1

  const auto restarted = Clock::now();
  cluster.StartRouter(1);
  ASSERT_TRUE(cluster.WaitForWorkers(3, 10s, 1))
      << "workers never registered with the restarted router";
  const auto registered = Clock::now();
  const auto back = std::chrono::duration_cast<std::chrono::milliseconds>(registered - restarted);
  ASSERT_TRUE(load.WaitForMore(600));
  std::this_thread::sleep_for(1500ms);  // fail-back: clients homed on router 1 probe it
  load.Stop();

  const auto answers = load.answers();
  const auto gap = LongestAround(answers, killed, killed + 1s);
  const int spread = AnsweredBy(answers, cluster.frontend(1), registered);
  std::printf(
      "failover: longest request across the kill %lld ms; workers back on the restarted "
      "router %lld ms after its start; %d answers through it since; %zu answers, %d "
      "errors, %d wrong\n",
      static_cast<long long>(gap.count()), static_cast<long long>(back.count()), spread,
      answers.size(), load.errors(), load.wrong());
  EXPECT_EQ(load.errors(), 0) << load.first_error();
  EXPECT_EQ(load.wrong(), 0);
  EXPECT_LE(gap, 2 * kHeartbeat) << "clients took longer than 2 heartbeats to carry on";
  // From the restart: the router's own start, then 3 worker heartbeats.
  EXPECT_LE(back, 3 * kHeartbeat + 1s) << "workers took more than 3 heartbeats to re-register";
  EXPECT_GT(spread, 0) << "no client came back to the restarted router";
}

TEST(MultiRouterTest, PartitionedRouterIsLeftAndRejoined) {
  Cluster cluster(TwoRouters(3));
  ASSERT_TRUE(BothRoutersList(cluster, 3));
  SteadyLoad load(cluster);
  ASSERT_TRUE(load.WaitForMore(300));

  const auto stopped = Clock::now();
  cluster.router(1).Signal(SIGSTOP);
  ASSERT_TRUE(load.WaitForMore(300)) << "clients did not carry on through router 0";
  std::this_thread::sleep_for(1s);
  const auto resumed = Clock::now();
  cluster.router(1).Signal(SIGCONT);
  // The resumed router first drops the workers it stopped hearing, then they register again
  // and the clients homed on it fail back: answers through it again prove both.
  ASSERT_TRUE(load.WaitForMore(600));
  std::this_thread::sleep_for(1500ms);
  load.Stop();

  const auto answers = load.answers();
  const auto gap = LongestAround(answers, stopped, stopped + 1s);
  const int back = AnsweredBy(answers, cluster.frontend(1), resumed + 500ms);
  std::printf(
      "partition: longest request across the stop %lld ms; %d answers through the "
      "resumed router since; %zu answers, %d errors, %d wrong\n",
      static_cast<long long>(gap.count()), back, answers.size(), load.errors(), load.wrong());
  EXPECT_EQ(load.errors(), 0) << load.first_error();
  EXPECT_EQ(load.wrong(), 0);
  // A hung router is noticed by the clients' ZMTP heartbeats: 3 of them, then the resend.
  EXPECT_LE(gap, 3 * kHeartbeat + 2 * kHeartbeat);
  EXPECT_GT(back, 0) << "the resumed router never served again";
}

TEST(MultiRouterTest, WorkerOnOneRouterAndModelStateAcrossRouters) {
  Cluster cluster(TwoRouters(2));
  cluster.AddWorker("w3", {1});  // on router 1 only
  ASSERT_TRUE(cluster.WaitForWorkers(2, 60s, 0));
  ASSERT_TRUE(cluster.WaitForWorkers(3, 60s, 1));

  Client via0(cluster.frontend(0), curve::ClientKeys{});
  Client via1(cluster.frontend(1), curve::ClientKeys{});
  auto routers_of = [](const protocol::StatusReply& s, const std::string& id) {
    for (const auto& w : s.workers) {
      if (w.id == id) return w.routers;
    }
    return std::vector<std::string>{};
  };
  // Status names the routers each worker is attached to (once both have been heard).
  const auto deadline = Clock::now() + 10s;
  protocol::StatusReply s1;
  while (Clock::now() < deadline) {
    s1 = via1.Status(1s);
    if (routers_of(s1, "w1").size() == 2) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(routers_of(s1, "w1"),
            (std::vector<std::string>{cluster.backend(0), cluster.backend(1)}));
  EXPECT_EQ(routers_of(s1, "w3"), std::vector<std::string>{cluster.backend(1)});
  EXPECT_EQ(via0.Status(1s).workers.size(), 2u) << "router 0 must not know w3";

  // Both routers serve; w3 only through router 1.
  for (int i = 0; i < 30; ++i) {
    EXPECT_NO_THROW(via0.Embed("tiny", {"one"}));
    EXPECT_NO_THROW(via1.Embed("tiny", {"two"}));
  }

  // Unload through router 0: the workers attached to it unload, and router 1 sees the same.
  const auto unloaded = via0.Unload("tiny", 0);
  EXPECT_EQ(unloaded.results.size(), 2u);
  auto serving = [](const protocol::StatusReply& s, const std::string& id) {
    for (const auto& w : s.workers) {
      if (w.id != id) continue;
      return std::ranges::any_of(w.models, [](const protocol::ModelInfo& m) {
        return m.name == "tiny" && m.state == protocol::ModelState::kReady;
      });
    }
    return false;
  };
  bool seen = false;
  for (const auto until = Clock::now() + 5s; Clock::now() < until && !seen;) {
    const auto s = via1.Status(1s);
    seen = !serving(s, "w1") && !serving(s, "w2") && serving(s, "w3");
    if (!seen) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(seen) << "router 1 never saw the unload made through router 0";
  EXPECT_NO_THROW(via1.Embed("tiny", {"w3 still serves"}));

  // Load through router 1: every worker attached to it has it again; router 0 agrees.
  const auto loaded = via1.Load("tiny", 0);
  EXPECT_EQ(loaded.results.size(), 3u);
  seen = false;
  for (const auto until = Clock::now() + 5s; Clock::now() < until && !seen;) {
    const auto s = via0.Status(1s);
    seen = serving(s, "w1") && serving(s, "w2");
    if (!seen) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(seen) << "router 0 never saw the load made through router 1";
}

}  // namespace
}  // namespace ember::testing
