// The router's components alone: RequestTable, Dispatcher, ControlFanout and CacheFront on a
// fake transport (tests/fakes/fake_transport.h) with a made-up clock, and real WorkerRegistry
// and EmbeddingCache. Each test names the rule it holds.
#include <gtest/gtest.h>

#include <chrono>

#include "common/messages.h"
#include "router/cache_front.h"
#include "router/control_fanout.h"
#include "router/dispatcher.h"
#include "router/request_table.h"
#include "tests/fakes/fake_transport.h"

namespace ember::router {
namespace {

using namespace std::chrono_literals;
using protocol::Command;
using protocol::ModelState;
using testing::FakeTransport;

const Clock::time_point t0{};

protocol::ReadyBody Ready(std::uint32_t capacity, std::vector<protocol::ModelInfo> models) {
  return {.device = "cpu", .capacity = capacity, .session = 1, .models = std::move(models)};
}

protocol::ModelInfo M(const std::string& name, std::uint32_t version,
                      ModelState state = ModelState::kReady) {
  return {.name = name, .version = version, .dim = 2, .state = state};
}

// The error code of an ERROR body.
ErrorCode CodeOf(const testing::Sent& sent) {
  protocol::ErrorBody e;
  std::string why;
  EXPECT_EQ(sent.command, Command::kError);
  EXPECT_TRUE(protocol::Decode(sent.body, &e, &why)) << why;
  return e.code;
}

class RouterComponentsTest : public ::testing::Test {
 protected:
  RouterComponentsTest()
      : requests_(transport_, metrics_),
        dispatcher_(options_, workers_, requests_, transport_, [this](const std::string& worker) {
          dropped_.push_back(worker);
          dispatcher_.Redispatch(workers_.Remove(worker), worker, t0);
        }) {
    options_.model_defaults.policy = PolicyKind::kRoundRobin;
    options_.model_defaults.max_queue = 2;
  }

  // Accepts a request for `model` from client `c` and returns its router id.
  std::uint64_t Accept(const std::string& model = "m", const std::string& client = "c",
                       std::uint32_t texts = 1) {
    const std::uint64_t id = requests_.NewId();
    requests_.Add(id, {.client = client,
                       .client_request_id = id * 10,
                       .model = model,
                       .version = 0,
                       .text_count = texts,
                       .body = zmq::message_t("body-" + std::to_string(id)),
                       .accepted_at = t0});
    return id;
  }

  RouterOptions options_;
  FakeTransport transport_;
  RouterMetrics metrics_;
  WorkerRegistry workers_;
  RequestTable requests_;
  Dispatcher dispatcher_;
  std::vector<std::string> dropped_;
};

TEST_F(RouterComponentsTest, DispatchSendsWhileCreditLastsThenQueuesThenRefuses) {
  workers_.Register("w1", Ready(1, {M("m", 1)}), t0);
  workers_.Register("w2", Ready(1, {M("m", 1)}), t0);
  const auto a = Accept(), b = Accept(), c = Accept(), d = Accept(), e = Accept();
  EXPECT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kSent);
  EXPECT_EQ(dispatcher_.Dispatch(b, t0), Dispatcher::Outcome::kSent);
  ASSERT_EQ(transport_.to_workers.size(), 2u);
  EXPECT_NE(transport_.to_workers[0].peer, transport_.to_workers[1].peer) << "one per worker";
  EXPECT_EQ(transport_.to_workers[0].body, "body-" + std::to_string(a));
  EXPECT_EQ(dispatcher_.Dispatch(c, t0), Dispatcher::Outcome::kQueued) << "no credit left";
  EXPECT_EQ(dispatcher_.Dispatch(d, t0), Dispatcher::Outcome::kQueued);
  EXPECT_EQ(dispatcher_.Dispatch(e, t0), Dispatcher::Outcome::kFailed) << "queue of 2 is full";
  ASSERT_EQ(transport_.to_clients.size(), 1u);
  EXPECT_EQ(CodeOf(transport_.to_clients[0]), ErrorCode::kOverloaded);
  EXPECT_EQ(transport_.to_clients[0].request_id, e * 10) << "answered under the client's id";
  EXPECT_FALSE(requests_.Contains(e));
  EXPECT_EQ(dispatcher_.QueueDepths().at("m"), 2u);

