// The asynchronous C++ SDK (client/async_client.h): many requests in flight on one connection
// against a real router and worker, typed errors, and failover against routers played by the
// test (tests/fakes/fake_frontend.h) that answer, stay silent or drop the connection.
#include "client/async_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/cluster.h"
#include "tests/fakes/fake_frontend.h"
#include "tests/load_client.h"
#include "tests/temp_dir.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Waits for `f` at most `limit`; fails the test (and returns false) if it is not ready.
template <typename T>
bool Ready(std::future<T>& f, std::chrono::milliseconds limit = 10s) {
  const bool ready = f.wait_for(limit) == std::future_status::ready;
  EXPECT_TRUE(ready) << "no answer within " << limit.count() << " ms";
  return ready;
}

// One thread, one connection, 200 one-text requests sent before the first answer is awaited:
// they are in flight together, so the worker batches them (a blocking Client in one thread
// has one in flight: every batch would be 1), and each vector is still the model's own.
TEST(AsyncClientClusterTest, ManyRequestsInFlightOnOneConnection) {
  ClusterOptions options;
  options.workers = 1;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.worker_args = {"--max-queue-delay-us", "20000"};
  options.router_args = {"--io-threads", "2"};  // and the router with two ZeroMQ I/O threads
  Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  AsyncClient client(cluster.frontend());
  std::vector<std::future<Embeddings>> replies;
  for (int i = 0; i < 200; ++i) {
    replies.push_back(client.Embed("tiny", {reference.texts[i % reference.texts.size()]}));
  }
  std::uint32_t largest_batch = 0;
  for (int i = 0; i < 200; ++i) {
    if (!Ready(replies[i])) return;
    const Embeddings e = replies[i].get();
    ASSERT_EQ(e.size(), 1u);
    EXPECT_LT(MaxAbsDiff(e[0], reference.vectors[i % reference.texts.size()]), 1e-5f) << i;
    largest_batch = std::max(largest_batch, e.batch_size());
  }
  EXPECT_GT(largest_batch, 8u) << "requests in flight together are batched together";
  EXPECT_EQ(client.in_flight(), 0u);
}

TEST(AsyncClientClusterTest, ErrorsAreTypedAsClients) {
  ClusterOptions options;
  options.workers = 1;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  AsyncClient client(cluster.frontend());
  auto unknown = client.Embed("no-such-model", {"hello"});
  auto empty = client.Embed("tiny", {});
  auto good = client.Embed("tiny", {"hello", "world"});
  ASSERT_TRUE(Ready(unknown) && Ready(empty) && Ready(good));
  try {
    unknown.get();
    ADD_FAILURE() << "an unknown model embedded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknownModel) << e.what();
  }
  EXPECT_THROW(empty.get(), Error);
  EXPECT_EQ(good.get().size(), 2u);
}

class AsyncClientFailoverTest : public ::testing::Test {
 protected:
  std::unique_ptr<AsyncClient> Make() { return Make({a_, b_}); }
  std::unique_ptr<AsyncClient> Make(std::vector<std::string> endpoints) {
    return std::make_unique<AsyncClient>(std::move(endpoints),
                                         ClientOptions{.curve = {},
                                                       .connect_timeout = 200ms,
                                                       .heartbeat = 200ms,
                                                       .home = 0,
                                                       .backoff = {.first = 300ms, .max = 1s}});
  }
  // 20 requests in flight at once; every one must end as a reply, from b.
  void ExpectAllAnsweredByB(AsyncClient& client, std::chrono::milliseconds timeout) {
    std::vector<std::future<Embeddings>> replies;
    for (int i = 0; i < 20; ++i) {
      replies.push_back(client.Embed("m", {"text " + std::to_string(i)}, {.timeout = timeout}));
    }
    for (auto& r : replies) {
      if (!Ready(r)) return;
      const Embeddings e = r.get();
      EXPECT_EQ(e.router(), b_);
      EXPECT_EQ(e.attempts(), 2);
    }
  }

  TempDir dir_{"ember-async"};
  const std::string a_ = "ipc://" + (dir_.path() / "a").string();
  const std::string b_ = "ipc://" + (dir_.path() / "b").string();
};

// The home router takes the requests and dies (its connection drops): every request in flight
// is resent to the next router, long before its timeout.
TEST_F(AsyncClientFailoverTest, LostConnectionResendsEveryRequestInFlight) {
  FakeRouter a(a_, Mode::kDropOnFirst), b(b_, Mode::kAnswer);
  auto client = Make();
  const auto start = Clock::now();
  ExpectAllAnsweredByB(*client, 10s);
  EXPECT_LT(Clock::now() - start, 5s) << "waited for the timeout instead of the disconnect";
  EXPECT_GE(a.received(), 1);
}

// The home router takes the requests and never answers: each is resent after its timeout.
TEST_F(AsyncClientFailoverTest, SilentRouterFailsOverAfterTheTimeout) {
  FakeRouter a(a_, Mode::kSilent), b(b_, Mode::kAnswer);
  auto client = Make();
  ExpectAllAnsweredByB(*client, 300ms);
  EXPECT_EQ(a.received(), 20);
}

