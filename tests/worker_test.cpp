// The worker's model-version rules, end to end through its socket: a real Worker with fake
// backends (tests/fakes/fake_backend.h) whose loads the test holds open at will, and the test
// itself as its router (tests/fakes/scripted_router.h). Fast (no model, no LibTorch), and exact
// about what the worker announces and answers, in what order.
#include "worker/worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "tests/fakes/fake_backend.h"
#include "tests/fakes/scripted_router.h"
#include "tests/temp_dir.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ModelState;

// The state of (model, version) in `ready`, or nullopt when it is not listed.
std::optional<ModelState> StateIn(const protocol::ReadyBody& ready, const std::string& model,
                                  std::uint32_t version) {
  for (const auto& m : ready.models) {
    if (m.name == model && m.version == version) return m.state;
  }
  return std::nullopt;
}

// How a harness's worker is set up.
struct HarnessSetup {
  std::vector<std::uint32_t> gated{};  // versions whose load waits for the gate
  std::string policy = "latest";
  int routers = 1;
  std::uint32_t capacity = 256;
  int liveness = 20;          // x 100 ms heartbeats
  bool hold_batches = false;  // every batch waits for the gate too
};

// A worker serving repository REPO/m/{1,2} (fake backends tagged with their version), with
// the load of every version in `gated` held until its gate opens, attached to `routers`
// scripted routers.
class WorkerHarness {
 public:
  explicit WorkerHarness(std::vector<std::uint32_t> gated = {}, std::string policy = "latest")
      : WorkerHarness(HarnessSetup{.gated = std::move(gated), .policy = std::move(policy)}) {}
  explicit WorkerHarness(HarnessSetup setup) {
    for (int i = 0; i < setup.routers; ++i) {
      endpoints_.push_back("ipc://" + (dir_.path() / ("backend" + std::to_string(i))).string());
      routers_.push_back(std::make_unique<ScriptedRouter>(endpoints_.back()));
    }
    const auto& gated = setup.gated;
    const auto& policy = setup.policy;
    for (const char* v : {"1", "2"})
      std::filesystem::create_directories(dir_.path() / "repo/m" / v);
    worker::ModelSource source;
    source.repository = std::make_unique<worker::ModelRepository>(
        dir_.path() / "repo", worker::VersionPolicy::Parse(policy), worker::BatcherOptions{},
        engine::BackendOptions{});
    source.startup = {{"m", 1}};
    source.load = [this, gated, hold = setup.hold_batches](const worker::ModelSpec& spec) {
      if (std::ranges::find(gated, spec.version) != gated.end()) {
        if (!gate_.Wait(30s)) throw std::runtime_error("test gate never opened");
      }
      return Model(std::make_unique<FakeBackend>(static_cast<float>(spec.version), 4,
                                                 hold ? &gate_ : nullptr));
    };
    worker::WorkerOptions options;
    options.routers = endpoints_;
    options.id = "w";
    options.capacity = setup.capacity;
    options.heartbeat_interval = 100ms;
    options.liveness = setup.liveness;
    worker_ = std::make_unique<worker::Worker>(options, std::move(source));
    thread_ = std::thread([this] { worker_->Run(stop_); });
  }
  ~WorkerHarness() {
    gate_.Open();
    stop_ = true;
    thread_.join();
  }

  ScriptedRouter& router(std::size_t i = 0) { return *routers_[i]; }
  const std::string& endpoint(std::size_t i) const { return endpoints_[i]; }
  Gate& gate() { return gate_; }

  // Waits for a READY with m:version in `state`; nullopt: gone, from a READY in which another
  // version of m is READY (so the READYs from before the version came do not count).
  bool WaitFor(std::uint32_t version, std::optional<ModelState> state,
               std::chrono::milliseconds limit = 10s) {
    return router()
        .WaitForReady(
            [&](const protocol::ReadyBody& r) {
              if (state) return StateIn(r, "m", version) == state;
              return !StateIn(r, "m", version) &&
                     std::ranges::any_of(r.models, [&](const protocol::ModelInfo& m) {
                       return m.name == "m" && m.state == ModelState::kReady;
                     });
            },
            limit)
        .has_value();
  }

 private:
  TempDir dir_;
  std::vector<std::string> endpoints_;
  std::vector<std::unique_ptr<ScriptedRouter>> routers_;
  Gate gate_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<worker::Worker> worker_;
  std::thread thread_;
};

// Which version computed the first text of a REPLY (the fake backend's tag), or -1 for an
// ERROR or no answer.
int ServedBy(const std::optional<protocol::Message>& answer) {
  if (!answer || answer->command != protocol::Command::kReply) return -1;
  protocol::EmbedReply reply;
  std::string error;
  if (!protocol::Decode(answer->body(), &reply, &error) || reply.data.size() < 2) return -1;
  return static_cast<int>(reply.data[1]);
}

