// ModelRunner's pipeline with a fake backend that takes time: how many batches it keeps in
// flight, that every request still gets exactly one reply in input order, and that a slow
// tokenization holds up no other request; and a score request's path through it (pairs to the
// batch, labels and the activation to the reply).
#include "worker/model_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <zmq_addon.hpp>

#include "common/protocol.h"
#include "engine/scores.h"
#include "tests/fakes/fake_backend.h"

namespace ember::worker {
namespace {

using namespace std::chrono_literals;

// How many Embed calls were inside at once, shared by a backend and the test (the runner owns
// and destroys the backend before the test looks).
struct Overlap {
  int most() {
    std::lock_guard lock(mu);
    return most_inside;
  }
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0, most_inside = 0;
  bool given_up = false;
};

// A FakeBackend whose Embed holds each batch until `together` batches are inside at once, or
// until `limit` has passed (once: after that it waits no more).
class OverlapBackend : public testing::FakeBackend {
 public:
  OverlapBackend(std::shared_ptr<Overlap> overlap, int together, std::chrono::milliseconds limit)
      : overlap_(std::move(overlap)), together_(together), limit_(limit) {}
  std::vector<float> Embed(const engine::TokenBatch& batch) override {
    Overlap& o = *overlap_;
    {
      std::unique_lock lock(o.mu);
      o.most_inside = std::max(o.most_inside, ++o.inside);
      o.cv.notify_all();
      if (!o.given_up && !o.cv.wait_for(lock, limit_, [&] { return o.most_inside >= together_; })) {
        o.given_up = true;
      }
    }
    auto out = FakeBackend::Embed(batch);
    std::lock_guard lock(o.mu);
    --o.inside;
    return out;
  }

 private:
  const std::shared_ptr<Overlap> overlap_;
  const int together_;
  const std::chrono::milliseconds limit_;
};

class ModelRunnerTest : public ::testing::Test {
 protected:
  // Runs `requests` requests of `texts` texts each through a runner over `backend` with
  // `in_flight` batches at once and batches of at most `batch` texts; returns the replies'
  // ids, in the order they came, and checks each reply's vectors.
  std::vector<std::uint64_t> Serve(std::unique_ptr<engine::Backend> backend, int in_flight,
                                   std::size_t batch, int requests, int texts) {
    zmq::socket_t results(context_, zmq::socket_type::pull);
    results.bind(kEndpoint);
    RunnerOptions options;
    options.batcher.max_batch_size = batch;
    options.batcher.max_queue_delay = 0us;
    options.batches_in_flight = in_flight;
    const protocol::ModelInfo info{.name = "m", .version = 1, .dim = 4};
    std::vector<std::uint64_t> answered;
    {
      ModelRunner runner("w", info, testing::Model(std::move(backend)), context_, kEndpoint,
                         options);
      for (int r = 0; r < requests; ++r) {
        Job job;
        job.request_id = static_cast<std::uint64_t>(r + 1);
        job.request.model = "m";
        for (int t = 0; t < texts; ++t) job.request.inputs.push_back(std::string(t + 1, 'x'));
        runner.Submit(std::move(job));
      }
      results.set(zmq::sockopt::rcvtimeo, 10'000);
      for (int r = 0; r < requests; ++r) {
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(results, std::back_inserter(frames))) break;
        std::string error;
        auto decoded = protocol::Decode(frames, &error);
        if (!decoded) {
          ADD_FAILURE() << error;
          break;
        }
        const protocol::Message& message = *decoded;
        EXPECT_EQ(message.command, protocol::Command::kReply);
        protocol::EmbedReply reply;
        EXPECT_TRUE(protocol::Decode(message.body(), &reply, &error)) << error;
        EXPECT_EQ(reply.count, static_cast<std::uint32_t>(texts));
        for (int t = 0; t < texts && reply.data.size() == 4u * texts; ++t) {
          EXPECT_EQ(reply.data[4 * t], static_cast<float>(t + 1)) << "vectors in input order";
        }
        answered.push_back(message.request_id);
      }
    }  // the runner answers what is queued, then joins
    return answered;
  }

