// Robustness: 10,000 malformed, truncated and oversized messages thrown at a
// running router (from a client and from an intruding "worker") and 10,000 at
// a running worker (from a fake router). Every message that deserves an
// answer gets exactly one, nothing crashes, and afterwards good requests
// still get vectors equal to the model's reference output.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <thread>
#include <zmq_addon.hpp>

#include "client/client.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "tests/cluster.h"
#include "tests/load_client.h"
#include "tests/malformed_messages.h"
#include "tests/temp_dir.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using protocol::Command;

constexpr int kMessages = 10'000;
constexpr int kOversized = 10;  // over max-message-bytes: ZeroMQ drops the sender

// Answers owed and received, by request id (id 0: answers to messages whose
// id could not be read, which may be many).
struct Tally {
  std::map<std::uint64_t, int> owed;
  std::map<std::uint64_t, int> got;
  std::map<std::string, int> kinds;  // "REPLY", or the error code, for the log
  int unreadable = 0;                // answers that are not ember messages
  int owed_total = 0, got_total = 0;

  void Owe(std::uint64_t id) { ++owed[id], ++owed_total; }
  // Records an answer on `socket`; returns false if nothing was waiting.
  bool Receive(zmq::socket_t& socket, bool routed) {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      return false;
    }
    std::span<zmq::message_t> parts(frames);
    if (routed) parts = parts.subspan(1);
    std::string error;
    const auto message = protocol::Decode(parts, &error);
    if (!message) {
      ++unreadable;
      return true;
    }
    if (message->command != Command::kReply && message->command != Command::kError) {
      return true;  // READY, HEARTBEAT from a worker: not answers
    }
    ++got[message->request_id], ++got_total;
    if (message->command == Command::kReply) {
      ++kinds["REPLY"];
    } else {
      protocol::ErrorBody body;
      if (!protocol::Decode(message->body(), &body, &error)) {
        ++unreadable;
      } else {
        ++kinds[std::string(ErrorCodeName(body.code))];
      }
    }
    return true;
  }
  std::string Summary() const {
    std::string s = "owed " + std::to_string(owed_total) + ", got " + std::to_string(got_total);
    for (const auto& [k, n] : kinds) s += ", " + k + " " + std::to_string(n);
    return s;
  }
};

void Poll(zmq::socket_t& socket, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, timeout);
}

void Send(zmq::socket_t& socket, const std::vector<std::string>& frames) {
  zmq::send_multipart(socket, ToMessages(frames));
}

// Whether a receiver decodes `frames` as an ember message, and as what.
std::optional<protocol::Message> AsReceiverSees(const std::vector<std::string>& frames) {
  auto messages = ToMessages(frames);
  std::string error;
  return protocol::Decode(messages, &error);
}

// Vectors from good requests after the barrage equal the reference.
void ExpectCorrectService(const std::string& frontend) {
  const Reference reference = LoadTinyReference();
  LoadOptions options;
  options.clients = 2;
  options.requests_per_client = 50;
  options.limit = 60s;
  const LoadResult load = RunLoad(frontend, reference, options);
  EXPECT_EQ(load.sent, 100);
  EXPECT_EQ(load.replies, 100);
  EXPECT_EQ(load.error_count(), 0);
  EXPECT_EQ(load.wrong, 0);
  EXPECT_EQ(load.missing, 0);
}

