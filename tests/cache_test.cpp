// The router's embedding cache through a real cluster: hits are bitwise the
// vectors a worker computed and never reach a worker, partial hits are
// merged in order, the byte budget holds, and a hot swap never serves the
// old version's vectors.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/load_client.h"
#include "tests/prometheus_scrape.h"
#include "tests/test_repository.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;

ClusterOptions CacheCluster(int port, std::size_t cache_bytes) {
  ClusterOptions options;
  options.workers = 1;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms",   "200",
                         "--cache-bytes",    std::to_string(cache_bytes),
                         "--metrics-listen", "127.0.0.1:" + std::to_string(port)};
  options.worker_args = {"--heartbeat-ms", "200"};
  return options;
}

TEST(CacheTest, HitsAreBitwiseAndNeverReachAWorker) {
  const int port = FreePort();
  Cluster cluster(CacheCluster(port, 1 << 20));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  const Reference ref = LoadTinyReference();

  const Embeddings computed = client.Embed("tiny", {ref.texts[0], ref.texts[1]});
  EXPECT_EQ(computed.worker(), "w1");
  const std::uint64_t before = Completed(client);
  const Embeddings hit = client.Embed("tiny", {ref.texts[0], ref.texts[1]});
  EXPECT_EQ(hit.worker(), "cache");
  EXPECT_EQ(hit.version(), computed.version());
  EXPECT_EQ(hit.batch_size(), 0u);
  ASSERT_EQ(hit.size(), 2u);
  EXPECT_EQ(hit.dim(), computed.dim());
  EXPECT_TRUE(SameBits(hit.data(), computed.data()));
  const Embeddings one = client.Embed("tiny", {ref.texts[1]});
  EXPECT_EQ(one.worker(), "cache");
  EXPECT_TRUE(SameBits(one[0], computed[1]));
  EXPECT_EQ(Completed(client), before) << "a hit reached a worker";

  // The truncate flag is part of the key: the same text with truncate off
  // is computed (it could fail TOO_LONG where truncating succeeds).
  EXPECT_EQ(client.Embed("tiny", {ref.texts[0]}, {.truncate = false}).worker(), "w1");

  const std::string text = ScrapeUntil(
      port, [](const std::string& t) { return Sample(t, "ember_router_cache_hits_total") == 3; });
  EXPECT_EQ(Sample(text, "ember_router_cache_hits_total"), 3) << text;
  EXPECT_EQ(Sample(text, "ember_router_cache_misses_total"), 3);
  EXPECT_EQ(Sample(text, "ember_router_cache_entries"), 3);
  EXPECT_EQ(Sample(text, R"(ember_router_requests_total{model="tiny",outcome="ok"})"), 4);
}

TEST(CacheTest, PartialHitsAreMergedInOrder) {
  const int port = FreePort();
  Cluster cluster(CacheCluster(port, 1 << 20));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  const Reference ref = LoadTinyReference();

  const Embeddings a = client.Embed("tiny", {ref.texts[0]});
  const Embeddings c = client.Embed("tiny", {ref.texts[2]});
  const std::uint64_t before = Completed(client);
  const Embeddings mixed =
      client.Embed("tiny", {ref.texts[3], ref.texts[0], ref.texts[4], ref.texts[2]});
  EXPECT_EQ(mixed.worker(), "w1");
  ASSERT_EQ(mixed.size(), 4u);
  EXPECT_LT(MaxAbsDiff(mixed[0], ref.vectors[3]), 1e-4f);
  EXPECT_TRUE(SameBits(mixed[1], a[0]));
  EXPECT_LT(MaxAbsDiff(mixed[2], ref.vectors[4]), 1e-4f);
  EXPECT_TRUE(SameBits(mixed[3], c[0]));
  EXPECT_EQ(Completed(client), before + 1);
  // The worker was asked for the two misses only: a batch of 2.
  EXPECT_EQ(mixed.batch_size(), 2u);

  // Now everything is cached: the same answer, bitwise, from the router.
  const Embeddings again =
      client.Embed("tiny", {ref.texts[3], ref.texts[0], ref.texts[4], ref.texts[2]});
  EXPECT_EQ(again.worker(), "cache");
  EXPECT_TRUE(SameBits(again.data(), mixed.data()));
  // Duplicates inside one request, some cached and some not.
  const Embeddings dup = client.Embed("tiny", {ref.texts[5], ref.texts[0], ref.texts[5]});
  ASSERT_EQ(dup.size(), 3u);
  EXPECT_TRUE(SameBits(dup[0], dup[2]));
  EXPECT_TRUE(SameBits(dup[1], a[0]));
  EXPECT_EQ(Completed(client), before + 2);
}

TEST(CacheTest, ByteBudgetHoldsAndEvictsTheOldest) {
  const int port = FreePort();
  constexpr std::size_t kBudget = 8192;
  Cluster cluster(CacheCluster(port, kBudget));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  for (int i = 0; i < 60; ++i) client.Embed("tiny", {"text number " + std::to_string(i)});
  const std::string text = ScrapeUntil(port, [](const std::string& t) {
    return Sample(t, "ember_router_cache_misses_total") == 60;
  });
  const auto bytes = Sample(text, "ember_router_cache_bytes");
  ASSERT_TRUE(bytes.has_value()) << text;
  EXPECT_LE(*bytes, kBudget);
  EXPECT_GT(*bytes, 0);
  EXPECT_GT(Sample(text, "ember_router_cache_evictions_total").value_or(0), 0);
  EXPECT_LT(Sample(text, "ember_router_cache_entries").value_or(60), 60);
  EXPECT_EQ(client.Embed("tiny", {"text number 59"}).worker(), "cache");
  EXPECT_EQ(client.Embed("tiny", {"text number 0"}).worker(), "w1");
}

TEST(CacheTest, HotSwapNeverServesTheOldVersion) {
  const int port = FreePort();
  TestRepository repo;
  repo.AddTiny(1);
  repo.AddTiny(2);
  ClusterOptions options = CacheCluster(port, 1 << 20);
  options.models.clear();
  options.worker_args = {"--heartbeat-ms",     "200",    "--repository",
                         repo.root().string(), "--load", "tiny:1"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  // Wait for version 1 to be READY.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  std::optional<Embeddings> first;
  while (!first && std::chrono::steady_clock::now() < deadline) {
    try {
      first = client.Embed("tiny", {"swap me"});
    } catch (const Error&) {
      std::this_thread::sleep_for(100ms);
    }
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->version(), 1u);
  EXPECT_EQ(client.Embed("tiny", {"swap me"}).worker(), "cache");

  client.Load("tiny", 2);
  const Embeddings after = client.Embed("tiny", {"swap me"});
  EXPECT_EQ(after.version(), 2u);
  EXPECT_EQ(after.worker(), "w1") << "an old version's vector was served";
  const Embeddings cached = client.Embed("tiny", {"swap me"});
  EXPECT_EQ(cached.worker(), "cache");
  EXPECT_EQ(cached.version(), 2u);

  // Once no worker has version 1 any more, its entries are freed.
  try {
    client.Unload("tiny", 1);
  } catch (const Error&) {
    // The worker's version policy may have retired it already.
  }
  const std::string text = ScrapeUntil(
      port, [](const std::string& t) { return Sample(t, "ember_router_cache_entries") == 1; });
  EXPECT_EQ(Sample(text, "ember_router_cache_entries"), 1) << text;
}

}  // namespace
}  // namespace ember::testing