  // Submits `request` to `runner` and returns its one answer from `results`.
  static protocol::Message Answer(ModelRunner& runner, zmq::socket_t& results,
                                  protocol::EmbedRequest request) {
    Job job;
    job.request_id = 1;
    job.request = std::move(request);
    runner.Submit(std::move(job));
    std::vector<zmq::message_t> frames;
    EXPECT_TRUE(zmq::recv_multipart(results, std::back_inserter(frames)));
    std::string error;
    auto decoded = protocol::Decode(frames, &error);
    EXPECT_TRUE(decoded) << error;
    return decoded ? std::move(*decoded) : protocol::Message{};
  }

  static constexpr char kEndpoint[] = "inproc://model-runner-test";
  zmq::context_t context_;
};

// Issue 24: on a GPU the next batch runs while the current one computes. With two batches in
// flight the backend sees two Embed calls at once; with one, never (the backend waits up to
// 2 s for a second call, which never comes).
TEST_F(ModelRunnerTest, TwoBatchesInFlightOverlap) {
  auto overlap = std::make_shared<Overlap>();
  const auto answered = Serve(std::make_unique<OverlapBackend>(overlap, 2, 5s), 2, 4, 16, 3);
  EXPECT_EQ(answered.size(), 16u);
  EXPECT_EQ(overlap->most(), 2) << "two batches ran at once";
}

TEST_F(ModelRunnerTest, OneBatchInFlightNeverOverlaps) {
  auto overlap = std::make_shared<Overlap>();
  const auto answered = Serve(std::make_unique<OverlapBackend>(overlap, 2, 50ms), 1, 4, 8, 3);
  EXPECT_EQ(answered.size(), 8u);
  EXPECT_EQ(overlap->most(), 1);
}

// A request split over batches that run at once still gets one reply, its vectors in order.
TEST_F(ModelRunnerTest, RequestsSplitOverConcurrentBatchesGetOneReplyEach) {
  const auto answered =
      Serve(std::make_unique<OverlapBackend>(std::make_shared<Overlap>(), 4, 20ms), 4, 3, 50, 7);
  std::vector<std::uint64_t> sorted = answered;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "one reply each";
  EXPECT_EQ(sorted.size(), 50u);
}

// A preferred batch size makes a batch leave as soon as the queue can form it, not when
// max_queue_delay is over (issue 36, defect 5: the scheduler was woken only by a first text or
// a full batch, so four texts waited out the 5 s delay).
TEST_F(ModelRunnerTest, APreferredBatchSizeLeavesAtOnce) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 10'000);
  RunnerOptions options;
  options.batcher.max_batch_size = 32;
  options.batcher.max_queue_delay = 5s;
  options.batcher.preferred_batch_sizes = {4};
  const protocol::ModelInfo info{.name = "m", .version = 1, .dim = 4};
  ModelRunner runner("w", info, testing::Model(std::make_unique<testing::FakeBackend>()), context_,
                     kEndpoint, options);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t r = 1; r <= 4; ++r) {
    Job job;
    job.request_id = r;
    job.request.model = "m";
    job.request.inputs = {"text"};
    runner.Submit(std::move(job));
    std::this_thread::sleep_for(50ms);  // texts that trickle in: the workload, not a wait
  }
  for (int r = 0; r < 4; ++r) {
    std::vector<zmq::message_t> frames;
    ASSERT_TRUE(zmq::recv_multipart(results, std::back_inserter(frames)));
    std::string error;
    const auto message = protocol::Decode(frames, &error);
    ASSERT_TRUE(message) << error;
    protocol::EmbedReply reply;
    ASSERT_TRUE(protocol::Decode(message->body(), &reply, &error)) << error;
    EXPECT_EQ(reply.batch_size, 4u);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "the batch waited out the delay";
}

// A gate a tokenizer waits at (up to 5 s) for the text "slow".
struct Gate {
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
};

class SlowTokenizer : public testing::FakeTokenizer {
 public:
  explicit SlowTokenizer(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  engine::Encoding Encode(std::string_view text,
                          const engine::EncodeOptions& options) const override {
    if (text == "slow") {
      std::unique_lock lock(gate_->mu);
      gate_->cv.wait_for(lock, 5s, [&] { return gate_->open; });
    }
    return FakeTokenizer::Encode(text, options);
  }

 private:
  const std::shared_ptr<Gate> gate_;
};

// Issue 24: tokenizing is the tokenizer pool's, off the scheduler, so a request that is slow to
// tokenize (a long text) holds up no other: the one behind it is batched and answered while
// the first is still being tokenized. (When the scheduler tokenized each intake and waited for
// it, the second reply came only after the first's tokenization.)
TEST_F(ModelRunnerTest, ASlowTokenizationHoldsUpNoOtherRequest) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 3'000);
  auto gate = std::make_shared<Gate>();
  RunnerOptions options;
  options.batcher.max_queue_delay = 0us;
  options.tokenizers = std::make_shared<TokenizerPool>(2);
  const protocol::ModelInfo info{.name = "m", .version = 1, .dim = 4};
  auto next_reply = [&]() -> std::optional<std::uint64_t> {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(results, std::back_inserter(frames))) return std::nullopt;
    std::string error;
    auto decoded = protocol::Decode(frames, &error);
    if (!decoded || decoded->command != protocol::Command::kReply) return std::nullopt;
    return decoded->request_id;
  };
  ModelRunner runner(
      "w", info, {std::make_unique<SlowTokenizer>(gate), std::make_unique<testing::FakeBackend>()},
      context_, kEndpoint, options);
  for (const auto& [id, text] : {std::pair<std::uint64_t, std::string>{1, "slow"}, {2, "fast"}}) {
    Job job;
    job.request_id = id;
    job.request.model = "m";
    job.request.inputs = {text};
    runner.Submit(std::move(job));
  }
  EXPECT_EQ(next_reply(), std::optional<std::uint64_t>(2)) << "answered while 1 tokenizes";
  gate->Open();
  EXPECT_EQ(next_reply(), std::optional<std::uint64_t>(1));
}

