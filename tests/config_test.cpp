// Router and worker TOML files: values land where they should, defaults
// cascade into per-model tables, and mistakes stop the process with the file
// and key named.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iterator>

#include "gateway/gateway_settings.h"
#include "router/router_options.h"
#include "worker/worker_settings.h"

namespace ember {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  std::filesystem::path Write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("ember-config-" + std::to_string(getpid()) + ".toml");
};

TEST_F(ConfigTest, RouterFileSetsPoliciesQueuesAndWeights) {
  router::RouterOptions o;
  router::LoadRouterConfig(Write(R"(
frontend = "tcp://0.0.0.0:7000"
heartbeat-ms = 250
policy = "least_connections"
max-queue = 10
[models.big]
policy = "adaptive"
[workers."gpu/cuda:0"]
weight = 3.5
)"),
                           &o);
  EXPECT_EQ(o.frontend, "tcp://0.0.0.0:7000");
  EXPECT_EQ(o.heartbeat_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(o.ForModel("other").policy, router::PolicyKind::kLeastConnections);
  EXPECT_EQ(o.ForModel("big").policy, router::PolicyKind::kAdaptive);
  EXPECT_EQ(o.ForModel("big").max_queue, 10u) << "inherits the file's default";
  EXPECT_EQ(o.worker_weights.at("gpu/cuda:0"), 3.5);
}

TEST_F(ConfigTest, WorkerFileCascadesBatcherDefaultsIntoModels) {
  worker::WorkerConfig c;
  worker::LoadWorkerConfig(Write(R"(
device = "cuda:1"
threads = 3
max-batch-size = 16
preferred-batch-sizes = [4, 8]
[models.a]
path = "/models/a"
[models.b]
path = "/models/b"
version = 7
max-batch-size = 64
max-queue-delay-us = 500
)"),
                           &c);
  EXPECT_EQ(c.worker.device, "cuda:1");
  EXPECT_EQ(c.threads, 3);
  ASSERT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.models[0].name, "a");
  EXPECT_EQ(c.models[0].batcher.max_batch_size, 16u);
  EXPECT_EQ(c.models[0].batcher.preferred_batch_sizes, (std::vector<std::size_t>{4, 8}));
  EXPECT_EQ(c.models[1].version, 7u);
  EXPECT_EQ(c.models[1].batcher.max_batch_size, 64u);
  EXPECT_EQ(c.models[1].batcher.max_queue_delay, std::chrono::microseconds(500));
}

// The commented examples in config/ must stay loadable.
TEST_F(ConfigTest, ShippedExamplesLoad) {
  router::RouterOptions r;
  router::LoadRouterConfig(std::string(EMBER_SOURCE_DIR) + "/config/router.toml", &r);
  EXPECT_EQ(r.model_defaults.policy, router::PolicyKind::kAdaptive);
  EXPECT_EQ(r.max_texts_per_request, 1024u);
  worker::WorkerConfig w;
  worker::LoadWorkerConfig(std::string(EMBER_SOURCE_DIR) + "/config/worker.toml", &w);
  ASSERT_EQ(w.models.size(), 1u);
  EXPECT_EQ(w.models[0].name, "minilm");
}

TEST_F(ConfigTest, MistakesNameFileAndKey) {
  struct Case {
    const char* text;
    const char* key;
  };
  for (const Case& c : {Case{"policy = \"fastest\"", "policy"}, Case{"liveness = 0", "liveness"},
                        Case{"heartbeat = 100", "heartbeat"}, Case{"frontend = 5", "frontend"},
                        Case{"[workers.w]\nweight = -1", "workers.w.weight"}, Case{"x = [", ""}}) {
    router::RouterOptions o;
    try {
      router::LoadRouterConfig(Write(c.text), &o);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path_.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.key), std::string::npos) << e.what();
    }
  }
  worker::WorkerConfig w;
  EXPECT_THROW(worker::LoadWorkerConfig(Write("[models.a]\nversion = 2"), &w), std::runtime_error)
      << "a model needs a path";
  EXPECT_THROW(worker::LoadWorkerConfig(Write("max-batch-size = -1"), &w), std::runtime_error);
  EXPECT_THROW(worker::ParseModelFlag("no-equals-sign", {}), std::invalid_argument);
  EXPECT_EQ(worker::ParseModelFlag("m:3=/p", {}).version, 3u);
}

// config/*.toml are the settings tables' own output: a setting added, renamed or given a new
// default without regenerating them (scripts/make-configs.sh) fails here.
TEST_F(ConfigTest, ShippedFilesAreWhatTheSettingsTablesWrite) {
  const auto read = [](const std::string& name) {
    std::ifstream in(std::string(EMBER_SOURCE_DIR) + "/config/" + name);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("router.toml"), router::RenderRouterConfig()) << "run scripts/make-configs.sh";
  EXPECT_EQ(read("worker.toml"), worker::RenderWorkerConfig()) << "run scripts/make-configs.sh";
  EXPECT_EQ(read("gateway.toml"), gateway::RenderGatewayConfig()) << "run scripts/make-configs.sh";
  gateway::GatewayConfig g;
  gateway::LoadGatewayConfig(std::string(EMBER_SOURCE_DIR) + "/config/gateway.toml", &g);
  EXPECT_EQ(g.gateway.threads, gateway::GatewayOptions{}.threads);
}

// One declaration drives the flag and the key: the same range holds for both.
TEST_F(ConfigTest, FlagsAndKeysShareTheirRanges) {
  for (const auto& key : router::RouterSettings().Keys()) {
    SCOPED_TRACE(key);
    router::RouterOptions o;
    CLI::App app;
    router::RouterSettings().AddFlags(app, &o);
    EXPECT_NO_THROW(app.get_option("--" + key)) << "every key is a flag";
  }
  router::RouterOptions o;
  CLI::App app;
  router::RouterSettings().AddFlags(app, &o);
  const char* bad[] = {"ember-router", "--liveness", "0"};
  EXPECT_THROW(app.parse(3, bad), CLI::ValidationError) << "liveness 0 is refused as a flag";
  EXPECT_THROW(router::LoadRouterConfig(Write("liveness = 0"), &o), std::runtime_error)
      << "and as a key";
  const char* good[] = {"ember-router", "--liveness", "7", "--heartbeat-ms", "250"};
  app.parse(5, good);
  EXPECT_EQ(o.liveness, 7);
  EXPECT_EQ(o.heartbeat_interval, std::chrono::milliseconds(250));
}

TEST_F(ConfigTest, BatcherFlagsOverrideEveryModel) {
  worker::WorkerConfig c;
  worker::LoadWorkerConfig(Write("max-batch-size = 16\n[models.a]\npath = \"/a\"\n"
                                 "max-batch-size = 64\nmax-queue = 9\n"),
                           &c);
  CLI::App app;
  const auto given = worker::BatcherSettings().AddFlags(app, &c.batcher_defaults);
  const char* argv[] = {"ember-worker", "--max-batch-size", "8"};
  app.parse(3, argv);
  given.ApplyTo(c.batcher_defaults, c.models.at(0).batcher);
  EXPECT_EQ(c.models[0].batcher.max_batch_size, 8u) << "the flag wins over the file's table";
  EXPECT_EQ(c.models[0].batcher.max_queue, 9u) << "what no flag gave stays the table's";
}

}  // namespace
}  // namespace ember
