// End to end: a real router and two real workers running the ember-tiny
// TorchScript model, driven by concurrent clients over ipc:// sockets.
#include "tests/cluster.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <zmq_addon.hpp>

#include "client/client.h"
#include "common/messages.h"
#include "common/protocol.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;

struct Reference {
  std::vector<std::string> texts;
  std::vector<std::vector<float>> vectors;
};

// Vectors computed by scripts/make_tiny_model.py, each text alone, in Python.
Reference LoadReference() {
  std::ifstream in(TinyModelDir() + "/reference.json");
  const auto json = nlohmann::json::parse(in);
  return {json["texts"].get<std::vector<std::string>>(),
          json["vectors"].get<std::vector<std::vector<float>>>()};
}

float MaxAbsDiff(std::span<const float> a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

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
  Reference reference_ = LoadReference();
};

// 8 concurrent clients send 1,000 requests (1-3 texts each, several in flight
// per client) through the router to 2 workers. Each request must get exactly
// one reply, and every vector must equal the model's own output for that
// text computed alone, whatever batch it was computed in.
TEST_F(ClusterTest, ThousandConcurrentRequestsGetExactlyOneCorrectReply) {
  Cluster cluster(TinyCluster(2));
  ASSERT_TRUE(cluster.WaitForWorkers(2));

  constexpr int kClients = 8, kPerClient = 125, kWindow = 4;
  const std::size_t n = reference_.texts.size();
  std::atomic<int> wrong{0}, errors{0}, duplicates{0}, missing{0};
  std::mutex mu;
  std::map<std::string, int> served_by;

  auto run_client = [&](int c) {
    zmq::context_t context;
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    socket.set(zmq::sockopt::linger, 0);
    socket.connect(cluster.frontend());
    std::map<std::uint64_t, std::vector<std::size_t>> outstanding;  // id -> text indexes
    std::map<std::uint64_t, int> replies;
    std::map<std::string, int> served;
    int sent = 0;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while ((sent < kPerClient || !outstanding.empty()) &&
           std::chrono::steady_clock::now() < deadline) {
      while (sent < kPerClient && outstanding.size() < kWindow) {
        const std::uint64_t id = static_cast<std::uint64_t>(c) * 1'000'000 + sent;
        protocol::EmbedRequest request;
        request.model = "tiny";
        request.timeout_ms = 60'000;
        std::vector<std::size_t> picks;
        for (int t = 0; t <= sent % 3; ++t) picks.push_back((c * 31 + sent * 7 + t * 13) % n);
        for (auto p : picks) request.inputs.push_back(reference_.texts[p]);
        protocol::SendDealt(socket, protocol::Command::kRequest, id, protocol::Encode(request));
        outstanding[id] = picks;
        ++sent;
      }
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 100ms);
      std::string error;
      while (auto received = protocol::ReceiveDealt(socket, &error)) {
        ASSERT_TRUE(*received) << error;
        const auto& message = **received;
        if (++replies[message.request_id] > 1) {
          ++duplicates;
          continue;
        }
        auto it = outstanding.find(message.request_id);
        if (it == outstanding.end()) {
          ++wrong;  // a reply to a request this client never sent
          continue;
        }
        if (message.command != protocol::Command::kReply) {
          protocol::ErrorBody e;
          protocol::Decode(message.body, &e, &error);
          ADD_FAILURE() << "error reply: " << ErrorCodeName(e.code) << " " << e.message;
          ++errors;
          outstanding.erase(it);
          continue;
        }
        protocol::EmbedReply reply;
        ASSERT_TRUE(protocol::Decode(message.body, &reply, &error)) << error;
        ASSERT_EQ(reply.count, it->second.size());
        for (std::size_t i = 0; i < it->second.size(); ++i) {
          const auto got = std::span(reply.data).subspan(i * reply.dim, reply.dim);
          if (MaxAbsDiff(got, reference_.vectors[it->second[i]]) > 1e-4f) ++wrong;
        }
        ++served[reply.worker];
        outstanding.erase(it);
      }
    }
    // Anything still outstanding never got a reply. Then linger briefly to
    // catch duplicate replies that would arrive after the last one.
    missing += static_cast<int>(outstanding.size());
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, 300ms) > 0) ++duplicates;
    std::lock_guard lock(mu);
    for (const auto& [w, k] : served) served_by[w] += k;
  };

  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) threads.emplace_back(run_client, c);
  for (auto& t : threads) t.join();

  EXPECT_EQ(missing, 0);
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(wrong, 0);
  int total = 0;
  for (const auto& [w, k] : served_by) total += k;
  EXPECT_EQ(total, kClients * kPerClient);
  // Round robin spreads the load over both workers.
  ASSERT_EQ(served_by.size(), 2u);
  for (const auto& [w, k] : served_by) EXPECT_GT(k, total / 4) << w;

  // The router's books balance too.
  Client client(cluster.frontend());
  const auto status = client.Status();
  std::uint64_t completed = 0;
  for (const auto& w : status.workers) {
    completed += w.completed;
    EXPECT_EQ(w.in_flight, 0u) << w.id;
  }
  EXPECT_EQ(completed, static_cast<std::uint64_t>(kClients * kPerClient));
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
    ASSERT_TRUE(protocol::Decode((*received)->body, &body, &error)) << error;
    EXPECT_EQ(body.code, ErrorCode::kBadRequest) << body.message;
  }
  Client client(cluster.frontend());
  EXPECT_EQ(client.Embed("tiny", {"still alive"}).size(), 1u);
}

}  // namespace
}  // namespace ember::testing