// Issue 14: v1 READY, v2 LOADING, "unload m" refused because v2 is still loading. The
// refusal must change nothing: v1 keeps serving, and no READY ever shows it UNLOADING
// until v2 is ready and the version policy retires it. (It used to be marked UNLOADING before
// the refusal, silently stop serving, and be freed later.)
TEST(WorkerTest, RefusedUnloadDuringLoadChangesNothing) {
  WorkerHarness h(/*gated=*/{2});
  ASSERT_TRUE(h.WaitFor(1, ModelState::kReady));
  ASSERT_EQ(ServedBy(h.router().Embed("m", 0, {"before"})), 1);

  const std::uint64_t load = h.router().SendControl(protocol::ControlOp::kLoad, "m", 2);
  ASSERT_TRUE(h.WaitFor(2, ModelState::kLoading));
  const protocol::ControlResult unload = h.router().Control(protocol::ControlOp::kUnload, "m", 0);
  EXPECT_FALSE(unload.ok);
  EXPECT_EQ(unload.code, ErrorCode::kUnavailable) << unload.message;

  // Still served by v1, by name and by version.
  EXPECT_EQ(ServedBy(h.router().Embed("m", 0, {"during"})), 1);
  EXPECT_EQ(ServedBy(h.router().Embed("m", 1, {"during"})), 1);

  h.gate().Open();
  const auto loaded = h.router().AwaitAnswer(load);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->command, protocol::Command::kReply);
  ASSERT_TRUE(h.WaitFor(1, std::nullopt)) << "v1 was never retired by v2";
  EXPECT_EQ(ServedBy(h.router().Embed("m", 0, {"after"})), 2);

  // From v1's first READY until v2's, every announcement had v1 READY.
  bool v1_up = false;
  for (const auto& ready : h.router().readies()) {
    if (StateIn(ready, "m", 2) == ModelState::kReady) break;
    v1_up |= StateIn(ready, "m", 1) == ModelState::kReady;
    if (v1_up) {
      EXPECT_EQ(StateIn(ready, "m", 1), ModelState::kReady);
    }
  }
  EXPECT_TRUE(v1_up);
}

// The same refusal for an unload of the loading version itself.
TEST(WorkerTest, UnloadOfALoadingVersionIsRefused) {
  WorkerHarness h(/*gated=*/{2}, "latest:2");
  ASSERT_TRUE(h.WaitFor(1, ModelState::kReady));
  const std::uint64_t load = h.router().SendControl(protocol::ControlOp::kLoad, "m", 2);
  ASSERT_TRUE(h.WaitFor(2, ModelState::kLoading));
  EXPECT_EQ(h.router().Control(protocol::ControlOp::kUnload, "m", 2).code, ErrorCode::kUnavailable);
  EXPECT_EQ(ServedBy(h.router().Embed("m", 0, {"x"})), 1);
  h.gate().Open();
  ASSERT_TRUE(h.router().AwaitAnswer(load).has_value());
  // With latest:2 both stay; the newest serves unversioned requests.
  ASSERT_TRUE(h.WaitFor(2, ModelState::kReady));
  EXPECT_EQ(ServedBy(h.router().Embed("m", 0, {"x"})), 2);
  EXPECT_EQ(ServedBy(h.router().Embed("m", 1, {"x"})), 1);
}

// Issue 16: a worker on two routers. Each live router is announced half the capacity, and the
// READYs name both routers.
TEST(WorkerTest, TwoRoutersShareTheCapacity) {
  WorkerHarness h(HarnessSetup{.routers = 2, .capacity = 64});
  auto halves = [&](const protocol::ReadyBody& r) {
    return r.capacity == 32 && r.routers.size() == 2;
  };
  // Both routers must be heard for both to count: serve one while waiting on the other.
  std::thread b([&] { h.router(1).Serve(1500ms); });
  const auto a_ready = h.router(0).WaitForReady(halves, 3s);
  b.join();
  ASSERT_TRUE(a_ready.has_value()) << "router A never got half the capacity";
  EXPECT_TRUE(h.router(1).WaitForReady(halves, 100ms).has_value());
  EXPECT_EQ(a_ready->routers, (std::vector<std::string>{h.endpoint(0), h.endpoint(1)}));
}

