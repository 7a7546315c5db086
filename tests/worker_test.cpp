// The worker's model-version rules, end to end through its socket: a real Worker with fake
// backends (tests/fakes/fake_backend.h) whose loads the test holds open at will, and the test
// itself as its router (tests/fakes/scripted_router.h). Fast (no model, no LibTorch), and exact
// about what the worker announces and answers, in what order.
#include "worker/worker.h"

#include <gtest/gtest.h>

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

// A worker serving repository REPO/m/{1,2} (fake backends tagged with their version), with
// the load of every version in `gated` held until its gate opens.
class WorkerHarness {
 public:
  explicit WorkerHarness(std::vector<std::uint32_t> gated = {}, std::string policy = "latest")
      : endpoint_("ipc://" + (dir_.path() / "backend").string()), router_(endpoint_) {
    for (const char* v : {"1", "2"})
      std::filesystem::create_directories(dir_.path() / "repo/m" / v);
    worker::ModelSource source;
    source.repository = std::make_unique<worker::ModelRepository>(
        dir_.path() / "repo", worker::VersionPolicy::Parse(policy), worker::BatcherOptions{},
        engine::BackendOptions{});
    source.startup = {{"m", 1}};
    source.load = [this, gated](const worker::ModelSpec& spec) {
      if (std::ranges::find(gated, spec.version) != gated.end()) {
        if (!gate_.Wait(30s)) throw std::runtime_error("test gate never opened");
      }
      return std::make_unique<FakeBackend>(static_cast<float>(spec.version));
    };
    worker::WorkerOptions options;
    options.router = endpoint_;
    options.id = "w";
    options.heartbeat_interval = 100ms;
    worker_ = std::make_unique<worker::Worker>(options, std::move(source));
    thread_ = std::thread([this] { worker_->Run(stop_); });
  }
  ~WorkerHarness() {
    gate_.Open();
    stop_ = true;
    thread_.join();
  }

  ScriptedRouter& router() { return router_; }
  Gate& gate() { return gate_; }

  // Waits for a READY with m:version in `state`.
  bool WaitFor(std::uint32_t version, std::optional<ModelState> state) {
    return router_
        .WaitForReady(
            [&](const protocol::ReadyBody& r) { return StateIn(r, "m", version) == state; })
        .has_value();
  }

 private:
  TempDir dir_;
  const std::string endpoint_;
  ScriptedRouter router_;
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
  if (!protocol::Decode(answer->body, &reply, &error) || reply.data.size() < 2) return -1;
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

}  // namespace
}  // namespace ember::testing
