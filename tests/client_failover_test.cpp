// The C++ SDK's failover across several routers (client/client.h), against routers played by
// the test: real sockets, and each fake router answers, stays silent, or drops the connection
// as a killed process would.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "client/client.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "tests/fakes/fake_frontend.h"

namespace ember {
namespace {

using namespace std::chrono_literals;
using testing::FakeRouter;
using testing::Mode;
using Clock = std::chrono::steady_clock;

class ClientFailoverTest : public ::testing::Test {
 protected:
  ClientFailoverTest() {
    dir_ = std::filesystem::temp_directory_path() /
           ("ember-failover-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    a_ = "ipc://" + (dir_ / "a").string();
    b_ = "ipc://" + (dir_ / "b").string();
  }
  ~ClientFailoverTest() override { std::filesystem::remove_all(dir_); }

  Client Make() {
    return Client({a_, b_}, ClientOptions{.curve = {},
                                          .connect_timeout = 200ms,
                                          .heartbeat = 200ms,
                                          .home = 0,
                                          .backoff = {.first = 300ms, .max = 1s}});
  }
  static EmbedOptions Quick() { return EmbedOptions{.timeout = 300ms}; }

  std::filesystem::path dir_;
  std::string a_, b_;
};

TEST_F(ClientFailoverTest, SilentRouterFailsOverToTheNext) {
  FakeRouter a(a_, Mode::kSilent), b(b_, Mode::kAnswer);
  Client client = Make();
  const Embeddings e = client.Embed("m", {"x", "y"}, Quick());
  EXPECT_EQ(e.size(), 2u);
  EXPECT_EQ(e.attempts(), 2);
  EXPECT_EQ(e.router(), b_);
  EXPECT_EQ(a.received(), 1);
}

TEST_F(ClientFailoverTest, UnreachableRouterIsSkippedWhileItBacksOff) {
  FakeRouter b(b_, Mode::kAnswer);  // nothing at a_
  Client client = Make();
  const auto start = Clock::now();
  EXPECT_EQ(client.Embed("m", {"x"}, Quick()).attempts(), 2);
  EXPECT_LT(Clock::now() - start, 1500ms);
  // Within a's backoff the next call goes straight to b.
  const Embeddings e = client.Embed("m", {"x"}, Quick());
  EXPECT_EQ(e.attempts(), 1);
  EXPECT_EQ(e.router(), b_);
}

TEST_F(ClientFailoverTest, LostConnectionFailsOverBeforeTheTimeout) {
  FakeRouter a(a_, Mode::kDropOnFirst), b(b_, Mode::kAnswer);
  Client client = Make();
  const auto start = Clock::now();
  const Embeddings e = client.Embed("m", {"x"}, EmbedOptions{.timeout = 20s});
  EXPECT_EQ(e.router(), b_);
  EXPECT_EQ(a.received(), 1) << "the first attempt never reached a";
  EXPECT_LT(Clock::now() - start, 5s) << "waited for the timeout instead of the disconnect";
}

TEST_F(ClientFailoverTest, ReturnsHomeOnceItsBackoffIsOver) {
  Client client = Make();
  {
    FakeRouter b(b_, Mode::kAnswer);
    EXPECT_EQ(client.Embed("m", {"x"}, Quick()).router(), b_);
    FakeRouter a(a_, Mode::kAnswer);  // home comes back
    const auto deadline = Clock::now() + 5s;
    std::string last;
    while (Clock::now() < deadline && last != a_) {
      last = client.Embed("m", {"x"}, Quick()).router();
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(last, a_) << "never went back to its home router";
  }
}

TEST_F(ClientFailoverTest, StatusFailsOver) {
  FakeRouter a(a_, Mode::kSilent), b(b_, Mode::kAnswer);
  Client client = Make();
  EXPECT_EQ(client.Status(300ms).router_version, "fake");
  EXPECT_EQ(a.received(), 1);
}

// A load may have reached the silent router (and be running): resending it elsewhere could
// run it twice. It fails with TIMEOUT and nothing reaches the other router.
TEST_F(ClientFailoverTest, LoadIsNeverResentOnceSent) {
  FakeRouter a(a_, Mode::kSilent), b(b_, Mode::kAnswer);
  Client client = Make();
  try {
    client.Load("m", 0, ControlOptions{.workers = {}, .timeout = 300ms});
    FAIL() << "a silent router's load succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
  }
  EXPECT_EQ(a.received(), 1);
  EXPECT_EQ(b.received(), 0);
}

// ... but one that could not be sent at all goes to the next router.
TEST_F(ClientFailoverTest, LoadGoesOnWhenTheFirstRouterIsUnreachable) {
  FakeRouter b(b_, Mode::kAnswer);
  Client client = Make();
  EXPECT_NO_THROW(client.Load("m", 0, ControlOptions{.workers = {}, .timeout = 300ms}));
  EXPECT_EQ(b.received(), 1);
}

}  // namespace
}  // namespace ember
