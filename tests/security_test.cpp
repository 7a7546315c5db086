// CURVE authentication (docs/security.md): a router with CURVE on admits
// only allow-listed keys, keeps worker and client keys apart, and keeps
// model management to admin keys. Real processes over ipc://.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <msgpack.hpp>
#include <thread>
#include <zmq_addon.hpp>

#include "client/client.h"
#include "common/curve.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "router/zap_handler.h"
#include "tests/cluster.h"
#include "tests/load_client.h"
#include "tests/prometheus_scrape.h"
#include "tests/temp_dir.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// A directory of key pairs, and allow-list directories holding their .pub
// files, removed at the end.
class Keys {
 public:
  Keys() {
    for (const char* name : {"router", "worker", "client", "admin", "stranger"}) {
      curve::WriteKeyFiles(curve::Generate(), dir() / name);
    }
    for (const auto& [list, key] : {std::pair{"clients", "client"}, std::pair{"admins", "admin"},
                                    std::pair{"workers", "worker"}}) {
      fs::create_directory(dir() / list);
      fs::copy_file(Pub(key), dir() / list / (std::string(key) + ".pub"));
    }
  }
  std::string Key(const std::string& name) const { return (dir() / (name + ".key")).string(); }
  std::string Pub(const std::string& name) const { return (dir() / (name + ".pub")).string(); }
  std::string List(const std::string& name) const { return (dir() / name).string(); }
  // What a client (or worker) called `name` uses to reach the router.
  curve::ClientKeys As(const std::string& name) const {
    return curve::ClientKeys::Load(Key(name), Pub("router"));
  }
  const fs::path& dir() const { return temp_.path(); }

 private:
  TempDir temp_{"ember-keys"};
};

ClusterOptions SecureCluster(const Keys& keys) {
  ClusterOptions options;
  options.workers = 1;
  options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
  options.router_args = {"--heartbeat-ms", "200",
                         "--curve-key",    keys.Key("router"),
                         "--client-keys",  keys.List("clients"),
                         "--admin-keys",   keys.List("admins"),
                         "--worker-keys",  keys.List("workers")};
  options.worker_args = {"--heartbeat-ms",     "200",
                         "--curve-key",        keys.Key("worker"),
                         "--curve-server-key", keys.Pub("router")};
  options.client_curve = keys.As("admin");
  return options;
}

// Sends CONTROL `op` on a fresh connection with `keys`; returns "REPLY", an
// error code name, or "NO REPLY" after `timeout`.
std::string Control(const std::string& frontend, const curve::ClientKeys& keys,
                    const std::string& op, std::chrono::milliseconds timeout = 5s) {
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  curve::MakeClient(socket, keys);
  socket.connect(frontend);
  // Written by hand, so that an op no ControlOp names can be sent too.
  msgpack::sbuffer request;
  msgpack::packer<msgpack::sbuffer> pk(request);
  pk.pack_map(2);
  pk.pack(std::string("op"));
  pk.pack(op);
  pk.pack(std::string("model"));
  pk.pack(std::string("tiny"));
  protocol::SendDealt(socket, protocol::Command::kControl, 1,
                      std::string_view(request.data(), request.size()));
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return "NO REPLY";
  std::string error;
  auto received = protocol::ReceiveDealt(socket, &error);
  if (!received || !*received) return "MALFORMED: " + error;
  if ((*received)->command == protocol::Command::kReply) return "REPLY";
  protocol::ErrorBody body;
  if (!protocol::Decode((*received)->body(), &body, &error)) return "MALFORMED: " + error;
  return std::string(ErrorCodeName(body.code));
}

std::string CodeOf(auto&& call) {
  try {
    call();
    return "OK";
  } catch (const Error& e) {
    return std::string(ErrorCodeName(e.code()));
  }
}

