// ember-gateway end to end: a real router and worker (ember-tiny), a real
// gateway process, and curl as the HTTP client. The vectors that come back
// over HTTP (OpenAI float and base64, TEI) must equal the C++ client's for
// the same texts, and each failure must have its HTTP status and JSON shape.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "client/client.h"
#include "tests/cluster.h"
#include "tests/fakes/fake_frontend.h"
#include "tests/load_client.h"
#include "tests/temp_dir.h"

namespace ember::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An ember-gateway process on a free port, which it reports in its log.
class GatewayProcess {
 public:
  explicit GatewayProcess(const std::string& router, std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {EMBER_GATEWAY_BIN, "--listen", "127.0.0.1:0", "--router",
                                     router};
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<Process>(argv, log().string());
    const std::regex listening(R"(listening on (http://127\.0\.0\.1:[0-9]+))");
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline && process_->running()) {
      std::smatch match;
      const std::string text = ReadFile(log());
      if (std::regex_search(text, match, listening)) {
        url_ = match[1];
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
  }
  ~GatewayProcess() {
    process_.reset();
    if (::testing::Test::HasFailure()) {
      std::cerr << "----- gateway log -----\n" << ReadFile(log()) << "\n";
    }
  }

  // "" if the gateway never said where it listens.
  const std::string& url() const { return url_; }
  Process& process() { return *process_; }
  std::filesystem::path log() const { return dir_.path() / "gateway.log"; }
  const std::filesystem::path& dir() const { return dir_.path(); }

 private:
  TempDir dir_{"ember-gw"};
  std::unique_ptr<Process> process_;
  std::string url_;
};

struct HttpResult {
  int status = 0;  // 0: curl itself failed
  std::string body;
  json Json() const { return json::parse(body, nullptr, false); }
};

// One HTTP request with curl (bounded by --max-time). `body` empty: a GET.
// POSTs `body` (if any) declared as `content_type` (empty: no Content-Type header at all).
HttpResult Curl(const std::filesystem::path& scratch, const std::string& url,
                const std::string& body = "",
                const std::string& content_type = "application/json") {
  static std::atomic<int> counter{0};
  const std::string tag = std::to_string(counter++);
  const auto in = scratch / ("request-" + tag);
  const auto out = scratch / ("response-" + tag);
  std::string command = "curl -sS --max-time 30 -o '" + out.string() + "' -w '%{http_code}' ";
  if (!body.empty()) {
    std::ofstream(in, std::ios::binary) << body;
    command += "-H 'Content-Type:" + (content_type.empty() ? "" : " " + content_type) +
               "' --data-binary @'" + in.string() + "' ";
  }
  command += "'" + url + "'";
  HttpResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char code[16] = {};
  const std::size_t n = fread(code, 1, sizeof(code) - 1, pipe);
  pclose(pipe);
  result.status = std::atoi(std::string(code, n).c_str());
  result.body = ReadFile(out);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  return result;
}

// A TCP connection to the gateway at `url` ("http://127.0.0.1:PORT"), for what curl will not
// send: malformed requests, a client that leaves. Reads time out after 10 s.
class RawConnection {
 public:
  explicit RawConnection(const std::string& url) {
    const int port = std::stoi(url.substr(url.rfind(':') + 1));
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    timeval timeout{.tv_sec = 10, .tv_usec = 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }
  ~RawConnection() { close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything the gateway sends until it closes the connection (or 10 s pass).
  std::string ReadToEnd() {
    std::string out;
    char buffer[4096];
    for (;;) {
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return out;
      out.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::vector<float> Floats(const json& array) {
  std::vector<float> out;
  for (const json& x : array) out.push_back(x.get<float>());
  return out;
}

std::string DecodeBase64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) break;  // '=' padding
    bits = bits << 6 | static_cast<std::uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>(bits >> count & 0xff));
    }
  }
  return out;
}

class GatewayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ClusterOptions options;
    options.workers = 1;
    options.models = {"tiny=" + TinyModelDir() + "/model.pt"};
    cluster_ = std::make_unique<Cluster>(options);
    ready_ = cluster_->WaitForWorkers(1);
    gateway_ = std::make_unique<GatewayProcess>(
        cluster_->frontend(),
        std::vector<std::string>{"--default-model", "tiny", "--max-body-bytes", "65536"});
  }
  static void TearDownTestSuite() {
    gateway_.reset();
    cluster_.reset();
  }
  void SetUp() override {
    ASSERT_TRUE(ready_) << "the worker never registered";
    ASSERT_FALSE(gateway_->url().empty()) << "the gateway never listened";
  }

  static HttpResult Post(const std::string& path, const json& body) {
    return Curl(gateway_->dir(), gateway_->url() + path, body.dump());
  }
  static HttpResult PostRaw(const std::string& path, const std::string& body) {
    return Curl(gateway_->dir(), gateway_->url() + path, body);
  }
  static HttpResult PostAs(const std::string& path, const json& body,
                           const std::string& content_type) {
    return Curl(gateway_->dir(), gateway_->url() + path, body.dump(), content_type);
  }
  static HttpResult Get(const std::string& path) {
    return Curl(gateway_->dir(), gateway_->url() + path);
  }

  // What the C++ client gets for the same texts.
  Embeddings Direct(const std::vector<std::string>& texts) {
    Client client(cluster_->frontend());
    return client.Embed("tiny", texts);
  }

  static void ExpectOpenAiError(const HttpResult& result, int status, const std::string& code) {
    EXPECT_EQ(result.status, status) << result.body;
    const json body = result.Json();
    ASSERT_TRUE(body.is_object()) << result.body;
    ASSERT_TRUE(body.contains("error")) << result.body;
    EXPECT_EQ(body["error"]["code"], code) << result.body;
    EXPECT_TRUE(body["error"]["type"].is_string()) << result.body;
    EXPECT_FALSE(body["error"]["message"].get<std::string>().empty()) << result.body;
  }

  static std::unique_ptr<Cluster> cluster_;
  static std::unique_ptr<GatewayProcess> gateway_;
  static bool ready_;
  // The reference texts but the empty one, which HTTP refuses as TEI and OpenAI do
  // (EmptyTextsAre400NamingThem); the SDK still embeds it.
  static Reference NonEmpty(Reference all) {
    Reference out;
    for (size_t i = 0; i < all.texts.size(); ++i) {
      if (all.texts[i].empty()) continue;
      out.texts.push_back(std::move(all.texts[i]));
      out.vectors.push_back(std::move(all.vectors[i]));
    }
    return out;
  }
  Reference reference_ = NonEmpty(LoadTinyReference());
};
std::unique_ptr<Cluster> GatewayTest::cluster_;
std::unique_ptr<GatewayProcess> GatewayTest::gateway_;
bool GatewayTest::ready_ = false;