  // a's worker answers (as the router does: its credit back, the reply to the client): the
  // credit goes to the oldest waiting request (c, then d).
  const std::string a_worker = transport_.to_workers[0].peer;
  EXPECT_TRUE(workers_.Find(a_worker)->Release(a));
  requests_.Reply(a, zmq::message_t(std::string_view("vectors")), t0 + 1ms);
  dispatcher_.DrainQueue("m", t0 + 1ms);
  ASSERT_EQ(transport_.to_workers.size(), 3u);
  EXPECT_EQ(transport_.to_workers[2].request_id, c) << "FIFO: the oldest first";
  EXPECT_EQ(transport_.to_workers[2].peer, a_worker);
  EXPECT_EQ(dispatcher_.QueueDepths().at("m"), 1u);
  EXPECT_EQ(transport_.to_clients.back().command, Command::kReply);
  EXPECT_EQ(transport_.to_clients.back().body, "vectors");
}

TEST_F(RouterComponentsTest, AnUnreachableWorkerIsDroppedAndTheNextOneTried) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  workers_.Register("w2", Ready(4, {M("m", 1)}), t0);
  transport_.unreachable = {"w1"};
  const auto a = Accept();
  EXPECT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kSent);
  EXPECT_EQ(dropped_, (std::vector<std::string>{"w1"}));
  ASSERT_EQ(transport_.to_workers.size(), 1u);
  EXPECT_EQ(transport_.to_workers[0].peer, "w2");
  EXPECT_EQ(requests_.Find(a)->attempts, 2) << "the failed send counts as an attempt";
}

TEST_F(RouterComponentsTest, ARequestTriedOnMaxAttemptsWorkersFails) {
  options_.max_attempts = 2;
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept();
  requests_.Find(a)->attempts = 2;
  EXPECT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kFailed);
  ASSERT_EQ(transport_.to_clients.size(), 1u);
  EXPECT_EQ(CodeOf(transport_.to_clients[0]), ErrorCode::kUnavailable);
}

TEST_F(RouterComponentsTest, OnlyReadyVersionsGetRequests) {
  workers_.Register("w1", Ready(4, {M("m", 1, ModelState::kLoading)}), t0);
  const auto a = Accept();
  EXPECT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kQueued) << "waits for LOADING";
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  dispatcher_.DrainQueue("m", t0);
  ASSERT_EQ(transport_.to_workers.size(), 1u);
  EXPECT_EQ(transport_.to_workers[0].request_id, a);
}

TEST_F(RouterComponentsTest, QueuedRequestsForAModelNobodyServesFail) {
  const auto a = Accept("gone"), b = Accept("m");
  dispatcher_.Dispatch(a, t0);
  dispatcher_.Dispatch(b, t0);
  dispatcher_.FailQueued([](const std::string& model, std::uint32_t) { return model == "m"; }, t0);
  ASSERT_EQ(transport_.to_clients.size(), 1u);
  EXPECT_EQ(CodeOf(transport_.to_clients[0]), ErrorCode::kUnknownModel);
  EXPECT_FALSE(requests_.Contains(a));
  EXPECT_TRUE(requests_.Contains(b));
}

// A timed-out request stays in the worker's queue: its credit comes back only with the worker's
// (late) answer, so the router never sends more than the worker can hold.
TEST_F(RouterComponentsTest, DeadlinesFailRequestsButTheirCreditWaitsForTheWorker) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept();
  dispatcher_.Dispatch(a, t0);
  requests_.ArmDeadline(a, t0 + 1s);
  requests_.ExpireDeadlines(t0 + 999ms);
  EXPECT_TRUE(requests_.Contains(a));
  requests_.ExpireDeadlines(t0 + 1s);
  EXPECT_FALSE(requests_.Contains(a));
  ASSERT_EQ(transport_.to_clients.size(), 1u);
  EXPECT_EQ(CodeOf(transport_.to_clients[0]), ErrorCode::kTimeout);
  EXPECT_EQ(workers_.Find("w1")->in_flight_texts, 1u) << "still the worker's";
  // Exactly one answer: a late reply finds nothing, and gives the credit back.
  EXPECT_TRUE(workers_.Find("w1")->Release(a));
  requests_.Reply(a, zmq::message_t(std::string_view("late")), t0 + 2s);
  EXPECT_EQ(transport_.to_clients.size(), 1u);
  EXPECT_EQ(workers_.Find("w1")->in_flight_texts, 0u);
}