// Admission comes before tokenizing: the texts a model has queued and those still being
// tokenized together stay within max-queue, so a flood waits in no tokenizer queue and is
// refused OVERLOADED at once (issue 36, defect 7: every request waited its turn in the shared,
// unbounded tokenizer queue, here behind a tokenization that takes until the gate opens, and
// was refused only after it had been tokenized).
TEST_F(ModelRunnerTest, AdmissionComesBeforeTokenizing) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 3'000);
  auto gate = std::make_shared<Gate>();
  RunnerOptions options;
  options.batcher.max_queue = 8;
  options.batcher.max_queue_delay = 0us;
  options.tokenizers = std::make_shared<TokenizerPool>(1);
  const protocol::ModelInfo info{.name = "m", .version = 1, .dim = 4};
  ModelRunner runner(
      "w", info, {std::make_unique<SlowTokenizer>(gate), std::make_unique<testing::FakeBackend>()},
      context_, kEndpoint, options);
  for (std::uint64_t id = 1; id <= 20; ++id) {
    Job job;
    job.request_id = id;
    job.request.model = "m";
    job.request.inputs = {id == 1 ? "slow" : "fast"};
    runner.Submit(std::move(job));
  }
  auto next = [&]() -> std::optional<protocol::Message> {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(results, std::back_inserter(frames))) return std::nullopt;
    std::string error;
    return protocol::Decode(frames, &error);
  };
  for (int i = 0; i < 12; ++i) {  // while the gate is closed
    const auto refused = next();
    ASSERT_TRUE(refused) << i << " of 12 refusals came before the tokenizer was free";
    ASSERT_EQ(refused->command, protocol::Command::kError);
    protocol::ErrorBody error;
    std::string why;
    ASSERT_TRUE(protocol::Decode(refused->body(), &error, &why)) << why;
    EXPECT_EQ(error.code, ErrorCode::kOverloaded) << error.message;
    EXPECT_GT(refused->request_id, 8u) << "the first 8 texts fit the queue";
  }
  gate->Open();
  for (int i = 0; i < 8; ++i) {
    const auto answered = next();
    ASSERT_TRUE(answered);
    EXPECT_EQ(answered->command, protocol::Command::kReply);
    EXPECT_LE(answered->request_id, 8u);
  }
}

// A request with more texts than the model's queue holds could never fit: BAD_REQUEST naming
// max-queue, before any of its texts is tokenized.
class CountingTokenizer : public testing::FakeTokenizer {
 public:
  explicit CountingTokenizer(std::shared_ptr<std::atomic<int>> calls) : calls_(std::move(calls)) {}
  engine::Encoding Encode(std::string_view text,
                          const engine::EncodeOptions& options) const override {
    ++*calls_;
    return FakeTokenizer::Encode(text, options);
  }

