// The router's Prometheus endpoint against a real cluster: known traffic
// shows up as exact counts, a worker slowed 20x next to a normal one is
// flagged slow, and a killed worker shows as dead.
#include <gtest/gtest.h>
#include <signal.h>

#include <optional>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/load_client.h"
#include "tests/prometheus_scrape.h"
#include "tests/temp_dir.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;

ClusterOptions MetricsCluster(int workers, int port) {
  ClusterOptions options;
  options.workers = workers;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms",          "200",
                         "--max-texts-per-request", "4",
                         "--metrics-listen",        "127.0.0.1:" + std::to_string(port)};
  options.worker_args = {"--heartbeat-ms", "200"};
  return options;
}

std::optional<ErrorCode> CodeOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.code();
  }
  return std::nullopt;
}

double SumOf(const std::string& text, const std::vector<std::string>& series) {
  double sum = 0;
  for (const auto& s : series) sum += Sample(text, s).value_or(0);
  return sum;
}

TEST(MetricsTest, KnownTrafficGivesExactCounts) {
  const int port = FreePort();
  Cluster cluster(MetricsCluster(2, port));
  ASSERT_TRUE(cluster.WaitForWorkers(2));
  Client client(cluster.frontend());
  const Reference reference = LoadTinyReference();

  std::uint64_t tokens = 0;  // as the replies report them
  for (int i = 0; i < 10; ++i) {
    const Embeddings e = client.Embed("tiny", {reference.texts[i % 4], reference.texts[5]});
    ASSERT_EQ(e.size(), 2u);
    tokens += e.total_tokens();
  }
  ASSERT_GT(tokens, 20u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(CodeOf([&] { client.Embed("no-such-model", {"x"}); }), ErrorCode::kUnknownModel);
  }
  for (int i = 0; i < 2; ++i) {  // over --max-texts-per-request
    EXPECT_EQ(CodeOf([&] {
                client.Embed("tiny", {"a", "b", "c", "d", "e"});
              }),
              ErrorCode::kBadRequest);
  }

  const std::string ok = R"(ember_router_requests_total{model="tiny",outcome="ok"})";
  const std::string text = ScrapeUntil(port, [&](const std::string& t) {
    return Sample(t, ok) == 10 &&
           Sample(t, R"(ember_router_requests_total{model="tiny",outcome="BAD_REQUEST"})") == 2;
  });
  ASSERT_FALSE(text.empty()) << "no answer on the metrics port";
  EXPECT_EQ(Sample(text, ok), 10) << text;
  EXPECT_EQ(
      Sample(text, R"(ember_router_requests_total{model="no-such-model",outcome="UNKNOWN_MODEL"})"),
      3);
  EXPECT_EQ(Sample(text, R"(ember_router_requests_total{model="tiny",outcome="BAD_REQUEST"})"), 2);
  EXPECT_EQ(Sample(text, R"(ember_router_errors_total{code="UNKNOWN_MODEL"})"), 3);
  EXPECT_EQ(Sample(text, R"(ember_router_errors_total{code="BAD_REQUEST"})"), 2);
  // Histograms: one observation per successful request.
  EXPECT_EQ(Sample(text, R"(ember_router_request_duration_seconds_count{model="tiny"})"), 10);
  EXPECT_EQ(Sample(text, R"(ember_router_request_duration_seconds_bucket{model="tiny",le="+Inf"})"),
            10);
  EXPECT_GT(Sample(text, R"(ember_router_request_duration_seconds_sum{model="tiny"})").value_or(0),
            0);
  EXPECT_EQ(Sample(text, R"(ember_router_dispatch_duration_seconds_count{model="tiny"})"), 10);
  EXPECT_EQ(SumOf(text, {R"(ember_worker_dispatch_duration_seconds_count{worker="w1"})",
                         R"(ember_worker_dispatch_duration_seconds_count{worker="w2"})"}),
            10);
  EXPECT_EQ(Sample(text, R"(ember_worker_batch_size_count{model="tiny"})"), 10);
  // Each request went alone (one client, one at a time): batches of 2 texts.
  EXPECT_EQ(Sample(text, R"(ember_worker_batch_size_bucket{model="tiny",le="1"})"), 0);
  EXPECT_EQ(Sample(text, R"(ember_worker_batch_size_bucket{model="tiny",le="2"})"), 10);
  // Issue 26: the tokens the workers ran, as the replies reported them.
  EXPECT_EQ(Sample(text, R"(ember_worker_tokens_total{model="tiny"})"),
            static_cast<double>(tokens));
  EXPECT_EQ(SumOf(text, {R"(ember_worker_completed_total{worker="w1"})",
                         R"(ember_worker_completed_total{worker="w2"})"}),
            10);
  // Live state.
  for (const std::string w : {"w1", "w2"}) {
    EXPECT_EQ(Sample(text, "ember_worker_up{worker=\"" + w + "\"}"), 1) << w;
    EXPECT_EQ(Sample(text, "ember_worker_health{worker=\"" + w + "\",state=\"healthy\"}"), 1);
    EXPECT_EQ(Sample(text, "ember_worker_in_flight{worker=\"" + w + "\"}"), 0);
    EXPECT_EQ(Sample(text, "ember_worker_model_state{worker=\"" + w +
                               "\",model=\"tiny\",version=\"1\",state=\"READY\"}"),
              1);
    EXPECT_LT(Sample(text, "ember_worker_last_seen_seconds{worker=\"" + w + "\"}").value_or(99), 2);
  }
  EXPECT_EQ(Sample(text, R"(ember_router_queue_depth{model="tiny"})"), 0);
  EXPECT_EQ(Sample(text, "ember_router_requests_in_flight"), 0);
  EXPECT_EQ(Sample(text, "ember_router_cache_hits_total"), 0);  // the cache is off
  for (const auto& w : client.Status().workers) EXPECT_EQ(w.health, "healthy") << w.id;
}