// A REQUEST carries the time left until the router's deadline (protocol.h frame 4), rounded up
// to whole milliseconds; none without a deadline.
TEST_F(RouterComponentsTest, RequestsCarryTheTimeLeftToTheWorker) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept(), b = Accept();
  requests_.ArmDeadline(a, t0 + 1500ms);
  dispatcher_.Dispatch(a, t0 + 1000ms - std::chrono::microseconds(1));
  dispatcher_.Dispatch(b, t0);
  ASSERT_EQ(transport_.to_workers.size(), 2u);
  EXPECT_EQ(transport_.to_workers[0].budget, 501ms);
  EXPECT_EQ(transport_.to_workers[1].budget, 0ms) << "no deadline armed";
}

// Credits count texts, the unit of the worker's queue: 64 texts of credit take two requests of
// 32 texts, not 64 requests. A request larger than the whole credit still goes to an idle
// worker.
TEST_F(RouterComponentsTest, CreditsCountTexts) {
  options_.model_defaults.max_queue = 8;
  workers_.Register("w1", Ready(64, {M("m", 1)}), t0);
  const auto a = Accept("m", "c", 32), b = Accept("m", "c", 32), c = Accept("m", "c", 1);
  EXPECT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kSent);
  EXPECT_EQ(dispatcher_.Dispatch(b, t0), Dispatcher::Outcome::kSent);
  EXPECT_EQ(dispatcher_.Dispatch(c, t0), Dispatcher::Outcome::kQueued) << "64 of 64 texts taken";
  EXPECT_EQ(workers_.Find("w1")->in_flight_texts, 64u);
  workers_.Find("w1")->Release(a);
  dispatcher_.DrainQueue("m", t0);
  EXPECT_EQ(workers_.Find("w1")->in_flight_texts, 33u);
  workers_.Find("w1")->Release(b);
  workers_.Find("w1")->Release(c);
  const auto huge = Accept("m", "c", 500);
  EXPECT_EQ(dispatcher_.Dispatch(huge, t0), Dispatcher::Outcome::kSent) << "idle: it goes";
  EXPECT_EQ(dispatcher_.Dispatch(Accept(), t0), Dispatcher::Outcome::kQueued);
}

// A worker whose queue was full answers OVERLOADED: the client hears nothing of it. The request
// goes back to the front of the queue, the attempt does not count, and the worker gets nothing
// more until it makes progress; another worker with credit takes the request.
TEST_F(RouterComponentsTest, AnOverloadedWorkerGetsTheRequestBackInTheQueue) {
  options_.max_attempts = 1;
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept(), b = Accept();
  ASSERT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kSent);
  ASSERT_EQ(dispatcher_.Dispatch(b, t0), Dispatcher::Outcome::kSent);
  WorkerState& w1 = *workers_.Find("w1");
  w1.Release(a);  // w1 answers a with OVERLOADED
  dispatcher_.WorkerFull(w1, a);
  EXPECT_TRUE(transport_.to_clients.empty()) << "nothing reaches the client";
  EXPECT_TRUE(requests_.Contains(a));
  EXPECT_EQ(requests_.Find(a)->attempts, 0) << "not counted against max_attempts";
  EXPECT_EQ(dispatcher_.QueueDepths().at("m"), 1u);
  const auto c = Accept();
  EXPECT_EQ(dispatcher_.Dispatch(c, t0), Dispatcher::Outcome::kQueued) << "w1 is full";
  workers_.Register("w2", Ready(4, {M("m", 1)}), t0);
  dispatcher_.DrainQueue("m", t0);
  ASSERT_EQ(transport_.to_workers.size(), 4u);
  EXPECT_EQ(transport_.to_workers[2].request_id, a) << "first in line again";
  EXPECT_EQ(transport_.to_workers[2].peer, "w2");
  EXPECT_EQ(transport_.to_workers[3].request_id, c);
  // w1 makes progress (the router clears `full` on its next reply or heartbeat): it takes
  // requests again.
  w1.full = false;
  EXPECT_EQ(dispatcher_.Dispatch(Accept(), t0), Dispatcher::Outcome::kSent);
}