 private:
  const std::shared_ptr<std::atomic<int>> calls_;
};

TEST_F(ModelRunnerTest, MoreTextsThanTheQueueHoldsAreRefusedUntokenized) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 3'000);
  auto calls = std::make_shared<std::atomic<int>>(0);
  RunnerOptions options;
  options.batcher.max_queue = 4;
  const protocol::ModelInfo info{.name = "m", .version = 1, .dim = 4};
  ModelRunner runner(
      "w", info,
      {std::make_unique<CountingTokenizer>(calls), std::make_unique<testing::FakeBackend>()},
      context_, kEndpoint, options);
  Job job;
  job.request_id = 7;
  job.request.model = "m";
  job.request.inputs = {"a", "b", "c", "d", "e"};
  runner.Submit(std::move(job));
  std::vector<zmq::message_t> frames;
  ASSERT_TRUE(zmq::recv_multipart(results, std::back_inserter(frames)));
  std::string error;
  auto decoded = protocol::Decode(frames, &error);
  ASSERT_TRUE(decoded) << error;
  EXPECT_EQ(decoded->command, protocol::Command::kError);
  protocol::ErrorBody body;
  ASSERT_TRUE(protocol::Decode(decoded->body(), &body, &error)) << error;
  EXPECT_EQ(body.code, ErrorCode::kBadRequest);
  EXPECT_NE(body.message.find("holds at most 4 (max-queue)"), std::string::npos) << body.message;
  EXPECT_EQ(calls->load(), 0);
}

// A classifier without a model: labels "no" and "yes"; a pair's ids are its two texts' bytes
// (FakeTokenizer); each sequence's logits are [where its second segment starts, its length], so the
// test sees what reached the batch.
class FakeClassifier : public testing::FakeBackend {
 public:
  FakeClassifier() : FakeBackend(1, 2) {}
  const std::vector<std::string>& labels() const override { return labels_; }
  std::vector<float> Embed(const engine::TokenBatch& batch) override {
    std::vector<float> out;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      out.push_back(static_cast<float>(batch.second_start(i)));
      out.push_back(static_cast<float>(batch.length(i)));
    }
    return out;
  }

 private:
  const std::vector<std::string> labels_ = {"no", "yes"};
};