TEST(MalformedMessageTest, RouterAnswersEachMalformedMessageOnceAndKeepsServing) {
  ClusterOptions options;
  options.workers = 1;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms",          "200", "--max-text-bytes",    "4096",
                         "--max-texts-per-request", "16",  "--max-message-bytes", "1048576"};
  options.worker_args = {"--heartbeat-ms", "200"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.WaitForWorkers(1));
  const auto start = Clock::now();

  zmq::context_t context;
  zmq::socket_t client(context, zmq::socket_type::dealer);
  client.set(zmq::sockopt::linger, 0);
  client.connect(cluster.frontend());
  // An intruder on the backend: broken frames, bad READYs, forged results
  // for request ids that are really in flight on the real worker.
  zmq::socket_t intruder(context, zmq::socket_type::dealer);
  intruder.set(zmq::sockopt::linger, 0);
  intruder.set(zmq::sockopt::routing_id, "intruder");
  intruder.connect(cluster.backend());

  MalformedMessages gen(1, "tiny");
  protocol::ReadyBody decoy;
  decoy.device = "cpu";
  decoy.capacity = 4;
  protocol::ModelInfo decoy_model;
  decoy_model.name = "decoy";
  decoy.models = {decoy_model};
  protocol::EmbedReply forged;
  forged.model = "tiny";
  forged.worker = "intruder";
  forged.dim = 64;
  forged.count = 1;
  forged.data.assign(64, 42.0f);

  Tally tally;
  constexpr int kBackend = kMessages / 5;
  constexpr int kFrontend = kMessages - kBackend - kOversized;
  std::uint64_t next_id = 1;
  int frontend_sent = 0, backend_sent = 0;
  const auto limit = Clock::now() + 90s;
  while ((frontend_sent < kFrontend || tally.got_total < tally.owed_total) &&
         Clock::now() < limit) {
    // Keep at most 200 answers outstanding, so none is dropped at a full queue.
    while (frontend_sent < kFrontend && tally.owed_total - tally.got_total < 200) {
      const std::uint64_t id = next_id++;
      const auto frames = gen.ClientMessage(id);
      const auto seen = AsReceiverSees(frames);
      tally.Owe(seen ? seen->request_id : 0);
      Send(client, frames);
      ++frontend_sent;
      // Backend messages spread evenly among the frontend ones.
      while (backend_sent * kFrontend < frontend_sent * kBackend) {
        const std::uint64_t forged_id = 1 + gen.RequestBody().size() % 2000;
        std::vector<std::string> bad;
        switch (backend_sent % 5) {
          case 0:
            bad = gen.BrokenFrames(forged_id, gen.BrokenBody(protocol::Encode(forged)));
            break;
          case 1:
            bad = {std::string("EMBER\x01", 6), std::string(1, char(Command::kReady)),
                   std::string(8, '\0'),
                   backend_sent % 10 == 1 ? protocol::Encode(decoy)
                                          : gen.BrokenBody(protocol::Encode(decoy))};
            break;
          default: {
            auto encoded =
                protocol::Encode(backend_sent % 2 ? Command::kReply : Command::kError, forged_id,
                                 backend_sent % 3 ? protocol::Encode(forged)
                                                  : gen.BrokenBody(protocol::Encode(forged)));
            for (auto& f : encoded) bad.push_back(f.to_string());
          }
        }
        Send(intruder, bad);
        ++backend_sent;
      }
    }
    Poll(client, 20ms);
    while (tally.Receive(client, /*routed=*/false)) {
    }
    // Whatever the router tells the intruder (DISCONNECT, heartbeats) is dropped.
    std::vector<zmq::message_t> ignored;
    while (zmq::recv_multipart(intruder, std::back_inserter(ignored), zmq::recv_flags::dontwait)) {
      ignored.clear();
    }
  }
  protocol::SendDealt(intruder, Command::kDisconnect, 0, {});

  // Messages over max-message-bytes: ZeroMQ drops each sender's connection,
  // so there is no answer, and the router carries on.
  {
    std::vector<zmq::socket_t> big;
    protocol::EmbedRequest request;
    request.model = "tiny";
    request.inputs = {std::string(1'100'000, 'x')};
    for (int i = 0; i < kOversized; ++i) {
      big.emplace_back(context, zmq::socket_type::dealer);
      big.back().set(zmq::sockopt::linger, 0);
      big.back().connect(cluster.frontend());
      protocol::SendDealt(big.back(), Command::kRequest, next_id++, protocol::Encode(request));
    }
    std::this_thread::sleep_for(500ms);
    for (auto& s : big) {
      zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
      EXPECT_EQ(zmq::poll(&item, 1, 0ms), 0) << "an oversized message got an answer";
    }
  }
  const auto elapsed = Clock::now() - start;

  EXPECT_EQ(frontend_sent + backend_sent + kOversized, kMessages);
  EXPECT_EQ(tally.unreadable, 0);
  EXPECT_EQ(tally.got, tally.owed) << tally.Summary();
  EXPECT_GT(tally.kinds["BAD_REQUEST"], kFrontend / 2) << tally.Summary();
  std::printf("router: %d messages in %.1f s; %s\n", kMessages,
              std::chrono::duration<double>(elapsed).count(), tally.Summary().c_str());

  ASSERT_TRUE(cluster.router().running());
  ASSERT_TRUE(cluster.worker(0).running());
  Client status_client(cluster.frontend());
  const auto status = status_client.Status();
  ASSERT_EQ(status.workers.size(), 1u) << "the intruder must be gone";
  EXPECT_EQ(status.workers[0].id, "w1");
  ExpectCorrectService(cluster.frontend());
}

