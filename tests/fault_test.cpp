// Faults under load: a worker killed with SIGKILL, a router restarted, more
// load than capacity, deadlines. Every request still gets exactly one answer.
// Each test is bounded in time (RunLoad's limit, explicit deadlines).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <zmq_addon.hpp>

#include "client/async_client.h"
#include "client/client.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "tests/cluster.h"
#include "tests/load_client.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kHeartbeatMs = 200, kLiveness = 3;

ClusterOptions TinyCluster(int workers, std::vector<std::string> worker_args = {},
                           std::vector<std::string> router_args = {}) {
  ClusterOptions options;
  options.workers = workers;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms", std::to_string(kHeartbeatMs), "--liveness",
                         std::to_string(kLiveness)};
  options.router_args.insert(options.router_args.end(), router_args.begin(), router_args.end());
  options.worker_args = {"--heartbeat-ms", std::to_string(kHeartbeatMs)};
  options.worker_args.insert(options.worker_args.end(), worker_args.begin(), worker_args.end());
  return options;
}

bool Lists(const protocol::StatusReply& status, const std::string& id) {
  for (const auto& w : status.workers) {
    if (w.id == id) return true;
  }
  return false;
}

// Every one of `requests` requests got its reply: no error (OVERLOADED above all), none lost,
// wrong or answered twice.
void ExpectAllServed(LoadResult& load, int requests) {
  EXPECT_EQ(load.replies, requests)
      << "OVERLOADED " << load.errors[ErrorCode::kOverloaded] << ", timeouts "
      << load.errors[ErrorCode::kTimeout] << ", missing " << load.missing;
  EXPECT_EQ(load.error_count(), 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_EQ(load.duplicates, 0);
}

// The fault test: 8 clients, 3 workers, kill -9 one mid-run.
TEST(FaultTest, KilledWorkerLosesNoRequest) {
  // --slowdown keeps requests in flight on every worker when the kill lands.
  Cluster cluster(TinyCluster(3, {"--slowdown", "3"}));
  ASSERT_TRUE(cluster.WaitForWorkers(3));
  const Reference reference = LoadTinyReference();

  std::atomic<int> answered{0};
  LoadOptions options;
  options.requests_per_client = 150;
  LoadResult load;
  std::thread driver([&] { load = RunLoad(cluster.frontend(), reference, options, &answered); });

  // Kill w2 once the run is well under way.
  const auto wait_until = Clock::now() + 60s;
  while (answered < 300 && Clock::now() < wait_until) std::this_thread::sleep_for(5ms);
  ASSERT_GE(answered, 300) << "load did not get going";
  // What the router has on w2 right before the kill: those requests must be re-dispatched,
  // so the test is only about re-dispatch if there are some.
  Client client(cluster.frontend());
  std::uint32_t on_w2 = 0;
  for (const auto& w : client.Status().workers) {
    if (w.id == "w2") on_w2 = w.in_flight;
  }
  cluster.worker(1).Signal(SIGKILL);
  const auto killed = Clock::now();
  EXPECT_GT(on_w2, 0u) << "w2 had nothing in flight when it was killed";

  // The router must take it out of dispatch within liveness x interval of
  // its last message (plus our polling and scheduling slack).
  Clock::duration removed_after{};
  while (Clock::now() - killed < 10s) {
    if (!Lists(client.Status(), "w2")) {
      removed_after = Clock::now() - killed;
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  driver.join();

  ASSERT_GT(removed_after.count(), 0) << "w2 never left the router's table";
  EXPECT_LE(removed_after, std::chrono::milliseconds(kHeartbeatMs * kLiveness + 300));
  EXPECT_EQ(load.sent, 8 * 150);
  EXPECT_EQ(load.replies, load.sent);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.error_count(), 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_GT(load.served_by["w1"], 0);
  EXPECT_GT(load.served_by["w3"], 0);
}

// The router dies and comes back on the same endpoints: workers register
// again within 3 heartbeats and a client's retries get through.
TEST(FaultTest, RouterRestartWorkersReregisterAndClientsRetry) {
  Cluster cluster(TinyCluster(2));
  ASSERT_TRUE(cluster.WaitForWorkers(2));
  Client client(cluster.frontend());
  EXPECT_EQ(client.Embed("tiny", {"before"}).size(), 1u);

  cluster.RestartRouter();
  const auto restarted = Clock::now();
  ASSERT_TRUE(cluster.WaitForWorkers(2, 10s));
  EXPECT_LE(Clock::now() - restarted, std::chrono::milliseconds(3 * kHeartbeatMs + 400));

  EmbedOptions options;
  options.timeout = 2s;
  options.attempts = 3;
  EXPECT_EQ(client.Embed("tiny", {"after"}, options).size(), 1u);
}

// A client whose request was lost with the router gets its answer by retrying. While no
// router runs, the test itself holds the frontend endpoint (a ROUTER that never answers), so
// the first attempt demonstrably arrives and is lost; then the real router comes back and the
// retry gets through.
TEST(FaultTest, ClientRetriesAcrossRouterRestart) {
  Cluster cluster(TinyCluster(1));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  cluster.router().Signal(SIGKILL);
  std::this_thread::sleep_for(50ms);  // the kill takes effect (it is asynchronous)
  zmq::context_t context;
  auto black_hole = std::make_unique<zmq::socket_t>(context, zmq::socket_type::router);
  black_hole->set(zmq::sockopt::linger, 0);
  black_hole->bind(cluster.frontend());

  EmbedOptions options;
  options.timeout = 1s;
  options.attempts = 6;
  const auto start = Clock::now();
  std::string outcome;
  int attempts = 0;
  std::thread ask([&] {  // test processes die with the thread that started them: ask elsewhere
    try {
      const Embeddings e = client.Embed("tiny", {"retried"}, options);
      outcome = std::to_string(e.size());
      attempts = e.attempts();
    } catch (const Error& e) {
      outcome = std::string(ErrorCodeName(e.code())) + ": " + e.what();
    }
  });
  // Wait (bounded) for the first attempt to arrive where nobody will answer it.
  bool swallowed = false;
  for (int i = 0; i < 100 && !swallowed; ++i) {
    zmq::pollitem_t item{black_hole->handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 50ms);
    std::vector<zmq::message_t> frames;
    swallowed = (item.revents & ZMQ_POLLIN) &&
                zmq::recv_multipart(*black_hole, std::back_inserter(frames)).has_value();
  }
  // Unbind before the router binds again: closing the context waits until the socket (and its
  // ipc listener, which unlinks the endpoint's file) is gone.
  black_hole.reset();
  context.close();
  cluster.RestartRouter();
  ask.join();
  ASSERT_TRUE(swallowed) << "the first attempt never reached the frontend endpoint";
  EXPECT_EQ(outcome, "1");
  EXPECT_GE(attempts, 2) << "the lost first attempt was answered after all";
  EXPECT_LT(Clock::now() - start, 8s);
}

// More requests than capacity + queue: the excess is refused at once with
// OVERLOADED, everything else is served, nothing is lost.
TEST(FaultTest, OverloadIsRefusedWithTypedError) {
  Cluster cluster(TinyCluster(1, {"--capacity", "2", "--slowdown", "40"}, {"--max-queue", "4"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 4;
  options.requests_per_client = 10;
  options.window = 5;
  options.limit = 60s;
  LoadResult load = RunLoad(cluster.frontend(), reference, options);
  EXPECT_EQ(load.sent, 40);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_EQ(load.replies + load.errors[ErrorCode::kOverloaded], 40)
      << "replies " << load.replies << " missing " << load.missing << " timeouts "
      << load.errors[ErrorCode::kTimeout] << " unavailable "
      << load.errors[ErrorCode::kUnavailable];
  EXPECT_GT(load.errors[ErrorCode::kOverloaded], 0);
  EXPECT_GT(load.replies, 0);
}

// Twice the texts in flight that the worker's queue holds (64 clients x 4 requests x 32 texts =
// 8192, against max-queue 4096): the router's credits count texts, so it holds back what the
// worker cannot queue, and no client gets OVERLOADED for it. Before credits counted texts, 99%
// of such requests were refused and goodput fell 15-fold (issue 24). Goodput is printed beside
// the rate at 4096 texts in flight; the bound here only catches a collapse (the 90% is
// a benchmark's figure, not a timed test's on a shared 2-core VM).
TEST(FaultTest, TextsBeyondTheWorkersQueueWaitInTheRouter) {
  Cluster cluster(TinyCluster(1));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  auto texts_per_second = [&](int clients) {
    LoadOptions options;
    options.clients = clients;
    options.window = 4;
    options.texts_per_request = 32;
    options.requests_per_client = 8;
    options.limit = 120s;
    const auto start = Clock::now();
    LoadResult load = RunLoad(cluster.frontend(), reference, options);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    SCOPED_TRACE(std::to_string(clients) + " clients");
    ExpectAllServed(load, clients * 8);
    return load.replies * 32 / seconds;
  };
  const double at_4096 = texts_per_second(32);
  const double at_8192 = texts_per_second(64);
  std::printf("  goodput: %.0f texts/s with 4096 texts in flight, %.0f with 8192 (%.2f)\n", at_4096,
              at_8192, at_8192 / at_4096);
  EXPECT_GE(at_8192, 0.5 * at_4096);
}

// A worker whose queue is far smaller than its credit (max-queue 64 texts, capacity 8192): it
// answers OVERLOADED again and again, and the router takes each such request back into its
// queue. Clients see only replies.
TEST(FaultTest, AWorkersFullQueueIsNeverTheClientsError) {
  Cluster cluster(TinyCluster(1, {"--capacity", "8192", "--max-queue", "64"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 16;
  options.window = 4;
  options.texts_per_request = 8;
  options.requests_per_client = 6;
  options.limit = 60s;
  LoadResult load = RunLoad(cluster.frontend(), reference, options);
  ExpectAllServed(load, 16 * 6);
}

// A worker played by the test: a DEALER on the router's backend, with one model ("m", dim 1).
class ScriptedWorker {
 public:
  ScriptedWorker(zmq::context_t& context, std::string endpoint)
      : context_(context), endpoint_(std::move(endpoint)) {}

  // Opens a fresh connection (closing the old one with whatever it had queued) and registers
  // over it, saying it holds `holding`; true once the router acknowledged.
  bool Connect(std::optional<std::vector<std::uint64_t>> holding) {
    socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
    socket_->set(zmq::sockopt::routing_id, "scripted");
    socket_->set(zmq::sockopt::linger, 0);
    socket_->connect(endpoint_);
    protocol::ReadyBody ready;
    ready.device = "cpu";
    ready.capacity = 8;
    ready.session = 42;
    ready.models.push_back({.name = "m", .version = 1, .dim = 1, .memory_bytes = 0});
    ready.holding = std::move(holding);
    protocol::SendDealt(*socket_, protocol::Command::kReady, ++seq_, protocol::Encode(ready));
    return Next(protocol::Command::kReady, 5s).has_value();
  }
  // The next message of `command` within `limit` (others, heartbeats, are skipped).
  std::optional<protocol::Message> Next(protocol::Command command,
                                        std::chrono::milliseconds limit) {
    for (const auto until = Clock::now() + limit; Clock::now() < until;) {
      zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 20ms);
      std::string error;
      auto received = protocol::ReceiveDealt(*socket_, &error);
      if (received && *received && (*received)->command == command) return std::move(**received);
    }
    return std::nullopt;
  }
  void Answer(std::uint64_t id) {
    protocol::EmbedReply reply;
    reply.model = "m";
    reply.dim = 1;
    reply.count = 1;
    reply.data = {1.0f};
    protocol::SendDealt(*socket_, protocol::Command::kReply, id, protocol::Encode(reply));
  }

 private:
  zmq::context_t& context_;
  const std::string endpoint_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::uint64_t seq_ = 0;
};

// A worker's connection to the router drops and the same process (same session) is back
// before the router missed its heartbeats, so it still lists the worker: the requests it had
// been sent are gone with the old connection, unanswered. Its READY over the new connection
// says which it still holds (here two of four), and the router sends the other two again;
// all four are answered and no credit stays in use. Before, the two waited for TIMEOUT and
// their credit was never given back (issue 36, defect 2).
TEST(FaultTest, RequestsLostWithAWorkersConnectionAreSentAgain) {
  ClusterOptions options;
  options.workers = 0;
  Cluster cluster(options);
  zmq::context_t context(1);
  ScriptedWorker worker(context, cluster.backend());
  ASSERT_TRUE(worker.Connect(std::vector<std::uint64_t>{}));
  AsyncClient client(cluster.frontend());
  std::vector<std::future<Embeddings>> replies;
  for (int i = 0; i < 4; ++i) replies.push_back(client.Embed("m", {"x"}, {.timeout = 4s}));
  std::vector<std::uint64_t> sent;
  while (sent.size() < 4) {
    const auto request = worker.Next(protocol::Command::kRequest, 5s);
    ASSERT_TRUE(request) << "the router sent " << sent.size() << " of 4 requests";
    sent.push_back(request->request_id);
  }
  const std::vector<std::uint64_t> held(sent.begin(), sent.begin() + 2);
  ASSERT_TRUE(worker.Connect(held));
  for (const std::uint64_t id : held) worker.Answer(id);
  std::vector<std::uint64_t> again;
  while (again.size() < 2) {
    const auto request = worker.Next(protocol::Command::kRequest, 2s);
    ASSERT_TRUE(request) << "the router sent " << again.size() << " of the 2 lost requests again";
    again.push_back(request->request_id);
    worker.Answer(request->request_id);
  }
  std::sort(again.begin(), again.end());
  EXPECT_EQ(again, std::vector<std::uint64_t>(sent.begin() + 2, sent.end()));
  for (auto& reply : replies) {
    ASSERT_EQ(reply.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(reply.get().size(), 1u);
  }
  Client status(cluster.frontend());
  const auto workers = status.Status().workers;
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].in_flight, 0u) << "credit in use with nothing left to answer";
}

// SIGTERM to a worker holding 2,400 one-text requests or more (on slow hardware): it
// answers what it can within --shutdown-grace-ms, then says DISCONNECT and leaves, with
// the rest (not computed) sent again by the router to a worker started meanwhile. Every
// request is answered once, none fails. Before, the stopping worker computed its whole queue
// after it had said DISCONNECT (the router had already sent those requests again), and, with
// more replies than its in-process pipe holds, never exited (issue 36, defect 3).
TEST(FaultTest, AStoppedWorkerLeavesWithinItsGrace) {
  Cluster cluster(TinyCluster(1, {"--slowdown", "5", "--capacity", "4096", "--max-queue", "4096",
                                  "--shutdown-grace-ms", "1000"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 16;
  options.window = 160;
  options.requests_per_client = 160;
  options.texts_per_request = 1;
  options.timeout_ms = 40'000;
  options.limit = 90s;
  LoadResult load;
  std::thread driver([&] { load = RunLoad(cluster.frontend(), reference, options); });
  Client client(cluster.frontend());
  std::uint32_t held = 0;
  for (const auto until = Clock::now() + 30s; held < 2400 && Clock::now() < until;) {
    for (const auto& w : client.Status().workers) held = w.in_flight;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GE(held, 2400u) << "the worker never held a full queue";
  cluster.AddWorker("w2");
  const auto stopping = Clock::now();
  const int status = cluster.worker(0).Stop(20s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stopping);
  driver.join();
  std::printf("stopped with %u requests held: exit after %lld ms (status %d)\n", held,
              static_cast<long long>(took.count()), status);
  EXPECT_EQ(status, 0) << "killed: it did not exit within 20 s";
  EXPECT_LE(took, 2500ms) << "1 s of grace, then it must leave";
  ExpectAllServed(load, 16 * 160);
}

// A request that cannot be served before its deadline gets TIMEOUT, and the
// late result is never delivered as a second answer.
TEST(FaultTest, DeadlineGivesTimeoutOnce) {
  Cluster cluster(TinyCluster(1, {"--capacity", "1", "--slowdown", "200"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 2;
  options.requests_per_client = 3;
  options.window = 3;
  options.timeout_ms = 150;
  options.limit = 30s;
  LoadResult load = RunLoad(cluster.frontend(), reference, options);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.replies + load.errors[ErrorCode::kTimeout], 6);
  EXPECT_GT(load.errors[ErrorCode::kTimeout], 0);
}

// Each input limit answers with a typed error, and the router keeps serving.
TEST(FaultTest, InputLimitsGiveTypedErrors) {
  Cluster cluster(TinyCluster(1, {"--slowdown", "100"},
                              {"--max-texts-per-request", "4", "--max-text-bytes", "100",
                               "--max-in-flight-per-client", "2", "--max-message-bytes", "65536"}));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());
  auto code_of = [&](const std::vector<std::string>& texts) -> std::string {
    try {
      client.Embed("tiny", texts);
      return "OK";
    } catch (const Error& e) {
      return std::string(ErrorCodeName(e.code())) + ": " + e.what();
    }
  };
  EXPECT_EQ(code_of({"a", "b", "c", "d"}), "OK");
  EXPECT_EQ(code_of({"a", "b", "c", "d", "e"}).substr(0, 11), "BAD_REQUEST");
  EXPECT_EQ(code_of({std::string(100, 'x')}), "OK");
  const std::string too_long = code_of({"fine", std::string(101, 'x')});
  EXPECT_EQ(too_long.substr(0, 11), "BAD_REQUEST");
  EXPECT_NE(too_long.find("input 1 has 101 bytes"), std::string::npos) << too_long;

  // A client with 2 requests in flight (the slowed worker holds them) gets
  // OVERLOADED for a third, at once; the first two still complete.
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(cluster.frontend());
  protocol::EmbedRequest request;
  request.model = "tiny";
  request.inputs = {"slow"};
  for (std::uint64_t id = 1; id <= 3; ++id) {
    protocol::SendDealt(raw, protocol::Command::kRequest, id, protocol::Encode(request));
  }
  std::map<std::uint64_t, protocol::Command> answers;
  const auto deadline = Clock::now() + 20s;
  while (answers.size() < 3 && Clock::now() < deadline) {
    zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 100ms);
    std::string error;
    while (auto received = protocol::ReceiveDealt(raw, &error)) {
      ASSERT_TRUE(*received) << error;
      if (answers.empty()) {
        EXPECT_EQ((*received)->request_id, 3u) << "the refusal comes first, at once";
      }
      answers[(*received)->request_id] = (*received)->command;
    }
  }
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[1], protocol::Command::kReply);
  EXPECT_EQ(answers[2], protocol::Command::kReply);
  EXPECT_EQ(answers[3], protocol::Command::kError);

  // A message over max-message-bytes: ZeroMQ drops that connection (no reply
  // is possible), and everyone else is still served.
  {
    zmq::socket_t big(context, zmq::socket_type::dealer);
    big.set(zmq::sockopt::linger, 0);
    big.connect(cluster.frontend());
    request.inputs = {std::string(100'000, 'x')};
    protocol::SendDealt(big, protocol::Command::kRequest, 9, protocol::Encode(request));
    zmq::pollitem_t item{big.handle(), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&item, 1, 500ms), 0);
  }
  EXPECT_EQ(code_of({"still served"}), "OK");
}

}  // namespace
}  // namespace ember::testing