// The queue's bound sheds new requests only. One bounced by a full worker, or orphaned by a
// dead one, was admitted: it waits in the queue however full it is, and the client never hears
// OVERLOADED for the workers' doing (issue 36, defect 6: both ended OVERLOADED).
TEST_F(RouterComponentsTest, AnAdmittedRequestIsNeverShedByTheQueuesBound) {
  workers_.Register("w1", Ready(3, {M("m", 1)}), t0);
  const auto a = Accept(), b = Accept(), c = Accept(), d = Accept(), e = Accept();
  for (const auto id : {a, b, c})
    ASSERT_EQ(dispatcher_.Dispatch(id, t0), Dispatcher::Outcome::kSent);
  for (const auto id : {d, e})
    ASSERT_EQ(dispatcher_.Dispatch(id, t0), Dispatcher::Outcome::kQueued);
  WorkerState& w1 = *workers_.Find("w1");
  w1.Release(a);  // w1 answers a with OVERLOADED; the router drains the queues afterwards
  dispatcher_.WorkerFull(w1, a);
  dispatcher_.DrainQueue("m", t0);
  dispatcher_.Redispatch(workers_.Remove("w1"), "w1", t0);  // and then dies with b and c
  EXPECT_EQ(transport_.to_clients.size(), 0u) << "a client heard of the workers' trouble";
  EXPECT_EQ(dispatcher_.QueueDepths().at("m"), 5u);
  EXPECT_EQ(dispatcher_.Dispatch(Accept(), t0), Dispatcher::Outcome::kFailed)
      << "a new request is still shed";
  workers_.Register("w2", Ready(8, {M("m", 1)}), t0);
  dispatcher_.DrainQueue("m", t0);
  ASSERT_EQ(transport_.to_workers.size(), 8u);
  EXPECT_EQ(transport_.to_workers[3].request_id, a) << "the bounced request first";
}

// Hedging: a request its worker holds past the model's hedge time goes once more to another
// worker with credit, taking credit there; the hedge time is hedge-min-ms until the model's
// replies say more (hedge-after-p99 x their p99).
TEST_F(RouterComponentsTest, AHeldRequestIsHedgedOnceToAnotherWorker) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  workers_.Register("w2", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept();
  ASSERT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kSent);
  const std::string first = transport_.to_workers.at(0).peer;
  const std::string second = first == "w1" ? "w2" : "w1";
  dispatcher_.Hedge(t0 + 99ms);
  EXPECT_EQ(transport_.to_workers.size(), 1u) << "hedged before hedge-min-ms";
  dispatcher_.Hedge(t0 + 100ms);
  ASSERT_EQ(transport_.to_workers.size(), 2u);
  EXPECT_EQ(transport_.to_workers[1].peer, second);
  EXPECT_EQ(transport_.to_workers[1].request_id, a);
  EXPECT_EQ(requests_.Find(a)->worker, first);
  EXPECT_EQ(requests_.Find(a)->hedge_worker, second);
  EXPECT_EQ(requests_.Find(a)->attempts, 1) << "a hedge is no attempt";
  EXPECT_EQ(workers_.Find(second)->in_flight_texts, 1u) << "the hedge takes credit";
  dispatcher_.Hedge(t0 + 10s);
  EXPECT_EQ(dispatcher_.hedges(), 1u) << "once";

  // The model's replies take 100 ms: its hedge time is 4 x that.
  for (int i = 0; i < 100; ++i) dispatcher_.Answered("m", 100ms);
  const auto b = Accept();
  ASSERT_EQ(dispatcher_.Dispatch(b, t0), Dispatcher::Outcome::kSent);
  dispatcher_.Hedge(t0 + 399ms);
  EXPECT_EQ(dispatcher_.hedges(), 1u);
  dispatcher_.Hedge(t0 + 400ms);
  EXPECT_EQ(dispatcher_.hedges(), 2u);
}

