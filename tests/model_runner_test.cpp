// ModelRunner's pipeline with a fake backend that takes time: how many batches it keeps in
// flight, and that every request still gets exactly one reply in input order.
#include "worker/model_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <zmq_addon.hpp>

#include "common/protocol.h"
#include "tests/fakes/fake_backend.h"

namespace ember::worker {
namespace {

using namespace std::chrono_literals;

// A FakeBackend whose Embed holds each batch until `together` batches are inside at once, or
// until `limit` has passed (once: after that it waits no more); it counts the most that ever
// were.
class OverlapBackend : public testing::FakeBackend {
 public:
  OverlapBackend(int together, std::chrono::milliseconds limit)
      : together_(together), limit_(limit) {}
  std::vector<float> Embed(const engine::TokenBatch& batch) override {
    {
      std::unique_lock lock(mu_);
      ++inside_;
      most_ = std::max(most_, inside_);
      cv_.notify_all();
      if (!given_up_ && !cv_.wait_for(lock, limit_, [&] { return most_ >= together_; })) {
        given_up_ = true;
      }
    }
    auto out = FakeBackend::Embed(batch);
    std::lock_guard lock(mu_);
    --inside_;
    return out;
  }
  int most() {
    std::lock_guard lock(mu_);
    return most_;
  }

 private:
  const int together_;
  const std::chrono::milliseconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0, most_ = 0;
  bool given_up_ = false;
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
      ModelRunner runner("w", info, std::move(backend), context_, kEndpoint, options);
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

  static constexpr char kEndpoint[] = "inproc://model-runner-test";
  zmq::context_t context_;
};

// Issue 24: on a GPU the next batch runs while the current one computes. With two batches in
// flight the backend sees two Embed calls at once; with one, never (the backend waits up to
// 2 s for a second call, which never comes).
TEST_F(ModelRunnerTest, TwoBatchesInFlightOverlap) {
  auto backend = std::make_unique<OverlapBackend>(2, 5s);
  OverlapBackend* b = backend.get();
  const auto answered = Serve(std::move(backend), 2, 4, 16, 3);
  EXPECT_EQ(answered.size(), 16u);
  EXPECT_EQ(b->most(), 2) << "two batches ran at once";
}

TEST_F(ModelRunnerTest, OneBatchInFlightNeverOverlaps) {
  auto backend = std::make_unique<OverlapBackend>(2, 50ms);
  OverlapBackend* b = backend.get();
  const auto answered = Serve(std::move(backend), 1, 4, 8, 3);
  EXPECT_EQ(answered.size(), 8u);
  EXPECT_EQ(b->most(), 1);
}

// A request split over batches that run at once still gets one reply, its vectors in order.
TEST_F(ModelRunnerTest, RequestsSplitOverConcurrentBatchesGetOneReplyEach) {
  const auto answered = Serve(std::make_unique<OverlapBackend>(4, 20ms), 4, 3, 50, 7);
  std::vector<std::uint64_t> sorted = answered;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "one reply each";
  EXPECT_EQ(sorted.size(), 50u);
}

}  // namespace
}  // namespace ember::worker