// Issue 26: a score request's pairs reach the batch with their second segments; the reply names
// the labels and holds the logits (raw_scores) or their softmax; asking a classifier for
// embeddings, or an embedding model for scores, is BAD_REQUEST.
TEST_F(ModelRunnerTest, ScoresComeWithLabelsFromPairsAndTheirActivation) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 3'000);
  RunnerOptions options;
  options.batcher.max_queue_delay = 0us;
  ModelRunner classifier("w", {.name = "c", .version = 1, .dim = 2},
                         testing::Model(std::make_unique<FakeClassifier>()), context_, kEndpoint,
                         options);
  ModelRunner embedder("w", {.name = "e", .version = 1, .dim = 4},
                       testing::Model(std::make_unique<testing::FakeBackend>()), context_,
                       kEndpoint, options);
  const auto answer = [&](ModelRunner& runner, protocol::EmbedRequest request) {
    return Answer(runner, results, std::move(request));
  };
  protocol::EmbedRequest score{.model = "c", .inputs = {"ab", "q"}};
  score.task = protocol::Task::kScore;
  score.text_pairs = {"cde", "passage"};
  score.raw_scores = true;
  std::string error;
  protocol::EmbedReply reply;
  ASSERT_TRUE(protocol::Decode(answer(classifier, score).body(), &reply, &error)) << error;
  EXPECT_EQ(reply.labels, (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(reply.data, (std::vector<float>{2, 5, 1, 8}));
  EXPECT_EQ(reply.tokens, (std::vector<std::uint32_t>{5, 8}));

  score.raw_scores = false;
  ASSERT_TRUE(protocol::Decode(answer(classifier, score).body(), &reply, &error)) << error;
  std::vector<float> want = {2, 5, 1, 8};
  engine::ActivateScores(std::span(want).first(2));
  engine::ActivateScores(std::span(want).last(2));
  EXPECT_EQ(reply.data, want);

  for (auto& [runner, task] :
       {std::pair<ModelRunner*, protocol::Task>{&classifier, protocol::Task::kEmbed},
        {&embedder, protocol::Task::kScore}}) {
    protocol::EmbedRequest wrong{.model = "x", .inputs = {"a"}};
    wrong.task = task;
    const protocol::Message message = answer(*runner, wrong);
    EXPECT_EQ(message.command, protocol::Command::kError);
    protocol::ErrorBody body;
    ASSERT_TRUE(protocol::Decode(message.body(), &body, &error)) << error;
    EXPECT_EQ(body.code, ErrorCode::kBadRequest) << body.message;
  }
}

// Issue 26: a kDecode request's inputs are token ids in decimal; the worker reads them and asks
// the tokenizer for their text, on the tokenizer thread, and refuses anything else in an input.
class FakeDecoder : public testing::FakeTokenizer {
 public:
  std::string Decode(std::span<const std::int32_t> ids, bool skip_special) const override {
    std::string out = skip_special ? "skip" : "keep";
    for (const std::int32_t id : ids) out += ":" + std::to_string(id);
    return out;
  }
};

TEST_F(ModelRunnerTest, DecodeReadsDecimalIds) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 3'000);
  ModelRunner runner("w", {.name = "m", .version = 1, .dim = 4},
                     {std::make_unique<FakeDecoder>(), std::make_unique<testing::FakeBackend>()},
                     context_, kEndpoint, RunnerOptions{});
  const auto answer = [&](std::vector<std::string> inputs, bool skip) {
    protocol::EmbedRequest request{.model = "m", .inputs = std::move(inputs)};
    request.task = protocol::Task::kDecode;
    request.skip_special_tokens = skip;
    return Answer(runner, results, std::move(request));
  };
  std::string error;
  protocol::EmbedReply reply;
  const protocol::Message ok = answer({"101 7592  102", "", " 5"}, false);
  ASSERT_EQ(ok.command, protocol::Command::kReply);
  ASSERT_TRUE(protocol::Decode(ok.body(), &reply, &error)) << error;
  EXPECT_EQ(reply.texts, (std::vector<std::string>{"keep:101:7592:102", "keep", "keep:5"}));
  for (const char* bad : {"101 x", "-1", "1,2", "99999999999", "7 8x"}) {
    SCOPED_TRACE(bad);
    const protocol::Message refused = answer({bad}, true);
    EXPECT_EQ(refused.command, protocol::Command::kError);
    protocol::ErrorBody body;
    ASSERT_TRUE(protocol::Decode(refused.body(), &body, &error)) << error;
    EXPECT_EQ(body.code, ErrorCode::kBadRequest);
  }
}

// Issue 35: bge-m3's token-level outputs. Each sparse entry is a distinct id of the sequence,
// weighted by how often it occurs; each multi-vector row is [id, position] of a token but the
// first. Counts the calls of each kind.
class FakeHeads : public testing::FakeBackend {
 public:
  bool sparse() const override { return true; }
  SparseVectors EmbedSparse(const engine::TokenBatch& batch) override {
    ++sparse_calls;
    SparseVectors out;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::map<std::int32_t, float> counts;
      for (const std::int32_t id : batch.sequence(i)) counts[id] += 1;
      for (const auto& [id, n] : counts) {
        out.ids.push_back(id);
        out.weights.push_back(n);
      }
      out.offsets.push_back(out.ids.size());
    }
    return out;
  }
  std::int64_t multi_vector_dim() const override { return 2; }
  std::vector<float> EmbedMultiVector(const engine::TokenBatch& batch) override {
    ++multi_calls;
    std::vector<float> out;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      for (std::size_t t = 1; t < batch.length(i); ++t) {
        out.push_back(static_cast<float>(batch.sequence(i)[t]));
        out.push_back(static_cast<float>(t));
      }
    }
    return out;
  }
  std::vector<float> Embed(const engine::TokenBatch& batch) override {
    ++pooled_calls;
    return FakeBackend::Embed(batch);
  }
  std::atomic<int> pooled_calls = 0, sparse_calls = 0, multi_calls = 0;
};