// One request is lost behind a router that answers all others (a slow or lost worker): when it
// is late it fails TIMEOUT alone, after one attempt per router, and the requests in flight
// beside it are answered by that router at their first attempt. Before, its deadline failed
// over every request of the connection: with one router (the gateway's case) all ended TIMEOUT,
// with two all were resent.
TEST_F(AsyncClientFailoverTest, ALateRequestFailsOverAlone) {
  FakeRouter a(a_, Mode::kAllButSlow, 100ms), b(b_, Mode::kAnswer);
  for (const bool two : {false, true}) {
    SCOPED_TRACE(two ? "two routers" : "one router");
    auto client = two ? Make() : Make({a_});
    auto slow = client->Embed("slow", {"x"}, {.timeout = 300ms});
    // A request every 10 ms for 1.2 s, each answered 100 ms after it came: about ten are in
    // flight when the slow one's deadline passes (550 ms).
    std::vector<std::future<Embeddings>> fresh;
    const auto start = Clock::now();
    for (int i = 0; i < 200 && Clock::now() - start < 1200ms; ++i) {
      fresh.push_back(client->Embed("m", {"y"}, {.timeout = 10s}));
      std::this_thread::sleep_for(10ms);
    }
    int moved = 0;
    int failed = 0;
    for (auto& f : fresh) {
      if (!Ready(f)) return;
      try {
        const Embeddings e = f.get();
        moved += e.router() != a_ || e.attempts() != 1;
      } catch (const Error& e) {
        ++failed;
      }
    }
    EXPECT_EQ(failed, 0) << "of " << fresh.size() << " ended with the late request's error";
    EXPECT_EQ(moved, 0) << "of " << fresh.size() << " were resent with the late request";
    ASSERT_TRUE(Ready(slow));
    try {
      slow.get();
      ADD_FAILURE() << "the lost request was answered";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
    }
  }
  EXPECT_EQ(b.received(), 0);
}

// With every attempt used, the request fails with the reason, typed.
TEST_F(AsyncClientFailoverTest, OutOfAttemptsFailsTyped) {
  FakeRouter a(a_, Mode::kSilent), b(b_, Mode::kSilent);
  auto client = Make();
  auto reply = client->Embed("m", {"x"}, {.timeout = 200ms});
  ASSERT_TRUE(Ready(reply));
  try {
    reply.get();
    ADD_FAILURE() << "answered by silent routers";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout) << e.what();
  }
}

// No router listening: the request never leaves, and fails UNAVAILABLE once each router had
// connect_timeout to connect, not after its own (long) timeout.
TEST_F(AsyncClientFailoverTest, UnreachableRoutersFailUnavailable) {
  auto client = Make();
  const auto start = Clock::now();
  auto reply = client->Embed("m", {"x"}, {.timeout = 30s});
  ASSERT_TRUE(Ready(reply, 5s));
  try {
    reply.get();
    ADD_FAILURE() << "answered with no router";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
  EXPECT_LT(Clock::now() - start, 3s);
}

// Closing the client settles every future at once (UNAVAILABLE), never leaves one hanging.
TEST_F(AsyncClientFailoverTest, ClosingFailsWhatIsInFlight) {
  FakeRouter a(a_, Mode::kSilent), b(b_, Mode::kSilent);
  auto client = Make();
  std::vector<std::future<Embeddings>> replies;
  for (int i = 0; i < 5; ++i) replies.push_back(client->Embed("m", {"x"}, {.timeout = 30s}));
  client.reset();
  for (auto& r : replies) {
    ASSERT_TRUE(Ready(r, 1s));
    try {
      r.get();
      ADD_FAILURE() << "answered by a silent router";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
    }
  }
}

// The callback form: each request's callback runs exactly once, with its own reply, after the
// request has left in_flight(); with the client closed, with the typed error.
TEST_F(AsyncClientFailoverTest, CallbacksRunOnceWithTheOutcome) {
  FakeRouter a(a_, Mode::kAnswer), b(b_, Mode::kSilent);
  auto client = Make();
  std::mutex mu;
  std::condition_variable changed;
  std::vector<int> calls(10, 0);
  int replies = 0;
  int done = 0;
  bool counted_when_done = false;  // a callback ran while its request still counted in flight
  for (std::size_t i = 0; i < calls.size(); ++i) {
    client->Embed("m", std::vector<std::string>(i + 1, "x"), {},
                  [&, i, c = client.get()](AsyncClient::Outcome outcome) {
                    std::lock_guard lock(mu);
                    ++calls[i];
                    ++done;
                    const auto* e = std::get_if<Embeddings>(&outcome);
                    if (e != nullptr && e->size() == i + 1) ++replies;
                    counted_when_done |= c->in_flight() > calls.size() - done;
                    changed.notify_all();
                  });
  }
  {
    std::unique_lock lock(mu);
    changed.wait_for(lock, 10s, [&] { return replies == 10; });
    EXPECT_EQ(replies, 10);
  }
  EXPECT_FALSE(counted_when_done) << "a callback ran with its request in flight";
  EXPECT_EQ(client->in_flight(), 0u);

  FakeRouter silent_a(a_ + "-silent", Mode::kSilent), silent_b(b_ + "-silent", Mode::kSilent);
  auto closing = std::make_unique<AsyncClient>(
      std::vector<std::string>{a_ + "-silent", b_ + "-silent"}, ClientOptions{});
  std::vector<ErrorCode> errors;
  for (int i = 0; i < 5; ++i) {
    closing->Embed("m", {"x"}, {.timeout = 30s}, [&](AsyncClient::Outcome outcome) {
      std::lock_guard lock(mu);
      if (const auto* e = std::get_if<Error>(&outcome)) errors.push_back(e->code());
    });
  }
  closing.reset();  // joins its I/O thread: every callback has run
  std::lock_guard lock(mu);
  EXPECT_EQ(errors, std::vector<ErrorCode>(5, ErrorCode::kUnavailable));
  for (const int n : calls) EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace ember::testing
