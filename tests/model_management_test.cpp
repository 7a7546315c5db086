// Model management end to end: a real router and workers serving from a
// model repository on disk, driven through the client SDK's load / unload
// while clients keep sending requests.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/load_client.h"
#include "tests/test_repository.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

ClusterOptions RepositoryCluster(const TestRepository& repo, int workers,
                                 std::vector<std::string> loads) {
  ClusterOptions options;
  options.workers = workers;
  options.router_args = {"--heartbeat-ms", "200"};
  options.worker_args = {"--heartbeat-ms", "200", "--repository", repo.root().string()};
  for (auto& l : loads) {
    options.worker_args.push_back("--load");
    options.worker_args.push_back(std::move(l));
  }
  return options;
}

// (model, version) -> how many workers have it in `state`.
std::map<std::pair<std::string, std::uint32_t>, int> Count(const protocol::StatusReply& status,
                                                           protocol::ModelState state) {
  std::map<std::pair<std::string, std::uint32_t>, int> count;
  for (const auto& w : status.workers) {
    for (const auto& m : w.models) {
      if (m.state == state) ++count[{m.name, m.version}];
    }
  }
  return count;
}

// Polls until `ready` holds for the status, or `timeout` passes.
bool WaitFor(Client& client, const std::function<bool(const protocol::StatusReply&)>& ready,
             std::chrono::milliseconds timeout = 60s) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    try {
      if (ready(client.Status(1s))) return true;
    } catch (const Error&) {
    }
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::uint64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

// 8 clients keep requests in flight while version 1 of "tiny" is swapped for
// 2, 3, 4, 5 and 6 on both workers, and a second model is unloaded and
// loaded again. No request may fail, and each reply must come from a version
// that was loaded at the time: never one whose load had not begun, and never
// an older one for a request sent after a newer version's load returned.
TEST(ModelManagementTest, HotSwapUnderLoadLosesNothing) {
  TestRepository repo;
  for (std::uint32_t v = 1; v <= 6; ++v) repo.AddTiny(v);
  repo.AddFolder("minilm", 1, EMBER_MINILM_DIR);
  Cluster cluster(RepositoryCluster(repo, 2, {"tiny:1", "minilm:1"}));
  Client client(cluster.frontend());
  ASSERT_TRUE(WaitFor(client, [](const auto& s) {
    const auto ready = Count(s, protocol::ModelState::kReady);
    return s.workers.size() == 2 && ready.count({"tiny", 1}) && ready.at({"tiny", 1}) == 2 &&
           ready.count({"minilm", 1}) && ready.at({"minilm", 1}) == 2;
  }));

  std::atomic<bool> stop{false};
  LoadOptions options;
  options.requests_per_client = 1'000'000;
  options.until = &stop;
  options.record = true;
  options.limit = 180s;
  LoadResult load;
  std::thread clients([&] { load = RunLoad(cluster.frontend(), LoadTinyReference(), options); });

  std::map<std::uint32_t, Clock::time_point> load_started, load_returned;
  load_started[1] = load_returned[1] = Clock::time_point::min();
  for (std::uint32_t v = 2; v <= 6; ++v) {
    std::this_thread::sleep_for(300ms);
    load_started[v] = Clock::now();
    EXPECT_NO_THROW({
      const auto reply = client.Load("tiny", v);
      EXPECT_EQ(reply.results.size(), 2u);
    }) << "version "
       << v;
    load_returned[v] = Clock::now();
    if (v == 4) {
      EXPECT_NO_THROW(client.Unload("minilm"));
      EXPECT_NO_THROW(client.Load("minilm"));
    }
  }
  std::this_thread::sleep_for(300ms);
  stop = true;
  clients.join();

  EXPECT_EQ(load.error_count(), 0);
  for (const auto& [code, k] : load.errors) ADD_FAILURE() << k << " x " << ErrorCodeName(code);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_GT(load.replies, 200);
  std::set<std::uint32_t> versions;
  int too_new = 0, too_old = 0;
  for (const Served& s : load.served) {
    versions.insert(s.version);
    if (!load_started.contains(s.version) || load_started[s.version] > s.received) ++too_new;
    std::uint32_t floor = 1;
    for (const auto& [v, t] : load_returned) {
      if (t <= s.sent) floor = std::max(floor, v);
    }
    if (s.version < floor) ++too_old;
  }
  EXPECT_EQ(too_new, 0);
  EXPECT_EQ(too_old, 0);
  EXPECT_GE(versions.size(), 4u) << "swaps should happen while requests flow";
  std::printf(
      "hot swap: %d replies from %zu versions during 5 swaps + 1 unload/reload, "
      "0 errors expected, %d seen\n",
      load.replies, versions.size(), load.error_count());

  // Only version 6 is left, its predecessors drained and freed; a client may
  // pin it, and a pin to a retired version is refused at once.
  EXPECT_TRUE(WaitFor(
      client,
      [](const auto& s) {
        for (const auto& w : s.workers) {
          for (const auto& m : w.models) {
            if (m.name == "tiny" && m.version != 6) return false;
          }
        }
        return true;
      },
      10s));
  EXPECT_EQ(client.Embed("tiny", {"pinned"}, {.version = 6}).version(), 6u);
  try {
    client.Embed("tiny", {"pinned"}, {.version = 1});
    ADD_FAILURE() << "a retired version still answered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknownModel) << e.what();
  }
}

