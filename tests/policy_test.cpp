// Balancing policies, each alone, with scripted latencies and a fake clock
// (time points built by hand; nothing here sleeps).
#include "router/policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace ember::router {
namespace {

using namespace std::chrono_literals;

class PolicyTest : public ::testing::Test {
 protected:
  PolicyTest() {
    for (const char* id : {"a", "b", "c"}) {
      WorkerState& w = workers_[id];
      w.id = id;
      w.capacity = 100;
    }
  }
  std::vector<WorkerState*> All() {
    std::vector<WorkerState*> out;
    for (auto& [id, w] : workers_) out.push_back(&w);
    return out;
  }
  // Gives worker `id` `n` samples of `latency` ending at t0_.
  void Script(const std::string& id, std::chrono::microseconds latency, int n = 20) {
    for (int i = 0; i < n; ++i) workers_[id].latency.Record(latency, t0_ - (n - i) * 1ms);
  }
  std::map<std::string, int> Count(Policy& policy, int picks, bool track_in_flight = false) {
    std::map<std::string, int> counts;
    auto all = All();
    for (int i = 0; i < picks; ++i) {
      WorkerState* w = policy.Choose("m", all, t0_);
      ++counts[w->id];
      if (track_in_flight) w->Take(static_cast<std::uint64_t>(i) + 1000, 1);
    }
    return counts;
  }
  std::map<std::string, WorkerState> workers_;
  const Clock::time_point t0_ = Clock::time_point() + 1h;
};

TEST(PolicyNamesTest, ParseAndNameRoundTrip) {
  for (auto kind :
       {PolicyKind::kRoundRobin, PolicyKind::kWeightedRoundRobin, PolicyKind::kLeastConnections,
        PolicyKind::kResponseTime, PolicyKind::kAdaptive}) {
    EXPECT_EQ(ParsePolicyKind(PolicyKindName(kind)), kind);
  }
  EXPECT_FALSE(ParsePolicyKind("random"));
}

TEST_F(PolicyTest, RoundRobinCyclesInOrderPerModel) {
  auto policy = MakePolicy(PolicyKind::kRoundRobin);
  auto all = All();
  std::string seq;
  for (int i = 0; i < 6; ++i) seq += policy->Choose("m", all, t0_)->id;
  EXPECT_EQ(seq, "abcabc");
  // Another model has its own turn.
  EXPECT_EQ(policy->Choose("other", all, t0_)->id, "a");
}

TEST_F(PolicyTest, WeightedRoundRobinFollowsWeightsSmoothly) {
  workers_["a"].weight = 5;
  workers_["b"].weight = 1;
  workers_["c"].weight = 1;
  auto policy = MakePolicy(PolicyKind::kWeightedRoundRobin);
  auto all = All();
  std::string seq;
  for (int i = 0; i < 7; ++i) seq += policy->Choose("m", all, t0_)->id;
  // nginx's smooth WRR for 5:1:1 interleaves instead of aaaaabc.
  EXPECT_EQ(seq, "aabacaa");
  const auto counts = Count(*policy, 700);
  EXPECT_EQ(counts.at("a"), 500);
  EXPECT_EQ(counts.at("b"), 100);
  EXPECT_EQ(counts.at("c"), 100);
}

TEST_F(PolicyTest, LeastConnectionsPicksFewestInFlight) {
  for (std::uint64_t id : {1, 2, 3}) workers_["a"].Take(id, 1);
  workers_["b"].Take(4, 1);
  for (std::uint64_t id : {5, 6}) workers_["c"].Take(id, 1);
  auto policy = MakePolicy(PolicyKind::kLeastConnections);
  EXPECT_EQ(policy->Choose("m", All(), t0_)->id, "b");
  // With the picks counted as in flight, load evens out: 3+3 more for b,
  // then all equal and taken in turn.
  Count(*policy, 6, /*track_in_flight=*/true);
  EXPECT_EQ(workers_["a"].in_flight.size(), 4u);
  EXPECT_EQ(workers_["b"].in_flight.size(), 4u);
  EXPECT_EQ(workers_["c"].in_flight.size(), 4u);
}

TEST_F(PolicyTest, ResponseTimePicksLowestEwma) {
  Script("a", 9000us);
  Script("b", 3000us);
  Script("c", 6000us);
  auto policy = MakePolicy(PolicyKind::kResponseTime);
  EXPECT_EQ(Count(*policy, 10).at("b"), 10);
}

TEST_F(PolicyTest, ResponseTimeTriesAnUnmeasuredWorker) {
  Script("a", 9000us);
  Script("b", 3000us);
  auto policy = MakePolicy(PolicyKind::kResponseTime);
  // c has no samples and is assumed as fast as the fastest (b): they share.
  const auto counts = Count(*policy, 10);
  EXPECT_EQ(counts.count("a"), 0u);
  EXPECT_GT(counts.at("c"), 0);
}

TEST_F(PolicyTest, AdaptiveAvoidsSlowWorkerButSpreadsLoad) {
  Script("a", 3000us);
  Script("b", 3000us);
  Script("c", 9000us);  // three times slower
  auto policy = MakePolicy(PolicyKind::kAdaptive, /*seed=*/42);
  // With nothing in flight the slow worker loses every pairing.
  EXPECT_EQ(Count(*policy, 50).count("c"), 0u);
  // As fast workers fill up, cost = latency x (in flight + 1) sends some
  // work to the slow one, in proportion to its speed.
  const auto counts = Count(*policy, 300, /*track_in_flight=*/true);
  EXPECT_GT(counts.at("c"), 20);
  EXPECT_LT(counts.at("c"), counts.at("a"));
  EXPECT_LT(counts.at("c"), counts.at("b"));
}

TEST_F(PolicyTest, AdaptiveIsDeterministicForASeed) {
  Script("a", 1000us);
  Script("b", 1100us);
  Script("c", 1200us);
  auto p1 = MakePolicy(PolicyKind::kAdaptive, 7);
  auto p2 = MakePolicy(PolicyKind::kAdaptive, 7);
  auto all = All();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(p1->Choose("m", all, t0_), p2->Choose("m", all, t0_));
}

TEST(LatencyTrackerTest, EwmaPeakAndPercentiles) {
  LatencyTracker t(std::chrono::milliseconds(1000));
  const auto t0 = Clock::time_point() + 1h;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.PeakEwmaMs(t0), 0);
  for (int i = 0; i < 100; ++i) t.Record(2ms, t0 + i * 1ms);
  EXPECT_NEAR(t.ewma_ms(), 2.0, 1e-9);
  // One slow reply: the peak jumps to it at once, the plain EWMA moves 20%.
  const auto t1 = t0 + 100ms;
  t.Record(12ms, t1);
  EXPECT_NEAR(t.PeakEwmaMs(t1), 12.0, 1e-9);
  EXPECT_NEAR(t.ewma_ms(), 4.0, 1e-9);
  // Without samples the peak decays towards the EWMA: 1/e after 1 s.
  EXPECT_NEAR(t.PeakEwmaMs(t1 + 1000ms), 4.0 + 8.0 / std::exp(1.0), 1e-6);
  EXPECT_LT(t.PeakEwmaMs(t1 + 10s), 4.01);
  EXPECT_NEAR(t.PercentileMs(0.5), 2.0, 1e-6);
  EXPECT_NEAR(t.PercentileMs(1.0), 12.0, 1e-6);
}

}  // namespace
}  // namespace ember::router