// The link to a router falls silent and reconnects while a request of it runs: the first READY
// over the new connection names the requests the worker still holds for that router
// (ReadyBody::holding), so that the router sends again only those lost with the old connection
// (issue 36, defect 2), and the request is answered over the new one.
TEST(WorkerTest, AReconnectSaysWhatTheWorkerHolds) {
  WorkerHarness h(HarnessSetup{.liveness = 3, .hold_batches = true});
  ASSERT_TRUE(h.WaitFor(1, ModelState::kReady));
  ASSERT_TRUE(h.router().readies().front().holding.has_value());
  const std::uint64_t held = h.router().SendEmbed("m", {"one"});
  std::this_thread::sleep_for(500ms);  // the router's silence (the fault), past 3 x 100 ms
  const auto ready = h.router().WaitForReady(
      [](const protocol::ReadyBody& r) { return r.holding && !r.holding->empty(); }, 3s);
  ASSERT_TRUE(ready.has_value()) << "no READY over a new connection named the held request";
  EXPECT_EQ(*ready->holding, std::vector<std::uint64_t>{held});
  h.gate().Open();
  EXPECT_EQ(ServedBy(h.router().AwaitAnswer(held)), 1);
}

// A router that falls silent gives its share back: the one left is announced all of it.
TEST(WorkerTest, SilentRouterGivesItsShareBack) {
  WorkerHarness h(HarnessSetup{.routers = 2, .capacity = 64, .liveness = 3});
  std::thread b([&] { h.router(1).Serve(800ms); });
  ASSERT_TRUE(h.router(0).WaitForReady([](const auto& r) { return r.capacity == 32; }, 3s));
  b.join();  // B is silent from now on
  const auto alone = h.router(0).WaitForReady(
      [&](const auto& r) { return r.capacity == 64 && r.routers.size() == 1; }, 3s);
  ASSERT_TRUE(alone.has_value()) << "A never got B's share";
  EXPECT_EQ(alone->routers, std::vector<std::string>{h.endpoint(0)});
}

// Both routers number their requests from 1: the worker must answer each on its own link, with
// its own id, and not mix them up.
TEST(WorkerTest, RepliesGoBackToTheRouterThatAsked) {
  WorkerHarness h(HarnessSetup{.routers = 2});
  ASSERT_TRUE(h.WaitFor(1, ModelState::kReady));
  ASSERT_TRUE(
      h.router(1).WaitForReady([](const auto& r) { return StateIn(r, "m", 1).has_value(); }));
  const std::uint64_t a = h.router(0).SendEmbed("m", {"one"});
  const std::uint64_t b = h.router(1).SendEmbed("m", {"one", "two", "three"});
  ASSERT_EQ(a, b) << "the test wants the same id from both routers";
  auto count = [](const std::optional<protocol::Message>& m) -> int {
    protocol::EmbedReply reply;
    std::string error;
    if (!m || m->command != protocol::Command::kReply) return -1;
    return protocol::Decode(m->body(), &reply, &error) ? static_cast<int>(reply.count) : -1;
  };
  EXPECT_EQ(count(h.router(0).AwaitAnswer(a)), 1);
  EXPECT_EQ(count(h.router(1).AwaitAnswer(b)), 3);
}

// The router's budget (protocol.h frame 4) is the request's deadline on the worker: a request
// the router will have answered TIMEOUT in 1 ms is never computed (the batcher waits 2 ms for
// company first, so it expires in the queue); one with time to spare is.
TEST(WorkerTest, TheRoutersBudgetIsTheRequestsDeadline) {
  WorkerHarness h;
  ASSERT_TRUE(h.WaitFor(1, ModelState::kReady));
  const std::uint64_t late = h.router().SendEmbed("m", {"one"}, /*budget_ms=*/1);
  const auto answer = h.router().AwaitAnswer(late);
  ASSERT_TRUE(answer.has_value());
  ASSERT_EQ(answer->command, protocol::Command::kError);
  protocol::ErrorBody error;
  std::string why;
  ASSERT_TRUE(protocol::Decode(answer->body(), &error, &why)) << why;
  EXPECT_EQ(error.code, ErrorCode::kTimeout) << error.message;
  EXPECT_EQ(ServedBy(h.router().AwaitAnswer(h.router().SendEmbed("m", {"one"}, 10'000))), 1);
}

// A retired version is freed only once every live router has acknowledged the READY that took
// it out of service: until then the silent one may still send it requests.
TEST(WorkerTest, DrainWaitsForEveryLiveRouter) {
  WorkerHarness h(HarnessSetup{.routers = 2});
  std::thread b([&] { h.router(1).Serve(600ms); });
  ASSERT_TRUE(h.WaitFor(1, ModelState::kReady));
  b.join();
  // B stops acknowledging (it is still live: heard well within 20 heartbeats).
  const auto loaded = h.router(0).Control(protocol::ControlOp::kLoad, "m", 2);
  ASSERT_TRUE(loaded.ok) << loaded.message;
  ASSERT_TRUE(h.WaitFor(1, ModelState::kUnloading));
  EXPECT_FALSE(h.WaitFor(1, std::nullopt, 400ms))
      << "v1 was freed before router B acknowledged its retirement";
  h.router(1).Serve(200ms);  // B catches up and acknowledges
  EXPECT_TRUE(h.WaitFor(1, std::nullopt)) << "v1 was never freed";
}

}  // namespace
}  // namespace ember::testing