TEST_F(GatewayTest, OpenAiEmbeddingsEqualTheCppClients) {
  const HttpResult result = Post("/v1/embeddings", {{"model", "tiny"},
                                                    {"input", reference_.texts},
                                                    {"encoding_format", "float"},
                                                    {"user", "gateway_test"}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = result.Json();
  ASSERT_TRUE(body.is_object()) << result.body;
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_TRUE(body["usage"]["prompt_tokens"].is_number_integer());
  EXPECT_TRUE(body["usage"]["total_tokens"].is_number_integer());
  ASSERT_EQ(body["data"].size(), reference_.texts.size());

  const Embeddings direct = Direct(reference_.texts);
  // Issue 26: usage is the tokens the model ran, as the SDK reports them (not 0).
  ASSERT_EQ(direct.tokens().size(), reference_.texts.size());
  EXPECT_GT(direct.total_tokens(), reference_.texts.size());
  EXPECT_EQ(body["usage"]["prompt_tokens"], direct.total_tokens());
  EXPECT_EQ(body["usage"]["total_tokens"], direct.total_tokens());
  for (std::size_t i = 0; i < reference_.texts.size(); ++i) {
    const json& item = body["data"][i];
    EXPECT_EQ(item["object"], "embedding");
    EXPECT_EQ(item["index"], i);
    const std::vector<float> vector = Floats(item["embedding"]);
    ASSERT_EQ(vector.size(), direct.dim());
    EXPECT_LT(MaxAbsDiff(direct[i], vector), 1e-5f) << reference_.texts[i];
    EXPECT_LT(MaxAbsDiff(vector, reference_.vectors[i]), 1e-4f) << reference_.texts[i];
  }
}

TEST_F(GatewayTest, OneStringAndAnExplicitVersion) {
  const HttpResult result = Post("/v1/embeddings", {{"model", "tiny:1"}, {"input", "你好，世界"}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = result.Json();
  ASSERT_EQ(body["data"].size(), 1u);
  EXPECT_LT(MaxAbsDiff(Direct({"你好，世界"})[0], Floats(body["data"][0]["embedding"])), 1e-5f);

  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "tiny:9"}, {"input", "x"}}), 404,
                    "UNKNOWN_MODEL");
}

