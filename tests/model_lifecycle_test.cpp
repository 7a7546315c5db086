// ModelLifecycle's transition rules alone: a real repository in a temporary directory, load
// outcomes made up by the test, and a fake clock (time points the test picks). Each test names
// the rule it holds; breaking the rule in model_lifecycle.cpp fails it.
#include "worker/model_lifecycle.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/temp_dir.h"

namespace ember::worker {
namespace {

using namespace std::chrono_literals;
using protocol::ModelState;
using Time = std::chrono::steady_clock::time_point;

constexpr auto kFallback = 3000ms;
const Time t0{};  // the fake clock's origin

class LifecycleTest : public ::testing::Test {
 protected:
  // Repository m/{1,2} (and whatever a test adds) under `policy`.
  void Make(const std::string& policy = "latest") {
    for (const char* v : {"1", "2"}) std::filesystem::create_directories(dir_.path() / "m" / v);
    repository_ = std::make_unique<ModelRepository>(dir_.path(), VersionPolicy::Parse(policy),
                                                    BatcherOptions{}, engine::BackendOptions{});
    lifecycle_ = std::make_unique<ModelLifecycle>("w", repository_.get(), kFallback);
  }

  ModelLifecycle& lc() { return *lifecycle_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

  // Loads (model, version) for control `id` and finishes the load successfully.
  Effects LoadReady(const std::string& model, std::uint32_t version, std::uint64_t id = 0) {
    const Effects started = lc().Load(model, version, id);
    EXPECT_EQ(started.loads.size(), 1u);
    return lc().LoadFinished({.key = {model, version}, .ok = true, .dim = 4, .memory_bytes = 100});
  }

  // What the worker does with an announcement: send READY `seq` at `now`.
  void Announce(std::uint64_t seq, Time now = t0) { lc().Announced(seq, now); }

  static bool Idle(const ModelKey&) { return true; }
  static bool Busy(const ModelKey&) { return false; }

 private:
  testing::TempDir dir_{"ember-lifecycle"};
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<ModelLifecycle> lifecycle_;
};

// Replies of `effects`, by control id, as "CODE" or "ok".
std::map<std::uint64_t, std::string> Replies(const Effects& effects) {
  std::map<std::uint64_t, std::string> out;
  for (const auto& [id, r] : effects.replies) {
    out[id] = r.ok ? "ok" : std::string(ErrorCodeName(r.code));
  }
  return out;
}

TEST_F(LifecycleTest, LoadGoesThroughLoadingToReadyAndAnswersAfterIt) {
  Make();
  const Effects started = lc().Load("m", 0, 7);  // 0: the newest on disk
  ASSERT_EQ(started.loads.size(), 1u);
  EXPECT_EQ(started.loads[0].version, 2u);
  EXPECT_TRUE(started.announce) << "operators must see LOADING";
  EXPECT_TRUE(started.replies.empty()) << "answered before the load ended";
  EXPECT_EQ(lc().StateOf({"m", 2}), ModelState::kLoading);
  EXPECT_FALSE(lc().Route("m", 0)) << "a LOADING version must not get requests";

  const Effects done =
      lc().LoadFinished({.key = {"m", 2}, .ok = true, .dim = 4, .memory_bytes = 9});
  EXPECT_EQ(done.serve, (std::vector<ModelKey>{{"m", 2}}));
  EXPECT_TRUE(done.announce);
  EXPECT_EQ(Replies(done), (std::map<std::uint64_t, std::string>{{7, "ok"}}));
  EXPECT_EQ(lc().Route("m", 0), (ModelKey{"m", 2}));
  EXPECT_EQ(lc().Snapshot().at(0).memory_bytes, 9u);
}

TEST_F(LifecycleTest, SecondLoadOfALoadingVersionWaitsForTheSameLoad) {
  Make();
  EXPECT_EQ(lc().Load("m", 1, 1).loads.size(), 1u);
  const Effects joined = lc().Load("m", 1, 2);
  EXPECT_TRUE(joined.loads.empty()) << "a version must load once";
  EXPECT_TRUE(joined.replies.empty());
  const Effects done = lc().LoadFinished({.key = {"m", 1}, .ok = true});
  EXPECT_EQ(Replies(done), (std::map<std::uint64_t, std::string>{{1, "ok"}, {2, "ok"}}));
}

TEST_F(LifecycleTest, SwapRetiresTheOldVersionOnlyOnceUnreachableAndIdle) {
  Make("latest");
  LoadReady("m", 1);
  Announce(1);
  lc().Acked(1);
  lc().Load("m", 2, 0);
  Announce(2);
  const Effects ready = lc().LoadFinished({.key = {"m", 2}, .ok = true});
  EXPECT_TRUE(ready.announce);
  EXPECT_EQ(lc().StateOf({"m", 1}), ModelState::kUnloading);
  EXPECT_EQ(lc().Route("m", 0), (ModelKey{"m", 2})) << "new requests go to the new version";
  EXPECT_EQ(lc().Route("m", 1), (ModelKey{"m", 1})) << "a draining version answers what it gets";

  Announce(3, t0 + 10ms);
  EXPECT_TRUE(lc().FreeDrained(t0 + 20ms, Idle).freed.empty()) << "freed before the router knew";
  lc().Acked(3);
  EXPECT_TRUE(lc().FreeDrained(t0 + 30ms, Busy).freed.empty()) << "freed with requests running";
  const Effects freed = lc().FreeDrained(t0 + 40ms, Idle);
  EXPECT_EQ(freed.freed, (std::vector<ModelKey>{{"m", 1}}));
  EXPECT_TRUE(freed.announce);
  EXPECT_FALSE(lc().StateOf({"m", 1}));
}

// The drain waits for the acknowledgement of the READY that announced it, whose number is
// known only once it is sent: an acknowledgement of an earlier READY is not enough.
TEST_F(LifecycleTest, DrainIsStampedWithTheReadyThatAnnouncedIt) {
  Make();
  LoadReady("m", 1);
  Announce(1);
  lc().Unload("m", 1, 5);
  lc().Acked(1);  // an acknowledgement from before the unload was announced
  EXPECT_TRUE(lc().FreeDrained(t0, Idle).freed.empty()) << "freed before it was announced";
  Announce(4, t0);  // other READYs went out in between
  lc().Acked(3);
  EXPECT_TRUE(lc().FreeDrained(t0, Idle).freed.empty()) << "freed on an older acknowledgement";
  lc().Acked(4);
  const Effects freed = lc().FreeDrained(t0, Idle);
  EXPECT_EQ(freed.freed.size(), 1u);
  EXPECT_EQ(Replies(freed), (std::map<std::uint64_t, std::string>{{5, "ok"}}));
}

TEST_F(LifecycleTest, WithoutAcknowledgementTheDrainEndsAfterTheFallback) {
  Make();
  LoadReady("m", 1);
  lc().Unload("m", 1, 5);
  Announce(2, t0 + 1s);
  EXPECT_TRUE(lc().FreeDrained(t0 + 1s + kFallback - 1ms, Idle).freed.empty());
  EXPECT_EQ(lc().FreeDrained(t0 + 1s + kFallback, Idle).freed.size(), 1u);
}

TEST_F(LifecycleTest, UnloadOfEveryVersionIsAnsweredWhenTheLastIsFreed) {
  Make("all");
  LoadReady("m", 1);
  LoadReady("m", 2);
  const Effects unload = lc().Unload("m", 0, 9);
  EXPECT_TRUE(unload.announce);
  EXPECT_TRUE(unload.replies.empty()) << "answered before anything was freed";
  EXPECT_FALSE(lc().Route("m", 0));
  Announce(3);
  lc().Acked(3);
  const Effects freed =
      lc().FreeDrained(t0, [](const ModelKey& k) { return k.second == 1; });  // v2 still busy
  EXPECT_TRUE(freed.replies.empty()) << "answered with version 2 still draining";
  const Effects last = lc().FreeDrained(t0, Idle);
  ASSERT_EQ(last.replies.size(), 1u);
  EXPECT_TRUE(last.replies[0].second.ok);
  EXPECT_EQ(last.replies[0].second.memory_bytes, 200u) << "both versions' memory";
}

// Issue 14: an unload refused because a version is still loading changes nothing.
TEST_F(LifecycleTest, UnloadDuringLoadIsRefusedAndChangesNothing) {
  Make();
  LoadReady("m", 1);
  lc().Load("m", 2, 1);
  const auto before = lc().Snapshot();
  const Effects refused = lc().Unload("m", 0, 2);
  EXPECT_EQ(Replies(refused), (std::map<std::uint64_t, std::string>{{2, "UNAVAILABLE"}}));
  EXPECT_FALSE(refused.announce);
  EXPECT_EQ(lc().StateOf({"m", 1}), ModelState::kReady);
  EXPECT_EQ(lc().Route("m", 0), (ModelKey{"m", 1}));
  EXPECT_EQ(lc().Snapshot().size(), before.size());
  EXPECT_EQ(Replies(lc().Unload("m", 2, 3)),
            (std::map<std::uint64_t, std::string>{{3, "UNAVAILABLE"}}));
}

TEST_F(LifecycleTest, FailedLoadLeavesTheServingVersionAlone) {
  Make();
  LoadReady("m", 1);
  lc().Load("m", 2, 4);
  const Effects failed = lc().LoadFinished(
      {.key = {"m", 2}, .ok = false, .code = ErrorCode::kBadRequest, .error = "bad weights"});
  EXPECT_TRUE(failed.serve.empty());
  EXPECT_EQ(Replies(failed), (std::map<std::uint64_t, std::string>{{4, "BAD_REQUEST"}}));
  EXPECT_EQ(lc().StateOf({"m", 2}), ModelState::kFailed);
  EXPECT_EQ(lc().StateOf({"m", 1}), ModelState::kReady) << "a failed load retired the old one";
  EXPECT_EQ(lc().Route("m", 0), (ModelKey{"m", 1}));
  EXPECT_EQ(lc().Snapshot().at(1).message, "bad weights");
  // Unloading a FAILED entry removes it at once.
  const Effects cleared = lc().Unload("m", 2, 5);
  EXPECT_EQ(Replies(cleared), (std::map<std::uint64_t, std::string>{{5, "ok"}}));
  EXPECT_FALSE(lc().StateOf({"m", 2}));
  // And a FAILED version may be loaded again.
  EXPECT_EQ(lc().Load("m", 2, 6).loads.size(), 1u);
}

TEST_F(LifecycleTest, LoadOfADrainingVersionCancelsItsUnload) {
  Make();
  LoadReady("m", 1);
  lc().Unload("m", 1, 4);
  ASSERT_EQ(lc().StateOf({"m", 1}), ModelState::kUnloading);
  const Effects back = lc().Load("m", 1, 5);
  EXPECT_TRUE(back.loads.empty()) << "a draining version must not load again";
  EXPECT_TRUE(back.announce);
  EXPECT_EQ(Replies(back), (std::map<std::uint64_t, std::string>{{4, "UNAVAILABLE"}, {5, "ok"}}));
  EXPECT_EQ(lc().StateOf({"m", 1}), ModelState::kReady);
  Announce(9);
  lc().Acked(9);
  EXPECT_TRUE(lc().FreeDrained(t0 + 1h, Idle).freed.empty()) << "freed after being taken back";
}

TEST_F(LifecycleTest, UnknownModelsAndMissingRepositoryAreRefused) {
  Make();
  EXPECT_EQ(Replies(lc().Load("nope", 0, 1)),
            (std::map<std::uint64_t, std::string>{{1, "UNKNOWN_MODEL"}}));
  EXPECT_EQ(Replies(lc().Load("m", 7, 2)),
            (std::map<std::uint64_t, std::string>{{2, "UNKNOWN_MODEL"}}));
  EXPECT_EQ(Replies(lc().Unload("m", 0, 3)),
            (std::map<std::uint64_t, std::string>{{3, "UNKNOWN_MODEL"}}));
  ModelLifecycle none("w", nullptr, kFallback);
  EXPECT_EQ(Replies(none.Load("m", 1, 4)),
            (std::map<std::uint64_t, std::string>{{4, "UNKNOWN_MODEL"}}));
}

TEST_F(LifecycleTest, BadVersionConfigIsRefusedBeforeAnythingChanges) {
  Make();
  std::ofstream(dir() / "m" / "2" / "config.toml") << "max-batch-size = \"many\"\n";
  const Effects refused = lc().Load("m", 2, 1);
  EXPECT_TRUE(refused.loads.empty());
  EXPECT_FALSE(refused.announce);
  EXPECT_EQ(Replies(refused), (std::map<std::uint64_t, std::string>{{1, "BAD_REQUEST"}}));
  EXPECT_FALSE(lc().StateOf({"m", 2}));
}

TEST_F(LifecycleTest, ReloadOfTheServingVersionRollsBack) {
  Make("latest");
  LoadReady("m", 1);
  LoadReady("m", 2);  // retires 1
  ASSERT_EQ(lc().StateOf({"m", 1}), ModelState::kUnloading);
  // Loading 1 again while it drains makes it the kept version; 2 drains instead.
  const Effects rollback = lc().Load("m", 1, 3);
  EXPECT_EQ(Replies(rollback), (std::map<std::uint64_t, std::string>{{3, "ok"}}));
  EXPECT_EQ(lc().StateOf({"m", 1}), ModelState::kReady);
  EXPECT_EQ(lc().StateOf({"m", 2}), ModelState::kUnloading);
  EXPECT_EQ(lc().Route("m", 0), (ModelKey{"m", 1}));
}

}  // namespace
}  // namespace ember::worker