TEST(MetricsTest, SlowWorkerIsFlaggedAndKilledWorkerShowsDead) {
  const int port = FreePort();
  ClusterOptions options = MetricsCluster(1, port);
  options.router_args.insert(options.router_args.end(), {"--policy", "round_robin"});
  Cluster cluster(options);
  // The second worker, 20 times slower: the cluster gives every worker the
  // same flags, so this one is started by hand.
  TempDir logs("ember-metrics");
  Process slow(
      {WorkerBinary(), "--router", cluster.backend(), "--id", "slow", "--threads", "1", "--model",
       "tiny=" + TinyModelDir() + "/model.pt", "--heartbeat-ms", "200", "--slowdown", "20"},
      (logs.path() / "slow.log").string());
  ASSERT_TRUE(cluster.WaitForWorkers(2));
  Client client(cluster.frontend());
  const Reference reference = LoadTinyReference();
  // Round robin: both get about half; the health check needs 8 replies each.
  for (int i = 0; i < 40; ++i) client.Embed("tiny", {reference.texts[i % 8]});

  const std::string slow_series = R"(ember_worker_health{worker="slow",state="slow"})";
  std::string text =
      ScrapeUntil(port, [&](const std::string& t) { return Sample(t, slow_series) == 1; });
  EXPECT_EQ(Sample(text, slow_series), 1) << text;
  EXPECT_EQ(Sample(text, R"(ember_worker_health{worker="w1",state="healthy"})"), 1);
  std::map<std::string, std::string> health;
  for (const auto& w : client.Status().workers) health[w.id] = w.health;
  EXPECT_EQ(health["slow"], "slow");
  EXPECT_EQ(health["w1"], "healthy");

  slow.Signal(SIGKILL);
  // Removed after 3 missed heartbeats of 200 ms.
  const std::string dead_series = R"(ember_worker_health{worker="slow",state="dead"})";
  text = ScrapeUntil(port, [&](const std::string& t) { return Sample(t, dead_series) == 1; });
  EXPECT_EQ(Sample(text, dead_series), 1) << text;
  EXPECT_EQ(Sample(text, R"(ember_worker_up{worker="slow"})"), 0);
  EXPECT_EQ(Sample(text, R"(ember_worker_health{worker="slow",state="slow"})"), 0);
  EXPECT_EQ(Sample(text, R"(ember_worker_up{worker="w1"})"), 1);
  EXPECT_EQ(client.Status().workers.size(), 1u);
  // The survivor still answers.
  EXPECT_EQ(client.Embed("tiny", {"after"}).size(), 1u);
}

}  // namespace
}  // namespace ember::testing