TEST_F(GatewayTest, Base64IsTheSameFloats) {
  const std::vector<std::string> texts = {reference_.texts[0], reference_.texts[1]};
  const HttpResult result =
      Post("/v1/embeddings", {{"model", "tiny"}, {"input", texts}, {"encoding_format", "base64"}});
  ASSERT_EQ(result.status, 200) << result.body;
  const json body = result.Json();
  const Embeddings direct = Direct(texts);
  ASSERT_EQ(body["data"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string bytes = DecodeBase64(body["data"][i]["embedding"].get<std::string>());
    ASSERT_EQ(bytes.size(), direct.dim() * sizeof(float));
    std::vector<float> vector(direct.dim());
    std::memcpy(vector.data(), bytes.data(), bytes.size());
    EXPECT_LT(MaxAbsDiff(direct[i], vector), 1e-6f);
  }
}

TEST_F(GatewayTest, MalformedRequestsAre400) {
  ExpectOpenAiError(PostRaw("/v1/embeddings", "{\"model\": \"tiny\", \"input\": [\"a\""), 400,
                    "BAD_REQUEST");
  ExpectOpenAiError(PostRaw("/v1/embeddings", "[1, 2]"), 400, "BAD_REQUEST");
  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "tiny"}}), 400, "BAD_REQUEST");
  ExpectOpenAiError(Post("/v1/embeddings", {{"input", "x"}}), 400, "BAD_REQUEST");
  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "tiny"}, {"input", json::array()}}), 400,
                    "BAD_REQUEST");
  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "tiny"}, {"input", {1, 2, 3}}}), 400,
                    "BAD_REQUEST");
  ExpectOpenAiError(
      Post("/v1/embeddings", {{"model", "tiny"}, {"input", "x"}, {"encoding_format", "hex"}}), 400,
      "BAD_REQUEST");
  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "tiny"}, {"input", "x"}, {"dimensions", 3}}),
                    400, "BAD_REQUEST");
  // Over --max-body-bytes: httplib refuses it before our handler runs.
  ExpectOpenAiError(
      Post("/v1/embeddings", {{"model", "tiny"}, {"input", std::string(70'000, 'x')}}), 413,
      "BAD_REQUEST");
  // Not HTTP at all, or a length that is not a number: 400 in the same JSON shape, and the
  // connection closed (what follows cannot be trusted).
  for (const std::string& request :
       {std::string("this is not http\r\n\r\n"),
        std::string("POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n")}) {
    RawConnection raw(gateway_->url());
    ASSERT_TRUE(raw.connected());
    ASSERT_TRUE(raw.Send(request));
    const std::string answer = raw.ReadToEnd();
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
    EXPECT_NE(answer.find("\"BAD_REQUEST\""), std::string::npos) << answer;
  }
  // And the gateway still serves.
  EXPECT_EQ(Post("/v1/embeddings", {{"model", "tiny"}, {"input", "x"}}).status, 200);
}

TEST_F(GatewayTest, UnknownModelIs404) {
  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "no-such-model"}, {"input", "x"}}), 404,
                    "UNKNOWN_MODEL");
  ExpectOpenAiError(Get("/v2/nothing"), 404, "BAD_REQUEST");
}

TEST_F(GatewayTest, EmptyTextsAre400NamingThem) {
  // As OpenAI and TEI: "" has nothing to embed or tokenize.
  const HttpResult openai = Post("/v1/embeddings", {{"model", "tiny"}, {"input", {"a", ""}}});
  ExpectOpenAiError(openai, 400, "BAD_REQUEST");
  EXPECT_NE(openai.body.find("'input'[1] is an empty string"), std::string::npos) << openai.body;
  ExpectOpenAiError(Post("/v1/embeddings", {{"model", "tiny"}, {"input", ""}}), 400, "BAD_REQUEST");
  for (const char* path : {"/embed", "/tokenize"}) {
    const HttpResult tei = Post(path, {{"inputs", ""}});
    EXPECT_EQ(tei.status, 400) << path << ": " << tei.body;
    EXPECT_NE(tei.body.find("'inputs' must not be an empty string"), std::string::npos) << tei.body;
  }
  // A text of spaces is not empty: it is the model's to tokenize.
  EXPECT_EQ(Post("/embed", {{"inputs", {"x", " "}}}).status, 200);
}