// A hedged request whose first worker dies is carried on by the hedge (no third copy); one
// whose hedge dies is left to its first worker. With hedging off nothing is hedged.
TEST_F(RouterComponentsTest, AHedgeOutlivesEitherWorker) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  workers_.Register("w2", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept(), b = Accept();
  ASSERT_EQ(dispatcher_.Dispatch(a, t0), Dispatcher::Outcome::kSent);
  ASSERT_EQ(dispatcher_.Dispatch(b, t0), Dispatcher::Outcome::kSent);
  dispatcher_.Hedge(t0 + 1s);
  ASSERT_EQ(dispatcher_.hedges(), 2u);
  const std::string a_first = requests_.Find(a)->worker;
  const std::string a_hedge = requests_.Find(a)->hedge_worker;
  dispatcher_.Redispatch(workers_.Remove(a_first), a_first, t0 + 1s);
  EXPECT_EQ(transport_.to_workers.size(), 4u) << "nothing sent again: the hedges carry on";
  EXPECT_EQ(requests_.Find(a)->worker, a_hedge);
  EXPECT_TRUE(requests_.Find(a)->hedge_worker.empty());
  // b went first to the other worker and its hedge to the dead one: left to its first worker.
  EXPECT_EQ(requests_.Find(b)->worker, a_hedge);
  EXPECT_TRUE(requests_.Find(b)->hedge_worker.empty());

  options_.model_defaults.hedge_after_p99 = 0;
  const auto c = Accept();
  ASSERT_EQ(dispatcher_.Dispatch(c, t0), Dispatcher::Outcome::kSent);
  workers_.Register("w3", Ready(4, {M("m", 1)}), t0);
  dispatcher_.Hedge(t0 + 1h);
  EXPECT_EQ(dispatcher_.hedges(), 2u);
}

TEST_F(RouterComponentsTest, AnsweredRequestsDoNotPileUpInTheDeadlineHeap) {
  // Two long-lived requests (one re-armed), then many answered ones with long deadlines: the
  // heap is rebuilt from the table and the live deadlines survive each rebuild.
  const auto early = Accept(), rearmed = Accept();
  requests_.ArmDeadline(early, t0 + 10s);
  requests_.ArmDeadline(rearmed, t0 + 5s);
  requests_.ArmDeadline(rearmed, t0 + 20s);
  int over = 0;  // times the heap held more than two entries per request, plus the slack
  for (int i = 0; i < 10'000; ++i) {
    const auto id = Accept();
    requests_.ArmDeadline(id, t0 + 30s);
    if (requests_.deadline_entries() > 2 * requests_.size() + 1024) ++over;
    requests_.Reply(id, zmq::message_t(std::string_view("ok")), t0);
  }
  EXPECT_EQ(over, 0) << "stale entries are dropped";
  requests_.ExpireDeadlines(t0 + 10s);
  EXPECT_FALSE(requests_.Contains(early)) << "its deadline survived the rebuilds";
  EXPECT_TRUE(requests_.Contains(rearmed)) << "only its latest deadline counts";
  requests_.ExpireDeadlines(t0 + 20s);
  EXPECT_FALSE(requests_.Contains(rearmed));
  requests_.ExpireDeadlines(t0 + 30s);
  EXPECT_EQ(requests_.deadline_entries(), 0u) << "the stale ones left as they came due";
}

TEST_F(RouterComponentsTest, RequestsOfADeadWorkerGoToAnother) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  const auto a = Accept();
  dispatcher_.Dispatch(a, t0);
  workers_.Register("w2", Ready(4, {M("m", 1)}), t0);
  dispatcher_.Redispatch(workers_.Remove("w1"), "w1", t0);
  ASSERT_EQ(transport_.to_workers.size(), 2u);
  EXPECT_EQ(transport_.to_workers[1].peer, "w2");
  EXPECT_EQ(transport_.to_workers[1].request_id, a);
  EXPECT_EQ(requests_.Find(a)->worker, "w2");
}

// --- Control fan-out -----------------------------------------------------------------------

