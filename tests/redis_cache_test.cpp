// The embedding cache's Redis second tier through real processes: a real
// redis-server (Debian's, from scripts/setup.sh; missing is a failure, not a
// skip) shared by two routers, killed and restarted under load, and a hot
// swap that must not serve the old version's vectors from Redis.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/load_client.h"
#include "tests/process.h"
#include "tests/temp_dir.h"
#include "tests/test_repository.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr char kRedisServer[] = "/usr/bin/redis-server";

// A redis-server on a unix socket in its own directory, no persistence:
// a restart starts empty.
class RedisServer {
 public:
  RedisServer() : socket_((dir_.path() / "redis.sock").string()) { Start(); }

  void Start() {
    process_ = std::make_unique<Process>(
        std::vector<std::string>{kRedisServer, "--port", "0", "--unixsocket", socket_, "--save", "",
                                 "--appendonly", "no", "--dir", dir_.path().string()},
        (dir_.path() / "redis.log").string());
  }
  void Kill() {
    process_->Signal(SIGKILL);
    std::error_code ignored;
    fs::remove(socket_, ignored);
  }
  // Waits (bounded) until it answers PING.
  bool WaitReady() {
    const auto deadline = SteadyClock::now() + 10s;
    while (SteadyClock::now() < deadline) {
      if (fs::exists(socket_) && Cli("ping") == "PONG") return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // Keys stored; -1 if redis-cli got no answer.
  long Keys() {
    const std::string out = Cli("dbsize");
    return out.empty() ? -1 : std::stol(out);
  }
  std::string address() const { return "unix:" + socket_; }

 private:
  std::string Cli(const std::string& command) {
    const std::string line = "redis-cli -s " + socket_ + " " + command + " 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(line.c_str(), "r"), pclose);
    if (!pipe) return "";
    char buffer[128] = {};
    std::string out;
    while (fgets(buffer, sizeof buffer, pipe.get()) != nullptr) out += buffer;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

  TempDir dir_{"ember-redis"};
  std::string socket_;
  std::unique_ptr<Process> process_;
};

ClusterOptions RedisCluster(const RedisServer& redis, std::size_t cache_bytes, int workers = 1) {
  ClusterOptions options;
  options.workers = workers;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms", "200",
                         "--cache-bytes",  std::to_string(cache_bytes),
                         "--cache-redis",  redis.address()};
  options.worker_args = {"--heartbeat-ms", "200"};
  return options;
}

// Waits (bounded) until Redis holds at least `keys` keys.
bool WaitForKeys(RedisServer& redis, long keys) {
  const auto deadline = SteadyClock::now() + 10s;
  while (SteadyClock::now() < deadline) {
    if (redis.Keys() >= keys) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(RedisCacheTest, RedisServerIsInstalled) {
  // scripts/setup.sh installs it; without it the other tests prove nothing.
  ASSERT_TRUE(fs::exists(kRedisServer)) << kRedisServer << " missing: run scripts/setup.sh";
}

TEST(RedisCacheTest, SecondRouterAnswersFromRedisWithoutItsWorker) {
  RedisServer redis;
  ASSERT_TRUE(redis.WaitReady()) << "redis-server did not start (scripts/setup.sh installs it)";
  Cluster a(RedisCluster(redis, 1 << 20));
  Cluster b(RedisCluster(redis, 1 << 20));
  ASSERT_TRUE(a.WaitForWorkers(1));
  ASSERT_TRUE(b.WaitForWorkers(1));
  Client client_a(a.frontend());
  Client client_b(b.frontend());
  const Reference ref = LoadTinyReference();

  const Embeddings computed = client_a.Embed("tiny", {ref.texts[0], ref.texts[1]});
  EXPECT_EQ(computed.worker(), "w1");
  ASSERT_TRUE(WaitForKeys(redis, 2)) << "router A never stored its vectors in Redis";

  const std::uint64_t before = Completed(client_b);
  const Embeddings shared = client_b.Embed("tiny", {ref.texts[0], ref.texts[1]});
  EXPECT_EQ(shared.worker(), "cache");
  EXPECT_EQ(shared.batch_size(), 0u);
  EXPECT_EQ(shared.version(), computed.version());
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_TRUE(SameBits(shared.data(), computed.data()));
  EXPECT_EQ(Completed(client_b), before) << "router B's worker computed a shared vector";

  // A partial hit across tiers: one text from Redis (via B's memory now),
  // one new one computed by B's worker, merged in order.
  const Embeddings mixed = client_b.Embed("tiny", {ref.texts[2], ref.texts[1]});
  EXPECT_EQ(mixed.worker(), "w1");
  EXPECT_EQ(mixed.batch_size(), 1u);
  EXPECT_LT(MaxAbsDiff(mixed[0], ref.vectors[2]), 1e-4f);
  EXPECT_TRUE(SameBits(mixed[1], computed[1]));
  if (HasFailure()) {
    a.DumpLogs();
    b.DumpLogs();
  }
}

TEST(RedisCacheTest, KillingRedisUnderLoadLosesNothingAndStoresResume) {
  RedisServer redis;
  ASSERT_TRUE(redis.WaitReady());
  // A 1-byte in-memory budget holds nothing: every request asks Redis.
  Cluster cluster(RedisCluster(redis, 1, /*workers=*/2));
  ASSERT_TRUE(cluster.WaitForWorkers(2));
  const Reference ref = LoadTinyReference();

  LoadOptions load;
  load.clients = 4;
  load.requests_per_client = 300;
  load.timeout_ms = 30'000;
  load.limit = 90s;
  std::atomic<int> answered{0};
  LoadResult result;
  std::thread driver([&] { result = RunLoad(cluster.frontend(), ref, load, &answered); });
  const auto until = [&](int n) {
    const auto deadline = SteadyClock::now() + 60s;
    while (answered.load() < n && SteadyClock::now() < deadline) std::this_thread::sleep_for(5ms);
  };
  until(300);
  const long stored = redis.Keys();
  redis.Kill();
  until(700);
  redis.Start();  // from the main thread (see tests/process.h)
  const bool restarted = redis.WaitReady();
  driver.join();

  EXPECT_TRUE(restarted);
  EXPECT_GT(stored, 0) << "nothing reached Redis before it was killed";
  EXPECT_EQ(result.sent, load.clients * load.requests_per_client);
  EXPECT_EQ(result.replies, result.sent);
  EXPECT_EQ(result.wrong, 0);
  EXPECT_EQ(result.duplicates, 0);
  EXPECT_EQ(result.missing, 0);
  EXPECT_EQ(result.error_count(), 0);
  EXPECT_GT(result.served_by["cache"], 0) << "Redis never answered";

  // The restarted Redis is empty; the router reconnects (backoff <= 5 s)
  // and its stores land there again.
  Client client(cluster.frontend());
  bool resumed = false;
  const auto deadline = SteadyClock::now() + 20s;
  for (int i = 0; !resumed && SteadyClock::now() < deadline; ++i) {
    client.Embed("tiny", {"after the restart " + std::to_string(i)});
    std::this_thread::sleep_for(100ms);
    resumed = redis.Keys() > 0;
  }
  EXPECT_TRUE(resumed) << "no store reached the restarted Redis";
  if (HasFailure()) cluster.DumpLogs();
}

TEST(RedisCacheTest, HotSwapNeverServesTheOldVersionFromRedis) {
  RedisServer redis;
  ASSERT_TRUE(redis.WaitReady());
  TestRepository repo;
  repo.AddTiny(1);
  repo.AddTiny(2);
  // Memory holds nothing, so a "cache" reply can only come from Redis.
  ClusterOptions options = RedisCluster(redis, 1);
  options.models.clear();
  options.worker_args = {"--heartbeat-ms",     "200",    "--repository",
                         repo.root().string(), "--load", "tiny:1"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  const auto deadline = SteadyClock::now() + 30s;
  std::optional<Embeddings> first;
  while (!first && SteadyClock::now() < deadline) {
    try {
      first = client.Embed("tiny", {"swap me"});
    } catch (const Error&) {
      std::this_thread::sleep_for(100ms);
    }
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->version(), 1u);
  ASSERT_TRUE(WaitForKeys(redis, 1));
  const Embeddings again = client.Embed("tiny", {"swap me"});
  EXPECT_EQ(again.worker(), "cache");
  EXPECT_EQ(again.version(), 1u);

  client.Load("tiny", 2);
  const Embeddings after = client.Embed("tiny", {"swap me"});
  EXPECT_EQ(after.version(), 2u);
  EXPECT_EQ(after.worker(), "w1") << "version 1's vector was served from Redis for version 2";
  ASSERT_TRUE(WaitForKeys(redis, 2));
  const Embeddings cached = client.Embed("tiny", {"swap me"});
  EXPECT_EQ(cached.worker(), "cache");
  EXPECT_EQ(cached.version(), 2u);
  if (HasFailure()) cluster.DumpLogs();
}

}  // namespace
}  // namespace ember::testing