TEST_F(GatewayTest, BodyNotDeclaredJsonIs415) {
  const json body = {{"model", "tiny"}, {"input", "x"}, {"inputs", "x"}};
  const HttpResult text = PostAs("/v1/embeddings", body, "text/plain");
  ExpectOpenAiError(text, 415, "UNSUPPORTED_MEDIA_TYPE");
  EXPECT_NE(text.body.find("text/plain"), std::string::npos) << text.body;
  const HttpResult none = PostAs("/embed", body, "");
  EXPECT_EQ(none.status, 415) << none.body;
  EXPECT_TRUE(none.Json()["error"].is_string()) << none.body;  // TEI's error shape
  EXPECT_EQ(PostAs("/embed", body, "application/x-www-form-urlencoded").status, 415);
  // JSON by any spelling passes.
  EXPECT_EQ(PostAs("/embed", body, "Application/JSON; charset=utf-8").status, 200);
  EXPECT_EQ(PostAs("/embed", body, "application/vnd.api+json").status, 200);
}

TEST_F(GatewayTest, TeiEmbedEqualsTheCppClients) {
  const std::vector<std::string> texts = {reference_.texts[2], reference_.texts[3]};
  const Embeddings direct = Direct(texts);

  const HttpResult raw = Post("/embed", {{"inputs", texts}, {"normalize", false}});
  ASSERT_EQ(raw.status, 200) << raw.body;
  const json vectors = raw.Json();
  ASSERT_TRUE(vectors.is_array()) << raw.body;
  ASSERT_EQ(vectors.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_LT(MaxAbsDiff(direct[i], Floats(vectors[i])), 1e-5f);
  }

  // TEI normalizes by default; one string still gives a list of vectors.
  const HttpResult unit = Post("/embed", {{"inputs", texts[0]}});
  ASSERT_EQ(unit.status, 200) << unit.body;
  const json one = unit.Json();
  ASSERT_EQ(one.size(), 1u);
  double norm = 0;
  for (float x : Floats(one[0])) norm += double{x} * x;
  EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5);

  const HttpResult unknown = Post("/embed", {{"inputs", "x"}, {"model", "nope"}});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_TRUE(unknown.Json()["error"].is_string()) << unknown.body;
}

