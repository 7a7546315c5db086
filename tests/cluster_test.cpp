// End to end: a real router and two real workers running the ember-tiny
// TorchScript model, driven by concurrent clients over ipc:// sockets.
#include "tests/cluster.h"

#include <gtest/gtest.h>

#include <cmath>
#include <zmq_addon.hpp>

#include "client/client.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "tests/load_client.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;

class ClusterTest : public ::testing::Test {
 protected:
  static ClusterOptions TinyCluster(int workers) {
    ClusterOptions options;
    options.workers = workers;
    options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
    options.router_args = {"--heartbeat-ms", "200"};
    options.worker_args = {"--heartbeat-ms", "200"};
    return options;
  }
  Reference reference_ = LoadTinyReference();
};

// 8 concurrent clients send 1,000 requests (1-3 texts each, 4 in flight per
// client) through the router to 2 workers. Each request must get exactly
// one reply, and every vector must equal the model's own output for that
// text computed alone, whatever batch it was computed in.
TEST_F(ClusterTest, ThousandConcurrentRequestsGetExactlyOneCorrectReply) {
  Cluster cluster(TinyCluster(2));
  ASSERT_TRUE(cluster.WaitForWorkers(2));

  const LoadResult load = RunLoad(cluster.frontend(), reference_, LoadOptions{});
  EXPECT_EQ(load.sent, 1000);
  EXPECT_EQ(load.replies, 1000);
  EXPECT_EQ(load.missing, 0);
  EXPECT_EQ(load.duplicates, 0);
  EXPECT_EQ(load.error_count(), 0);
  EXPECT_EQ(load.wrong, 0);
  // The vectors above equal each text's alone, and yet texts were batched.
  EXPECT_GT(load.largest_batch, 1u);
  // Both workers take a fair share.
  ASSERT_EQ(load.served_by.size(), 2u);
  for (const auto& [w, k] : load.served_by) EXPECT_GT(k, 250) << w;

  // The router's books balance too.
  Client client(cluster.frontend());
  const auto status = client.Status();
  std::uint64_t completed = 0;
  for (const auto& w : status.workers) {
    completed += w.completed;
    EXPECT_EQ(w.in_flight, 0u) << w.id;
  }
  EXPECT_EQ(completed, 1000u);
}

TEST_F(ClusterTest, SdkEmbedsAndReportsTypedErrors) {
  Cluster cluster(TinyCluster(1));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  Client client(cluster.frontend());

  const Embeddings e = client.Embed("tiny", {reference_.texts[0], reference_.texts[5]});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e.dim(), 64u);
  EXPECT_EQ(e.model(), "tiny");
  EXPECT_EQ(e.version(), 1u);
  EXPECT_LT(MaxAbsDiff(e[0], reference_.vectors[0]), 1e-4f);
  EXPECT_LT(MaxAbsDiff(e[1], reference_.vectors[5]), 1e-4f);

  auto code_of = [&](auto&& call) -> std::optional<ErrorCode> {
    try {
      call();
    } catch (const Error& error) {
      return error.code();
    }
    return std::nullopt;
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(code_of([&] { client.Embed("no-such-model", {"x"}); }), ErrorCode::kUnknownModel);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "unknown model must fail fast";
  EXPECT_EQ(code_of([&] { client.Embed("tiny", {"x"}, {.version = 9}); }),
            ErrorCode::kUnknownModel);
  EXPECT_EQ(code_of([&] { client.Embed("tiny", {}); }), ErrorCode::kBadRequest);
  EXPECT_EQ(code_of([&] { client.Embed("", {"x"}); }), ErrorCode::kBadRequest);
  EXPECT_EQ(code_of([&] {
              client.Embed("tiny", {"ok", std::string("bad \xff\xfe utf-8")});
            }),
            ErrorCode::kBadRequest);

  // After all of that the cluster still serves correct answers.
  const Embeddings again = client.Embed("tiny", {reference_.texts[2]});
  EXPECT_LT(MaxAbsDiff(again[0], reference_.vectors[2]), 1e-4f);
}

TEST_F(ClusterTest, RouterRejectsMalformedMessagesAndKeepsServing) {
  Cluster cluster(TinyCluster(1));
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(cluster.frontend());

  const std::vector<std::vector<std::string>> garbage = {
      {"hello"},
      {"EMBER\x01", "\x01"},
      {std::string("EMBER\x07", 6), "\x01", std::string(8, '\0'), ""},
      {std::string("EMBER\x01", 6), "\x01", std::string(8, '\0'), "not msgpack"},
      {std::string("EMBER\x01", 6), "\x04", std::string(8, '\0'), ""},  // READY from a client
  };
  for (const auto& parts : garbage) {
    std::vector<zmq::message_t> frames;
    for (const auto& p : parts) frames.emplace_back(p.data(), p.size());
    zmq::send_multipart(raw, frames);
    zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, 5s), 1) << "no reply to malformed message";
    std::string error;
    auto received = protocol::ReceiveDealt(raw, &error);
    ASSERT_TRUE(received && *received) << error;
    EXPECT_EQ((*received)->command, protocol::Command::kError);
    protocol::ErrorBody body;
    ASSERT_TRUE(protocol::Decode((*received)->body(), &body, &error)) << error;
    EXPECT_EQ(body.code, ErrorCode::kBadRequest) << body.message;
  }
  Client client(cluster.frontend());
  EXPECT_EQ(client.Embed("tiny", {"still alive"}).size(), 1u);
}

}  // namespace
}  // namespace ember::testing