// One batch holding a dense, a sparse and a multi-vector request runs the backend once per kind,
// and each reply holds its own kind's rows.
TEST_F(ModelRunnerTest, ABatchMixingOutputsRunsEachKindOnce) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 5'000);
  RunnerOptions options;
  options.batcher.max_queue_delay = 10s;  // the batch leaves at its preferred size only
  options.batcher.preferred_batch_sizes = {3};
  auto heads = std::make_unique<FakeHeads>();
  FakeHeads* backend = heads.get();
  std::map<std::uint64_t, protocol::EmbedReply> replies;
  {
    ModelRunner runner("w", {.name = "m3", .version = 1, .dim = 4},
                       testing::Model(std::move(heads)), context_, kEndpoint, options);
    const std::pair<protocol::Task, const char*> asks[] = {{protocol::Task::kEmbed, "abc"},
                                                           {protocol::Task::kSparse, "aab"},
                                                           {protocol::Task::kMultiVector, "xyz"}};
    std::uint64_t id = 0;
    for (const auto& [task, text] : asks) {
      Job job;
      job.request_id = ++id;
      job.request = {.model = "m3", .inputs = {text}};
      job.request.task = task;
      runner.Submit(std::move(job));
    }
    for (int i = 0; i < 3; ++i) {
      std::vector<zmq::message_t> frames;
      ASSERT_TRUE(zmq::recv_multipart(results, std::back_inserter(frames)));
      std::string error;
      auto message = protocol::Decode(frames, &error);
      ASSERT_TRUE(message) << error;
      ASSERT_EQ(message->command, protocol::Command::kReply) << message->body();
      ASSERT_TRUE(protocol::Decode(message->body(), &replies[message->request_id], &error))
          << error;
    }
    EXPECT_EQ(backend->pooled_calls, 1);
    EXPECT_EQ(backend->sparse_calls, 1);
    EXPECT_EQ(backend->multi_calls, 1);
  }
  for (const auto& [id, reply] : replies) EXPECT_EQ(reply.batch_size, 3u) << id;
  EXPECT_EQ(replies[1].data, (std::vector<float>{3, 1, 0, 0}));
  EXPECT_TRUE(replies[1].rows.empty());
  EXPECT_EQ(replies[2].dim, 1u);
  EXPECT_EQ(replies[2].rows, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(replies[2].indices, (std::vector<std::uint32_t>{'a', 'b'}));
  EXPECT_EQ(replies[2].data, (std::vector<float>{2, 1}));
  EXPECT_EQ(replies[3].dim, 2u);
  EXPECT_EQ(replies[3].rows, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(replies[3].data, (std::vector<float>{'y', 1, 'z', 2}));
}

// A model without the heads, or dimensions on a token-level output, is BAD_REQUEST.
TEST_F(ModelRunnerTest, TokenLevelOutputsNeedTheirHeads) {
  zmq::socket_t results(context_, zmq::socket_type::pull);
  results.bind(kEndpoint);
  results.set(zmq::sockopt::rcvtimeo, 3'000);
  ModelRunner plain("w", {.name = "e", .version = 1, .dim = 4},
                    testing::Model(std::make_unique<testing::FakeBackend>()), context_, kEndpoint,
                    RunnerOptions{});
  ModelRunner m3("w", {.name = "m3", .version = 1, .dim = 4},
                 testing::Model(std::make_unique<FakeHeads>()), context_, kEndpoint,
                 RunnerOptions{});
  const auto refusal = [&](ModelRunner& runner, protocol::Task task, std::uint32_t dimensions) {
    protocol::EmbedRequest request{.model = "x", .inputs = {"a"}};
    request.task = task;
    request.dimensions = dimensions;
    const protocol::Message message = Answer(runner, results, request);
    protocol::ErrorBody body;
    std::string error;
    EXPECT_EQ(message.command, protocol::Command::kError);
    EXPECT_TRUE(protocol::Decode(message.body(), &body, &error)) << error;
    EXPECT_EQ(body.code, ErrorCode::kBadRequest);
    return body.message;
  };
  EXPECT_NE(refusal(plain, protocol::Task::kSparse, 0).find("sparse_linear.pt"), std::string::npos);
  EXPECT_NE(refusal(plain, protocol::Task::kMultiVector, 0).find("colbert_linear.pt"),
            std::string::npos);
  EXPECT_NE(refusal(m3, protocol::Task::kSparse, 2).find("'dimensions'"), std::string::npos);
}

}  // namespace
}  // namespace ember::worker