class ControlFanoutTest : public RouterComponentsTest {
 protected:
  ControlFanout fanout_{transport_, workers_, requests_, 10s};

  // The one REPLY the client got, decoded.
  protocol::ControlReply ReplyToClient() {
    EXPECT_EQ(transport_.to_clients.size(), 1u);
    protocol::ControlReply reply;
    std::string error;
    EXPECT_TRUE(protocol::Decode(transport_.to_clients.at(0).body, &reply, &error)) << error;
    return reply;
  }
};

TEST_F(ControlFanoutTest, LoadGoesToEveryWorkerAndThoseWithoutTheModelAreLeftOut) {
  workers_.Register("w1", Ready(4, {}), t0);
  workers_.Register("w2", Ready(4, {}), t0);
  fanout_.Start("c", 7, {.op = protocol::ControlOp::kLoad, .model = "m"}, t0);
  ASSERT_EQ(transport_.to_workers.size(), 2u);
  const std::uint64_t id = transport_.to_workers[0].request_id;
  EXPECT_EQ(transport_.to_workers[1].request_id, id) << "one operation, one id";
  EXPECT_TRUE(fanout_.Owns(id));
  fanout_.Record(id, {.worker = "w1", .ok = true, .version = 3});
  EXPECT_TRUE(transport_.to_clients.empty()) << "answered before the last worker";
  fanout_.Record(id, {.worker = "w2", .code = ErrorCode::kUnknownModel});
  const protocol::ControlReply reply = ReplyToClient();
  EXPECT_EQ(transport_.to_clients[0].request_id, 7u);
  ASSERT_EQ(reply.results.size(), 1u);
  EXPECT_EQ(reply.results[0].worker, "w1");
  EXPECT_FALSE(fanout_.Owns(id));
}

TEST_F(ControlFanoutTest, WhenNoWorkerHasTheModelEveryRefusalIsKept) {
  workers_.Register("w1", Ready(4, {}), t0);
  workers_.Register("w2", Ready(4, {}), t0);
  fanout_.Start("c", 7, {.op = protocol::ControlOp::kLoad, .model = "m"}, t0);
  const std::uint64_t id = transport_.to_workers[0].request_id;
  fanout_.Record(id, {.worker = "w1", .code = ErrorCode::kUnknownModel});
  fanout_.Record(id, {.worker = "w2", .code = ErrorCode::kUnknownModel});
  EXPECT_EQ(ReplyToClient().results.size(), 2u);
}

TEST_F(ControlFanoutTest, UnloadGoesOnlyToWorkersThatHaveTheModel) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  workers_.Register("w2", Ready(4, {M("other", 1)}), t0);
  fanout_.Start("c", 7, {.op = protocol::ControlOp::kUnload, .model = "m"}, t0);
  ASSERT_EQ(transport_.to_workers.size(), 1u);
  EXPECT_EQ(transport_.to_workers[0].peer, "w1");
  protocol::ControlRequest sent;
  std::string error;
  ASSERT_TRUE(protocol::Decode(transport_.to_workers[0].body, &sent, &error)) << error;
  EXPECT_EQ(sent.op, protocol::ControlOp::kUnload);
  EXPECT_TRUE(sent.workers.empty()) << "workers get the op about themselves";
}

TEST_F(ControlFanoutTest, DeadWorkersAndTheDeadlineStillGiveOneAnswer) {
  workers_.Register("w1", Ready(4, {M("m", 1)}), t0);
  workers_.Register("w2", Ready(4, {M("m", 1)}), t0);
  workers_.Register("w3", Ready(4, {M("m", 1)}), t0);
  fanout_.Start("c", 7, {.op = protocol::ControlOp::kUnload, .model = "m", .timeout_ms = 500}, t0);
  const std::uint64_t id = transport_.to_workers[0].request_id;
  fanout_.Record(id, {.worker = "w1", .ok = true});
  fanout_.WorkerGone("w2", "missed heartbeats");
  fanout_.Expire(t0 + 499ms);
  EXPECT_TRUE(transport_.to_clients.empty());
  fanout_.Expire(t0 + 500ms);
  const protocol::ControlReply reply = ReplyToClient();
  ASSERT_EQ(reply.results.size(), 3u);
  EXPECT_TRUE(reply.results[0].ok);
  EXPECT_EQ(reply.results[1].code, ErrorCode::kUnavailable);
  EXPECT_EQ(reply.results[2].code, ErrorCode::kTimeout);
  fanout_.Record(id, {.worker = "w3", .ok = true});  // too late: nothing more is sent
  EXPECT_EQ(transport_.to_clients.size(), 1u);
}