TEST_F(GatewayTest, HealthModelsAndMetrics) {
  const HttpResult health = Get("/health");
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(health.Json()["workers"], 1) << health.body;

  const HttpResult models = Get("/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  ASSERT_EQ(models.Json()["data"].size(), 1u) << models.body;
  EXPECT_EQ(models.Json()["data"][0]["id"], "tiny") << models.body;

  ASSERT_EQ(Post("/v1/embeddings", {{"model", "tiny"}, {"input", {"a", "b", "c"}}}).status, 200);
  const HttpResult metrics = Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(
      metrics.body.find("ember_gateway_requests_total{route=\"/v1/embeddings\",status=\"200\"}"),
      std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("ember_gateway_texts_total "), std::string::npos) << metrics.body;
}

// Handler threads never share a ZeroMQ socket: many concurrent requests all
// get their own texts' vectors back.
TEST_F(GatewayTest, ConcurrentRequestsGetTheirOwnVectors) {
  const Embeddings direct = Direct(reference_.texts);
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 5; ++k) {
        const std::size_t i = static_cast<std::size_t>(t * 5 + k) % reference_.texts.size();
        const HttpResult r =
            Post("/v1/embeddings", {{"model", "tiny"}, {"input", {reference_.texts[i]}}});
        const json body = r.Json();
        if (r.status == 200 && body["data"].size() == 1 &&
            MaxAbsDiff(direct[i], Floats(body["data"][0]["embedding"])) < 1e-5f) {
          ++good;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 30);
}

// A router without workers, and no router at all: /health says 503, and the
// gateway still shuts down cleanly on SIGTERM.
TEST(GatewayHealthTest, UnhealthyWithoutWorkersOrRouter) {
  ClusterOptions options;
  options.workers = 0;
  Cluster empty(options);
  GatewayProcess gateway(empty.frontend(), {"--health-timeout-ms", "500"});
  ASSERT_FALSE(gateway.url().empty());
  // Wait (bounded) for the router to answer at all.
  HttpResult health;
  for (int i = 0; i < 50; ++i) {
    health = Curl(gateway.dir(), gateway.url() + "/health");
    if (health.Json().value("reason", "") == "the router has no workers") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(health.status, 503) << health.body;
  EXPECT_EQ(health.Json()["reason"], "the router has no workers") << health.body;

  GatewayProcess orphan("ipc://" + (gateway.dir() / "nobody").string(),
                        {"--health-timeout-ms", "300", "--timeout-ms", "300"});
  ASSERT_FALSE(orphan.url().empty());
  const HttpResult nobody = Curl(orphan.dir(), orphan.url() + "/health");
  EXPECT_EQ(nobody.status, 503) << nobody.body;
  const HttpResult late = Curl(orphan.dir(), orphan.url() + "/v1/embeddings",
                               json{{"model", "tiny"}, {"input", "x"}}.dump());
  // Nothing to connect to: the SDK cannot send, so the request is UNAVAILABLE (503), not a
  // timeout: it never left the gateway.
  EXPECT_EQ(late.status, 503) << late.body;
  EXPECT_EQ(late.Json()["error"]["code"], "UNAVAILABLE") << late.body;

  const int status = orphan.process().Stop(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// The gateway against a router played by the test, which holds every request until released:
// what is in flight at once, and what happens to it, is then the test's to see.
class GatewayEventLoopTest : public ::testing::Test {
 protected:
  std::string Embeddings() const { return gateway_->url() + "/v1/embeddings"; }
  static std::string OneText() { return json{{"model", "m"}, {"input", "x"}}.dump(); }
  // Bounded wait until the router holds `count` requests.
  bool WaitForHeld(int count) {
    for (int i = 0; i < 2000 && router_.received() < count; ++i) std::this_thread::sleep_for(10ms);
    return router_.received() == count;
  }

  TempDir dir_{"ember-gw-loop"};
  const std::string endpoint_ = "ipc://" + (dir_.path() / "frontend").string();
  FakeRouter router_{endpoint_, Mode::kHoldUntilReleased};
  std::unique_ptr<GatewayProcess> gateway_;
};

// A request that waits on the cluster holds no thread: with one event loop, 64 requests are in
// flight at the router at once, and each gets its answer once the router gives it. (A gateway
// with a thread per request, as before, put one request in flight per thread.)
TEST_F(GatewayEventLoopTest, OneThreadHoldsEveryRequestInFlight) {
  gateway_ =
      std::make_unique<GatewayProcess>(endpoint_, std::vector<std::string>{"--threads", "1"});
  ASSERT_FALSE(gateway_->url().empty());
  constexpr int kRequests = 64;
  std::vector<HttpResult> results(kRequests);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] { results[i] = Curl(gateway_->dir(), Embeddings(), OneText()); });
  }
  EXPECT_TRUE(WaitForHeld(kRequests))
      << router_.received() << " of " << kRequests << " requests reached the router at once";
  router_.Release();
  for (auto& client : clients) client.join();
  for (const HttpResult& result : results) {
    EXPECT_EQ(result.status, 200) << result.body;
    EXPECT_EQ(result.Json()["data"][0]["embedding"], json::array({1.0})) << result.body;
  }
}

// A client that leaves before its answer (its connection closed while the router holds its
// request) costs nobody else anything: the late answer goes nowhere, and the gateway serves on.
TEST_F(GatewayEventLoopTest, AClientThatLeavesHurtsNoOne) {
  gateway_ = std::make_unique<GatewayProcess>(endpoint_);
  ASSERT_FALSE(gateway_->url().empty());
  {
    RawConnection raw(gateway_->url());
    ASSERT_TRUE(raw.connected());
    const std::string body = OneText();
    ASSERT_TRUE(
        raw.Send("POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 "application/json\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body));
    ASSERT_TRUE(WaitForHeld(1));
  }  // gone
  router_.Release();
  const HttpResult next = Curl(gateway_->dir(), Embeddings(), OneText());
  EXPECT_EQ(next.status, 200) << next.body;
  EXPECT_TRUE(gateway_->process().running());
}

// SIGTERM stops the gateway taking connections, but every request it accepted still gets its
// answer before it exits (bounded by the requests' deadline).
TEST_F(GatewayEventLoopTest, ShutdownAnswersWhatIsInFlight) {
  gateway_ = std::make_unique<GatewayProcess>(endpoint_,
                                              std::vector<std::string>{"--timeout-ms", "20000"});
  ASSERT_FALSE(gateway_->url().empty());
  constexpr int kRequests = 8;
  std::vector<HttpResult> results(kRequests);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] { results[i] = Curl(gateway_->dir(), Embeddings(), OneText()); });
  }
  ASSERT_TRUE(WaitForHeld(kRequests));
  gateway_->process().Signal(SIGTERM);
  bool refusing = false;  // bounded: until the listening socket is closed
  for (int i = 0; i < 500 && !refusing; ++i) {
    refusing = !RawConnection(gateway_->url()).connected();
    if (!refusing) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(refusing) << "the gateway still takes connections after SIGTERM";
  router_.Release();
  for (auto& client : clients) client.join();
  for (const HttpResult& result : results) EXPECT_EQ(result.status, 200) << result.body;
  const int status = gateway_->process().Stop(10s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace ember::testing