TEST(SecurityTest, KeyFilesRoundTripAndStaySecret) {
  ASSERT_TRUE(curve::Available()) << "libzmq without CURVE (libsodium)";
  Keys keys;
  const curve::KeyPair pair = curve::LoadKeyFile(keys.Key("client"), /*need_secret=*/true);
  EXPECT_EQ(pair.public_key.size(), curve::kZ85KeyLength);
  EXPECT_EQ(pair.secret_key.size(), curve::kZ85KeyLength);
  EXPECT_EQ(curve::LoadKeyFile(keys.Pub("client"), false).public_key, pair.public_key);
  EXPECT_TRUE(curve::LoadKeyFile(keys.Pub("client"), false).secret_key.empty());
  EXPECT_THROW(curve::LoadKeyFile(keys.Pub("client"), /*need_secret=*/true), std::runtime_error);
  struct stat st {};
  ASSERT_EQ(::stat(keys.Key("client").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "a secret key must be private";
  EXPECT_THROW(curve::WriteKeyFiles(curve::Generate(), keys.dir() / "client"), std::runtime_error)
      << "an existing key must not be overwritten";
  std::ofstream(keys.dir() / "bad.pub") << "public-key = \"too short\"\n";
  EXPECT_THROW(curve::LoadKeyFile(keys.dir() / "bad.pub", false), std::runtime_error);
  EXPECT_EQ(curve::LoadPublicKeys(keys.List("clients")), std::set<std::string>{pair.public_key});
}

TEST(SecurityTest, ZapKeepsRolesApart) {
  router::AllowLists lists{{"C"}, {"A"}, {"W"}};
  EXPECT_EQ(router::Authorize(lists, "frontend", "CURVE", "C"), "client");
  EXPECT_EQ(router::Authorize(lists, "frontend", "CURVE", "A"), "admin");
  EXPECT_EQ(router::Authorize(lists, "backend", "CURVE", "W"), "worker");
  EXPECT_EQ(router::Authorize(lists, "frontend", "CURVE", "W"), "") << "a worker is no client";
  EXPECT_EQ(router::Authorize(lists, "backend", "CURVE", "C"), "") << "a client is no worker";
  EXPECT_EQ(router::Authorize(lists, "backend", "CURVE", "A"), "") << "an admin is no worker";
  EXPECT_EQ(router::Authorize(lists, "frontend", "CURVE", "X"), "");
  EXPECT_EQ(router::Authorize(lists, "frontend", "NULL", ""), "");
  EXPECT_EQ(router::Authorize(lists, "other", "CURVE", "A"), "");
}

TEST(SecurityTest, OnlyAllowedClientsGetReplies) {
  Keys keys;
  Cluster cluster(SecureCluster(keys));
  ASSERT_TRUE(cluster.WaitForWorkers(1, 30s));
  const Reference reference = LoadTinyReference();

  Client allowed(cluster.frontend(), keys.As("client"));
  const Embeddings e = allowed.Embed("tiny", {reference.texts[0], reference.texts[3]});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_LT(MaxAbsDiff(e[0], reference.vectors[0]), 1e-4f);
  EXPECT_LT(MaxAbsDiff(e[1], reference.vectors[3]), 1e-4f);
  const std::uint64_t requests_before = allowed.Status().requests;

  EmbedOptions quick;
  quick.timeout = 1s;
  // A refused key gets no reply at all: its handshake never completes, so the SDK (which sends
  // only on an open connection) cannot even send, and reports UNAVAILABLE itself.
  Client stranger(cluster.frontend(), keys.As("stranger"));
  EXPECT_EQ(CodeOf([&] { stranger.Embed("tiny", {"let me in"}, quick); }), "UNAVAILABLE")
      << "an unknown key must get no reply at all";
  Client plain(cluster.frontend(), curve::ClientKeys{});
  EXPECT_EQ(CodeOf([&] { plain.Embed("tiny", {"no key"}, quick); }), "UNAVAILABLE");
  // A worker's key is not a client's.
  Client worker_key(cluster.frontend(), keys.As("worker"));
  EXPECT_EQ(CodeOf([&] { worker_key.Embed("tiny", {"wrong role"}, quick); }), "UNAVAILABLE");
  EXPECT_EQ(allowed.Status().requests, requests_before) << "refused connections reach nothing";

  // The allowed client is still served, and correctly.
  const Embeddings again = allowed.Embed("tiny", {reference.texts[5]});
  EXPECT_LT(MaxAbsDiff(again[0], reference.vectors[5]), 1e-4f);
}

TEST(SecurityTest, UnknownWorkersNeverRegister) {
  Keys keys;
  ClusterOptions options = SecureCluster(keys);
  const int metrics_port = FreePort();
  options.router_args.insert(options.router_args.end(),
                             {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  Cluster cluster(std::move(options));
  ASSERT_TRUE(cluster.WaitForWorkers(1, 30s));
  const auto refused_on = [&](const std::string& socket) {
    return Sample(Scrape(metrics_port),
                  "ember_router_auth_refused_total{socket=\"" + socket + "\"}")
        .value_or(-1);
  };
  ASSERT_EQ(refused_on("backend"), 0) << "the legitimate worker was refused on its way in";
  // A stranger's key, and a client's key (allowed on the frontend only),
  // each offering a model nobody else serves.
  const std::string model = "secret=" + TinyModelDir() + "/model.pt";
  std::vector<std::unique_ptr<Process>> intruders;
  for (const std::string name : {"stranger", "client"}) {
    intruders.push_back(std::make_unique<Process>(
        std::vector<std::string>{WorkerBinary(), "--router", cluster.backend(), "--id", name,
                                 "--threads", "1", "--model", model, "--heartbeat-ms", "200",
                                 "--curve-key", keys.Key(name), "--curve-server-key",
                                 keys.Pub("router")},
        (keys.dir() / (name + "-worker.log")).string()));
  }
  // Until both intruders have reached the handshake (at least one refusal each; they retry)
  // and for a while after, nobody but w1 may be registered.
  Client admin(cluster.frontend(), keys.As("admin"));
  double refused = 0;
  for (int i = 0; i < 150 && refused < 4; ++i) {
    std::this_thread::sleep_for(200ms);
    for (const auto& w : admin.Status().workers) ASSERT_EQ(w.id, "w1") << "an intruder registered";
    refused = refused_on("backend");
  }
  EXPECT_GE(refused, 4) << "the intruders never reached the handshake (or did not retry), so "
                           "this proved nothing";
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(200ms);
    for (const auto& w : admin.Status().workers) ASSERT_EQ(w.id, "w1") << "an intruder registered";
  }
  // Each intruder's key was refused by name (the router logs the key it refused).
  const std::string router_log = cluster.RouterLog();
  for (const std::string name : {"stranger", "client"}) {
    const std::string pub = curve::LoadKeyFile(keys.Pub(name), /*need_secret=*/false).public_key;
    EXPECT_NE(router_log.find("domain backend, key " + pub), std::string::npos)
        << name << "'s key was never refused";
  }
  EXPECT_EQ(refused_on("frontend"), 0);
  for (auto& p : intruders) EXPECT_TRUE(p->running()) << "the intruders kept trying";
  const std::string code = CodeOf([&] { admin.Embed("secret", {"x"}, {.timeout = 2s}); });
  EXPECT_TRUE(code == "UNKNOWN_MODEL" || code == "UNAVAILABLE") << code;
  EXPECT_EQ(admin.Embed("tiny", {"still served"}).worker(), "w1");
  // A worker that never got through may block on its goodbye (DISCONNECT)
  // at SIGTERM; do not wait for that.
  for (auto& p : intruders) p->Signal(SIGKILL);
}

TEST(SecurityTest, ModelManagementNeedsAnAdminKey) {
  Keys keys;
  Cluster cluster(SecureCluster(keys));
  ASSERT_TRUE(cluster.WaitForWorkers(1, 30s));
  const curve::ClientKeys client = keys.As("client"), admin = keys.As("admin");
  // Anyone admitted may look.
  EXPECT_EQ(Control(cluster.frontend(), client, "status"), "REPLY");
  // Only an admin may change the cluster.
  EXPECT_EQ(Control(cluster.frontend(), client, "load"), "UNAUTHORIZED");
  EXPECT_EQ(Control(cluster.frontend(), client, "unload"), "UNAUTHORIZED");
  EXPECT_EQ(Control(cluster.frontend(), client, "no-such-op"), "UNAUTHORIZED");
  EXPECT_EQ(Control(cluster.frontend(), admin, "status"), "REPLY");
  // The admin passes the check; the op itself is then judged on its merits.
  EXPECT_EQ(Control(cluster.frontend(), admin, "no-such-op"), "BAD_REQUEST");
  // A stranger gets nothing at all, not even UNAUTHORIZED.
  EXPECT_EQ(Control(cluster.frontend(), keys.As("stranger"), "load", 1s), "NO REPLY");
}

}  // namespace
}  // namespace ember::testing