TEST_F(ControlFanoutTest, ImpossibleOperationsAreRefusedAtOnce) {
  fanout_.Start("c", 1, {.op = protocol::ControlOp::kLoad, .model = "m"}, t0);
  EXPECT_EQ(CodeOf(transport_.to_clients.back()), ErrorCode::kUnavailable) << "no workers";
  workers_.Register("w1", Ready(4, {}), t0);
  fanout_.Start("c", 2, {.op = protocol::ControlOp::kLoad, .model = "m", .workers = {"nope"}}, t0);
  EXPECT_EQ(CodeOf(transport_.to_clients.back()), ErrorCode::kBadRequest) << "unknown worker";
  fanout_.Start("c", 3, {.op = protocol::ControlOp::kUnload, .model = "m"}, t0);
  EXPECT_EQ(CodeOf(transport_.to_clients.back()), ErrorCode::kUnknownModel) << "nobody has it";
  fanout_.Start("c", 4, {.op = protocol::ControlOp::kLoad}, t0);
  EXPECT_EQ(CodeOf(transport_.to_clients.back()), ErrorCode::kBadRequest) << "no model";
  EXPECT_TRUE(transport_.to_workers.empty());
}

// --- Cache front ---------------------------------------------------------------------------

class CacheFrontTest : public ::testing::Test {
 protected:
  void Cache(const std::string& text, std::vector<float> v, std::uint32_t tokens = 0) {
    cache_.Put(EmbeddingCache::Key("m", 1, true, 0, "", text), v, tokens);
  }
  PendingRequest Pending(const std::vector<std::string>& inputs) {
    request_ = {.model = "m", .version = 0, .inputs = inputs};
    return {.client = "c", .model = "m", .body = zmq::message_t(protocol::Encode(request_))};
  }
  // What worker w1 answers for m:1: 2-float vectors, one batch, and (if given) token counts.
  static protocol::EmbedReply WorkerReply(std::vector<float> data,
                                          std::vector<std::uint32_t> tokens = {}) {
    const auto count = static_cast<std::uint32_t>(data.size() / 2);
    return {.model = "m",
            .version = 1,
            .worker = "w1",
            .dim = 2,
            .count = count,
            .batch_size = count,
            .data = std::move(data),
            .tokens = std::move(tokens)};
  }

  RouterMetrics metrics_;
  EmbeddingCache cache_{1 << 20};
  CacheFront front_{cache_, nullptr, metrics_, 5ms};
  protocol::EmbedRequest request_;
};