TEST(MalformedMessageTest, WorkerAnswersEachMalformedRequestOnceAndStaysCorrect) {
  // A fake router: the test binds the backend, the worker connects to it.
  const TempDir temp;
  const std::string dir = temp.path().string();
  const std::string endpoint = "ipc://" + dir + "/backend";
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::router_mandatory, 1);
  router.set(zmq::sockopt::sndhwm, 100'000);
  router.bind(endpoint);
  bool passed = false;
  struct Cleanup {
    std::string dir;
    const bool& passed;
    ~Cleanup() {
      if (!passed) {
        std::fprintf(stderr, "----- worker.log -----\n");
        std::system(("cat " + dir + "/worker.log >&2").c_str());
      }
    }
  } cleanup{dir, passed};
  Process worker(
      {WorkerBinary(), "--router", endpoint, "--id", "victim", "--threads", "1", "--model",
       "tiny=" + TinyModelDir() + "/model.pt", "--heartbeat-ms", "500", "--liveness", "10"},
      dir + "/worker.log");

  // Registration.
  bool ready = false;
  for (const auto until = Clock::now() + 60s; !ready && Clock::now() < until;) {
    Poll(router, 100ms);
    if (auto envelope = protocol::ReceiveRouted(router)) {
      ready = envelope->message && envelope->message->command == Command::kReady;
      if (ready) {
        EXPECT_EQ(envelope->peer, "victim");
        protocol::SendRouted(router, "victim", Command::kReady, envelope->message->request_id, {});
      }
    }
  }
  ASSERT_TRUE(ready) << "the worker never sent READY";
  const auto start = Clock::now();

  MalformedMessages gen(2, "tiny");
  Tally tally;
  std::uint64_t next_id = 1;
  int sent = 0;
  auto next_heartbeat = Clock::now();
  const auto limit = Clock::now() + 90s;
  auto route = [](std::vector<std::string> frames) {
    frames.insert(frames.begin(), "victim");
    return frames;
  };
  while ((sent < kMessages || tally.got_total < tally.owed_total) && Clock::now() < limit) {
    while (sent < kMessages && tally.owed_total - tally.got_total < 100) {
      const std::uint64_t id = next_id++;
      std::vector<std::string> frames;
      if (sent % 20 < 10) {  // well-framed REQUESTs with broken or invalid bodies
        for (auto& f : protocol::Encode(Command::kRequest, id, gen.RequestBody())) {
          frames.push_back(f.to_string());
        }
      } else if (sent % 20 < 16) {
        frames = gen.BrokenFrames(id, gen.RequestBody());
      } else {  // commands a worker does not answer, with any body
        const Command c = sent % 2 ? Command::kHeartbeat : Command::kReply;
        for (auto& f : protocol::Encode(c, id, gen.BrokenBody("\x80"))) {
          frames.push_back(f.to_string());
        }
      }
      const auto seen = AsReceiverSees(frames);
      if (seen && seen->command == Command::kRequest) tally.Owe(seen->request_id);
      ASSERT_TRUE(zmq::send_multipart(router, ToMessages(route(frames)), zmq::send_flags::dontwait))
          << "the worker is gone";
      ++sent;
    }
    if (Clock::now() >= next_heartbeat) {
      protocol::SendRouted(router, "victim", Command::kHeartbeat, 0, {});
      next_heartbeat = Clock::now() + 200ms;
    }
    Poll(router, 20ms);
    while (tally.Receive(router, /*routed=*/true)) {
    }
  }
  const auto elapsed = Clock::now() - start;
  EXPECT_EQ(sent, kMessages);
  EXPECT_EQ(tally.unreadable, 0);
  EXPECT_EQ(tally.got, tally.owed) << tally.Summary();
  std::printf("worker: %d messages in %.1f s; %s\n", kMessages,
              std::chrono::duration<double>(elapsed).count(), tally.Summary().c_str());
  ASSERT_TRUE(worker.running());

  // Good requests still get the model's exact vectors.
  const Reference reference = LoadTinyReference();
  std::map<std::uint64_t, std::size_t> asked;  // id -> reference text
  for (std::size_t i = 0; i < 100; ++i) {
    protocol::EmbedRequest request;
    request.model = "tiny";
    request.inputs = {reference.texts[i % reference.texts.size()]};
    const std::uint64_t id = next_id++;
    asked[id] = i % reference.texts.size();
    ASSERT_TRUE(
        protocol::SendRouted(router, "victim", Command::kRequest, id, protocol::Encode(request)));
  }
  int correct = 0;
  for (const auto until = Clock::now() + 30s; !asked.empty() && Clock::now() < until;) {
    Poll(router, 50ms);
    while (auto envelope = protocol::ReceiveRouted(router)) {
      if (!envelope->message || !asked.contains(envelope->message->request_id)) continue;
      const std::size_t text = asked[envelope->message->request_id];
      asked.erase(envelope->message->request_id);
      protocol::EmbedReply reply;
      std::string error;
      ASSERT_EQ(envelope->message->command, Command::kReply) << envelope->message->body();
      ASSERT_TRUE(protocol::Decode(envelope->message->body(), &reply, &error)) << error;
      ASSERT_EQ(reply.count, 1u);
      if (MaxAbsDiff(reply.data, reference.vectors[text]) < 1e-4f) ++correct;
    }
  }
  EXPECT_TRUE(asked.empty()) << asked.size() << " good requests unanswered";
  EXPECT_EQ(correct, 100);
  passed = !::testing::Test::HasFailure();
}

}  // namespace
}  // namespace ember::testing
