// Worker health classification alone, on a registry filled by hand.
#include "router/worker_health.h"

#include <gtest/gtest.h>

namespace ember::router {
namespace {

using namespace std::chrono_literals;

protocol::ReadyBody Ready(const std::string& model) {
  protocol::ReadyBody ready;
  ready.device = "cpu";
  ready.capacity = 4;
  ready.session = 1;
  ready.models = {protocol::ModelInfo{.name = model, .version = 1, .dim = 4}};
  return ready;
}

void Latency(WorkerRegistry& registry, const std::string& id, std::chrono::microseconds each,
             int samples, Clock::time_point now) {
  for (int i = 0; i < samples; ++i) registry.Find(id)->latency.Record(each, now);
}

TEST(WorkerHealthTest, SlowAgainstPeersOfTheSameModel) {
  const auto now = Clock::now();
  WorkerRegistry registry;
  registry.Register("a", Ready("m"), now);
  registry.Register("b", Ready("m"), now);
  registry.Register("c", Ready("other"), now);
  WorkerHealth health;
  Latency(registry, "a", 1ms, 20, now);
  Latency(registry, "b", 20ms, 20, now);
  Latency(registry, "c", 100ms, 20, now);  // another model: no peer of a or b
  health.Update(registry, now);
  EXPECT_EQ(health.Of("a"), Health::kHealthy);
  EXPECT_EQ(health.Of("b"), Health::kSlow);
  EXPECT_EQ(health.Of("c"), Health::kHealthy);  // nobody to compare with
  // Too few samples: no verdict yet.
  registry.Register("d", Ready("m"), now);
  Latency(registry, "d", 50ms, WorkerHealth::kMinSamples - 1, now);
  health.Update(registry, now);
  EXPECT_EQ(health.Of("d"), Health::kHealthy);
}

TEST(WorkerHealthTest, ErroringOverTheWindowAndRecovers) {
  const auto now = Clock::now();
  WorkerRegistry registry;
  registry.Register("a", Ready("m"), now);
  WorkerHealth health;
  for (int i = 0; i < 10; ++i) health.RecordAnswer("a", /*error=*/i % 4 != 0);  // 70% errors
  health.Update(registry, now);
  EXPECT_EQ(health.Of("a"), Health::kErroring);
  for (std::size_t i = 0; i < WorkerHealth::kWindow; ++i) health.RecordAnswer("a", false);
  health.Update(registry, now);
  EXPECT_EQ(health.Of("a"), Health::kHealthy);
}

TEST(WorkerHealthTest, DeadWorkersAreKeptForAWhileAndBounded) {
  auto now = Clock::now();
  WorkerRegistry registry;
  WorkerHealth health(HealthOptions{.dead_retention = 60s});
  for (std::size_t i = 0; i < WorkerHealth::kKeepDead + 5; ++i) {
    health.RecordDead("w" + std::to_string(i), "missed heartbeats", now);
  }
  ASSERT_EQ(health.dead().size(), WorkerHealth::kKeepDead);
  EXPECT_EQ(health.dead().back().id, "w" + std::to_string(WorkerHealth::kKeepDead + 4));
  EXPECT_EQ(health.dead().back().reason, "missed heartbeats");
  // One comes back: no longer dead.
  registry.Register(health.dead().back().id, Ready("m"), now);
  health.Update(registry, now);
  EXPECT_EQ(health.dead().size(), WorkerHealth::kKeepDead - 1);
  now += 61s;
  health.Update(registry, now);
  EXPECT_TRUE(health.dead().empty());
}

}  // namespace
}  // namespace ember::router