TEST_F(CacheFrontTest, PartialHitsAskForDistinctMissesAndMergeInInputOrder) {
  Cache("a", {1, 1});
  Cache("c", {3, 3});
  PendingRequest p = Pending({"b", "a", "b", "c"});
  std::string reply;
  ASSERT_EQ(front_.Look(1, p, request_, 1u, t0, &reply), CacheFront::Lookup::kDispatch);
  protocol::EmbedRequest asked;
  std::string error;
  ASSERT_TRUE(protocol::Decode(p.body.to_string_view(), &asked, &error)) << error;
  EXPECT_EQ(asked.inputs, (std::vector<std::string>{"b"})) << "each missing text once";
  EXPECT_EQ(asked.version, 1u) << "pinned to the version the hits are of";
  EXPECT_EQ(metrics_.cache_hits, 2u);
  EXPECT_EQ(metrics_.cache_misses, 2u);

  const protocol::EmbedReply worker = WorkerReply({2, 2});
  const std::string body = front_.Complete(p, protocol::Encode(worker), worker);
  protocol::EmbedReply merged;
  ASSERT_TRUE(protocol::Decode(body, &merged, &error)) << error;
  EXPECT_EQ(merged.count, 4u);
  EXPECT_EQ(merged.data, (std::vector<float>{2, 2, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(merged.worker, "w1");
  ASSERT_NE(cache_.Get(EmbeddingCache::Key("m", 1, true, 0, "", "b")), nullptr)
      << "the miss is cached";
}

TEST_F(CacheFrontTest, FullHitsAreAnsweredWithoutAWorker) {
  Cache("a", {1, 1});
  PendingRequest p = Pending({"a", "a"});
  std::string reply;
  ASSERT_EQ(front_.Look(1, p, request_, 1u, t0, &reply), CacheFront::Lookup::kAnswered);
  protocol::EmbedReply answer;
  std::string error;
  ASSERT_TRUE(protocol::Decode(reply, &answer, &error)) << error;
  EXPECT_EQ(answer.worker, "cache");
  EXPECT_EQ(answer.data, (std::vector<float>{1, 1, 1, 1}));
}

// Issue 26: a cached text's reply reports the tokens the worker counted for it, merged in
// input order with the worker's counts for the misses; one count not known makes the whole
// reply's not known (no tokens), never too low.
TEST_F(CacheFrontTest, TokenCountsComeBackFromTheCache) {
  Cache("a", {1, 1}, 5);
  Cache("c", {3, 3}, 9);
  PendingRequest p = Pending({"b", "a", "b", "c"});
  std::string reply;
  ASSERT_EQ(front_.Look(1, p, request_, 1u, t0, &reply), CacheFront::Lookup::kDispatch);
  const protocol::EmbedReply worker = WorkerReply({2, 2}, {7});
  protocol::EmbedReply merged;
  std::string error;
  ASSERT_TRUE(
      protocol::Decode(front_.Complete(p, protocol::Encode(worker), worker), &merged, &error))
      << error;
  EXPECT_EQ(merged.tokens, (std::vector<std::uint32_t>{7, 5, 7, 9}));
  ASSERT_NE(cache_.Get(EmbeddingCache::Key("m", 1, true, 0, "", "b")), nullptr);
  EXPECT_EQ(cache_.Get(EmbeddingCache::Key("m", 1, true, 0, "", "b"))->tokens, 7u)
      << "stored with it";

  PendingRequest full = Pending({"c", "b"});
  ASSERT_EQ(front_.Look(2, full, request_, 1u, t0, &reply), CacheFront::Lookup::kAnswered);
  protocol::EmbedReply answer;
  ASSERT_TRUE(protocol::Decode(reply, &answer, &error)) << error;
  EXPECT_EQ(answer.tokens, (std::vector<std::uint32_t>{9, 7}));

  Cache("old", {4, 4});  // from a worker that did not count
  PendingRequest mixed = Pending({"old", "a"});
  ASSERT_EQ(front_.Look(3, mixed, request_, 1u, t0, &reply), CacheFront::Lookup::kAnswered);
  ASSERT_TRUE(protocol::Decode(reply, &answer, &error)) << error;
  EXPECT_TRUE(answer.tokens.empty());
}

TEST_F(CacheFrontTest, WithNothingReadyTheRequestGoesAsItCame) {
  Cache("a", {1, 1});
  PendingRequest p = Pending({"a", "b"});
  const std::string body = p.body.to_string();
  std::string reply;
  ASSERT_EQ(front_.Look(1, p, request_, std::nullopt, t0, &reply), CacheFront::Lookup::kDispatch);
  EXPECT_EQ(p.body.to_string(), body);
  EXPECT_EQ(p.texts, (std::vector<std::string>{"a", "b"})) << "the reply fills the cache";
}

TEST_F(CacheFrontTest, AReplyOfTheWrongShapeIsRefusedWhenMerging) {
  Cache("a", {1, 1});
  PendingRequest p = Pending({"a", "b"});
  std::string reply;
  ASSERT_EQ(front_.Look(1, p, request_, 1u, t0, &reply), CacheFront::Lookup::kDispatch);
  const protocol::EmbedReply two = WorkerReply({5, 5, 6, 6});
  EXPECT_TRUE(front_.Complete(p, protocol::Encode(two), two).empty());
}

}  // namespace
}  // namespace ember::router
