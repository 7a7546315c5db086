// The client's failover rules (client/router_list.h) on a fake clock.
#include "client/router_list.h"

#include <gtest/gtest.h>

namespace ember {
namespace {

using namespace std::chrono_literals;
using Clock = RouterList::Clock;

const Clock::time_point t0{};

RouterList Three(std::size_t home = 0) {
  return RouterList({"a", "b", "c"}, home, RouterList::Backoff{.first = 100ms, .max = 400ms});
}

TEST(RouterListTest, SplitsCommaSeparatedEndpoints) {
  EXPECT_EQ(RouterList::Split("tcp://a:1"), (std::vector<std::string>{"tcp://a:1"}));
  EXPECT_EQ(RouterList::Split("tcp://a:1, tcp://b:2,,"),
            (std::vector<std::string>{"tcp://a:1", "tcp://b:2"}));
  EXPECT_THROW(RouterList({}, 0), std::invalid_argument);
}

TEST(RouterListTest, StartsAtHomeAndMovesOnWhenItFails) {
  RouterList r = Three(1);
  EXPECT_EQ(r.Pick(t0), 1u);
  r.Failed(1, t0);
  EXPECT_EQ(r.Pick(t0), 2u) << "the next router after the failed one";
  r.Answered(2);
  EXPECT_EQ(r.Pick(t0 + 50ms), 2u) << "stays with the one that answers";
}

TEST(RouterListTest, FailsBackHomeOnlyOnceItsBackoffIsOver) {
  RouterList r = Three(0);
  EXPECT_FALSE(r.FailBackDue(t0)) << "at home";
  r.Failed(0, t0);
  r.Answered(1);
  EXPECT_EQ(r.Pick(t0 + 100ms), 1u) << "stays where it is answered until a probe of home connects";
  EXPECT_FALSE(r.FailBackDue(t0 + 99ms));
  EXPECT_TRUE(r.FailBackDue(t0 + 100ms));
  r.Answered(0);  // the probe connected
  EXPECT_EQ(r.Pick(t0 + 100ms), 0u);
  EXPECT_FALSE(r.FailBackDue(t0 + 100ms));
}

TEST(RouterListTest, SkipsABackingOffRouterInFailoverOrder) {
  RouterList r = Three(0);
  r.Failed(1, t0);  // b backs off
  r.Failed(0, t0);  // a fails: c, not b
  EXPECT_EQ(r.Pick(t0), 2u);
}

TEST(RouterListTest, BackoffDoublesUpToItsLimitAndResetsOnAnswer) {
  RouterList r = Three(0);
  r.Failed(0, t0);  // 100 ms
  EXPECT_TRUE(r.BackingOff(0, t0 + 99ms));
  r.Failed(0, t0 + 100ms);  // 200 ms
  EXPECT_TRUE(r.BackingOff(0, t0 + 299ms));
  EXPECT_FALSE(r.BackingOff(0, t0 + 300ms));
  r.Failed(0, t0 + 300ms);  // 400 ms
  r.Failed(0, t0 + 700ms);  // still 400 ms: the limit
  EXPECT_TRUE(r.BackingOff(0, t0 + 1099ms));
  EXPECT_FALSE(r.BackingOff(0, t0 + 1100ms));
  r.Answered(0);
  r.Failed(0, t0 + 2s);  // back to 100 ms
  EXPECT_FALSE(r.BackingOff(0, t0 + 2s + 100ms));
}

TEST(RouterListTest, WhenAllBackOffTheSoonestIsTried) {
  RouterList r = Three(0);
  r.Failed(0, t0);         // until 100 ms
  r.Failed(1, t0 - 50ms);  // until 50 ms
  r.Failed(2, t0);         // until 100 ms
  EXPECT_EQ(r.Pick(t0), 1u);
}

TEST(RouterListTest, FailoverWalksEveryRouterOnce) {
  RouterList r = Three(2);
  std::vector<std::size_t> tried;
  for (int i = 0; i < 3; ++i) {
    tried.push_back(r.Pick(t0));
    r.Failed(tried.back(), t0);
  }
  EXPECT_EQ(tried, (std::vector<std::size_t>{2, 0, 1}));
}

}  // namespace
}  // namespace ember