// Loads that cannot succeed (corrupt weights, a bad config, a version that
// is not there, a path outside the repository) fail with a reason and leave
// the serving version alone.
TEST(ModelManagementTest, FailedLoadsLeaveTheServingVersionAlone) {
  TestRepository repo;
  repo.AddTiny(1);
  WriteFile(repo.Version("tiny", 2) / "model.pt", "this is not a TorchScript archive");
  const fs::path v3 = repo.AddTiny(3);
  WriteFile(v3 / "config.toml", "precision = \"fp16\"\n");
  const fs::path v4 = repo.AddTiny(4);
  WriteFile(v4 / "config.toml", "max-batch-size = \"big\"\n");
  Cluster cluster(RepositoryCluster(repo, 1, {"tiny:1"}));
  Client client(cluster.frontend());
  ASSERT_TRUE(WaitFor(client, [](const auto& s) {
    return Count(s, protocol::ModelState::kReady).count({"tiny", 1}) > 0;
  }));

  auto load_error = [&](const std::string& model, std::uint32_t version) -> std::string {
    try {
      client.Load(model, version);
    } catch (const Error& e) {
      return std::string(ErrorCodeName(e.code())) + ": " + e.what();
    }
    return "loaded";
  };
  EXPECT_NE(load_error("tiny", 2).find("INTERNAL"), std::string::npos) << load_error("tiny", 2);
  EXPECT_NE(load_error("tiny", 3).find("precision"), std::string::npos);
  EXPECT_NE(load_error("tiny", 4).find("max-batch-size"), std::string::npos);
  EXPECT_NE(load_error("tiny", 42).find("UNKNOWN_MODEL"), std::string::npos);
  EXPECT_NE(load_error("..", 1).find("UNKNOWN_MODEL"), std::string::npos);
  EXPECT_NE(load_error("", 0).find("BAD_REQUEST"), std::string::npos);
  try {
    client.Load("tiny", 1, {.workers = {"no-such-worker"}});
    ADD_FAILURE() << "load on an unknown worker succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadRequest) << e.what();
  }
  try {
    client.Unload("absent");
    ADD_FAILURE() << "unload of an absent model succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknownModel) << e.what();
  }

  // emberctl says why and exits non-zero.
  const fs::path log = repo.root() / "emberctl.log";
  Process ctl({EMBERCTL_BIN, "--router", cluster.frontend(), "models", "load", "tiny:2"},
              log.string());
  for (int i = 0; i < 1000 && ctl.running(); ++i) std::this_thread::sleep_for(10ms);
  const int status_code = ctl.Stop();
  EXPECT_TRUE(WIFEXITED(status_code) && WEXITSTATUS(status_code) == 2) << status_code;
  std::stringstream printed;
  printed << std::ifstream(log).rdbuf();
  EXPECT_NE(printed.str().find("load tiny failed on w1"), std::string::npos) << printed.str();

  // Version 1 still serves, and the list says why version 2 failed.
  const Embeddings e = client.Embed("tiny", {"still here"});
  EXPECT_EQ(e.version(), 1u);
  const auto status = client.Status();
  ASSERT_EQ(status.workers.size(), 1u);
  bool saw_failed = false;
  for (const auto& m : status.workers[0].models) {
    if (m.version == 2) {
      saw_failed = true;
      EXPECT_EQ(m.state, protocol::ModelState::kFailed);
      EXPECT_FALSE(m.message.empty());
    }
    if (m.version == 1) {
      EXPECT_EQ(m.state, protocol::ModelState::kReady);
    }
  }
  EXPECT_TRUE(saw_failed);
}

// 20 load/unload cycles of a 86 MiB model: unloading gives the memory back
// (resident size drops by most of the model), and nothing accumulates (after
// the 20th cycle within 10% of after the first).
TEST(ModelManagementTest, MemoryReturnsAfterUnload) {
  TestRepository repo;
  repo.AddTiny(1);
  repo.AddFolder("minilm", 1, EMBER_MINILM_DIR);
  Cluster cluster(RepositoryCluster(repo, 1, {"tiny:1"}));
  Client client(cluster.frontend());
  ASSERT_TRUE(WaitFor(client, [](const auto& s) {
    return Count(s, protocol::ModelState::kReady).count({"tiny", 1}) > 0;
  }));
  const pid_t pid = cluster.worker(0).pid();
  std::uint64_t after_first = 0, after_last = 0, model_bytes = 0;
  std::uint64_t smallest_drop = std::numeric_limits<std::uint64_t>::max();
  for (int cycle = 1; cycle <= 20; ++cycle) {
    const auto loaded = client.Load("minilm", 1);
    ASSERT_EQ(loaded.results.size(), 1u);
    model_bytes = loaded.results[0].memory_bytes;
    EXPECT_EQ(client.Embed("minilm", {"cycle"}).dim(), 384u);
    const std::uint64_t with_model = ResidentBytes(pid);
    client.Unload("minilm");
    const std::uint64_t without = ResidentBytes(pid);
    smallest_drop = std::min(smallest_drop, with_model > without ? with_model - without : 0);
    if (cycle == 1) after_first = without;
    after_last = without;
  }
  std::printf(
      "memory: model %.1f MiB; worker RSS after cycle 1 %.1f MiB, after cycle 20 %.1f "
      "MiB; smallest drop on unload %.1f MiB\n",
      model_bytes / 1048576.0, after_first / 1048576.0, after_last / 1048576.0,
      smallest_drop / 1048576.0);
  ASSERT_GT(model_bytes, 80u << 20);
  EXPECT_GT(smallest_drop, model_bytes / 2) << "unloading did not give memory back";
  EXPECT_LE(after_last, after_first + after_first / 10)
      << "after the first cycle " << (after_first >> 20) << " MiB, after the 20th "
      << (after_last >> 20) << " MiB";
}

}  // namespace
}  // namespace ember::testing
