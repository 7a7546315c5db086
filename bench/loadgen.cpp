// ember-loadgen: drives a running ember router and reports throughput,
// latency percentiles, typed errors and how the replies spread over workers
// (in the manner of Triton's perf_analyzer).
//
//   closed loop:  ember-loadgen --router ipc:///tmp/x/frontend --model tiny --concurrency 8
//   open loop:    ember-loadgen --router ... --model tiny --qps 500 --duration-s 20
//   HTTP:         ember-loadgen --http http://127.0.0.1:8080 --model tiny --concurrency 64
//
// HTTP: the gateway's OpenAI API (POST /v1/embeddings, base64 vectors as the official
// `openai` client asks for them), closed loop, one keep-alive connection per client thread
// and one request in flight on each (HTTP/1.1 has no pipelining).
//
// Closed loop: `concurrency` client threads, each with its own DEALER socket and
// `window` requests in flight; latency runs from the send.
// Open loop: Poisson arrivals at `qps` (exponential gaps from a seeded RNG),
// split over `connections` sender threads, each owning one DEALER socket and an
// independent Poisson stream of rate qps/connections (their union is Poisson at
// qps). Requests go out on schedule whether or not replies came back, and
// latency runs from the *scheduled* send time, so a generator or cluster that
// falls behind shows up as latency instead of being hidden (coordinated
// omission).
//
// Only requests scheduled inside the measurement window (after the warm-up)
// count. Each of them ends as exactly one of: reply, typed error, or missing
// (no answer within timeout + 1 s after the window closed). The run always
// ends by warmup + duration + timeout + 1 s (plus thread start/stop).
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/error_code.h"
#include "common/messages.h"
#include "common/protocol.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Varied inputs: short and long, English and Chinese, some mixed.
const std::vector<std::string> kBuiltinTexts = {
    "hello world",
    "你好，世界",
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map text to vectors.",
    "今天天气很好。",
    "How do I reset my password?",
    "我想预订明天下午两点的会议室。",
    "A cat sat on the mat and watched the rain fall on the garden all afternoon.",
    "机器学习模型需要大量的数据来训练。",
    "Where is the nearest train station?",
    "这家餐厅的菜很好吃，但是价格有点贵。",
    "Please summarise the quarterly report in three sentences.",
    "深度学习是机器学习的一个分支，它使用多层神经网络从数据中学习表示。",
    "Shipping was fast and the package arrived in perfect condition.",
    "北京是中国的首都，也是一座历史悠久的城市。",
    "yes",
    "好",
    "What is the difference between a process and a thread in an operating system?",
    "请把这段文字翻译成英文。",
    "The meeting has been moved to Thursday at 10 am in room 4B.",
    "他每天早上六点起床，然后去公园跑步。",
    "Vector search finds the documents whose embeddings are closest to the query.",
    "我们需要在下周五之前完成这个项目的第一阶段。",
    "Can you recommend a good book about the history of mathematics?",
    "上海的夜景非常漂亮。",
    "Error 503: the service is temporarily unavailable, please try again later.",
    "这个软件的新版本修复了很多错误，并且运行速度更快了。",
    "She opened the window, took a deep breath, and decided that today would be different.",
    "人工智能正在改变我们的生活方式。",
    "Latency matters more than throughput for interactive search.",
    "春眠不觉晓，处处闻啼鸟。",
    "The committee will review all applications received before the end of the month and "
    "notify the successful candidates by email.",
    "我的手机没电了，可以借用一下你的充电器吗？",
    "Batching requests improves GPU utilisation.",
    "请问去机场怎么走？",
    "Refunds are processed within five business days after we receive the returned item.",
    "长江是亚洲最长的河流，全长约六千三百公里，流经中国的十一个省、自治区和直辖市。",
    "I love this song!",
    "会议记录已经发到大家的邮箱了，请查收。",
    "In 1969, Apollo 11 landed on the Moon, and Neil Armstrong became the first person to walk "
    "on its surface.",
    "这本书讲述了一个普通人如何通过努力改变自己命运的故事。",
    "Is this product compatible with older versions of the operating system?",
    "周末我们一起去爬山吧。",
    "The router balances requests across workers according to their measured response times.",
    "数据中心的能耗问题越来越受到关注。",
    "Thanks!",
    "Large language models can answer questions, write code, and summarise long documents, but "
    "they can also make confident mistakes, so their output should be checked carefully before "
    "it is used in production systems or shared with customers who depend on it.",
    "在这个快速发展的时代，终身学习变得越来越重要。",
    "Mixed input: 向量检索 (vector retrieval) with ember 嵌入服务.",
    "The weather forecast says it will rain heavily tomorrow, so the outdoor concert has been "
    "postponed until next Saturday evening.",
};

struct Config {
  std::string router;                // one endpoint, or several comma-separated
  std::vector<std::string> routers;  // `router` split: client i uses routers[i % size]
  std::string http;                  // the gateway's base URL: HTTP mode
  std::string model;
  int texts_per_request = 1;
  double duration_s = 10;
  double warmup_s = 2;
  std::uint32_t timeout_ms = 5000;
  int concurrency = 1;
  int window = 1;
  double qps = 0;  // > 0: open loop
  int connections = 2;
  std::uint64_t seed = 1;
  std::string texts_file;
  std::string json_file;
  bool quiet = false;
  bool router_status = true;
  // >= 0: each text is a repeat (one of the texts, cached after warmup) with
  // this probability, else a text never sent before (a cache miss).
  double hit_rate = -1;
};

// What one thread saw of the requests scheduled in the measurement window.
struct Tally {
  std::uint64_t sent = 0;
  std::uint64_t replies = 0;
  std::uint64_t texts = 0;  // texts embedded in replies
  std::uint64_t missing = 0;
  std::uint64_t foreign = 0;                    // answers to unknown ids (duplicates, bugs)
  std::uint64_t bad_replies = 0;                // undecodable frames or bodies, wrong vector count
  std::map<std::string, std::uint64_t> errors;  // code name -> count
  std::map<std::string, std::vector<double>> worker_latency;  // worker -> latencies (ms)
  std::vector<double> latency_ms;                             // successful replies
  std::map<std::uint32_t, std::uint64_t> batch_sizes;         // worker batch size -> replies
  double max_send_lag_ms = 0;  // open loop: how late a send left versus its schedule
  std::uint64_t warmup_sent = 0;

  void Merge(Tally&& o) {
    sent += o.sent;
    replies += o.replies;
    texts += o.texts;
    missing += o.missing;
    foreign += o.foreign;
    bad_replies += o.bad_replies;
    for (auto& [k, v] : o.errors) errors[k] += v;
    for (auto& [k, v] : o.worker_latency) {
      auto& dst = worker_latency[k];
      dst.insert(dst.end(), v.begin(), v.end());
    }
    latency_ms.insert(latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
    for (auto& [k, v] : o.batch_sizes) batch_sizes[k] += v;
    max_send_lag_ms = std::max(max_send_lag_ms, o.max_send_lag_ms);
    warmup_sent += o.warmup_sent;
  }
};

struct Outstanding {
  Clock::time_point start;  // send time (closed loop) or scheduled time (open loop)
  std::uint32_t texts = 0;
  bool measured = false;
};

struct Window {
  Clock::time_point begin;  // measurement starts (end of warm-up)
  Clock::time_point end;    // no sends from here on
  Clock::time_point drain;  // give up on answers from here on
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// One thread's DEALER socket, its requests in flight and what it counted.
class Connection {
 public:
  Connection(zmq::context_t& context, const Config& config, const std::vector<std::string>& texts,
             std::uint64_t seed, int index)
      : config_(config), texts_(texts), socket_(context, zmq::socket_type::dealer), rng_(seed) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::sndhwm, 0);
    socket_.set(zmq::sockopt::rcvhwm, 0);
    socket_.connect(config.routers[static_cast<std::size_t>(index) % config.routers.size()]);
  }

  // Sends one request; `start` is when its latency starts counting.
  void Send(Clock::time_point start, const Window& window) {
    ember::protocol::EmbedRequest request;
    request.model = config_.model;
    request.timeout_ms = config_.timeout_ms;
    std::uniform_int_distribution<std::size_t> pick(0, texts_.size() - 1);
    std::uniform_real_distribution<double> coin(0, 1);
    for (int i = 0; i < config_.texts_per_request; ++i) {
      std::string text = texts_[pick(rng_)];
      if (config_.hit_rate >= 0 && coin(rng_) >= config_.hit_rate) {
        text += " #" + std::to_string(rng_()) + "-" + std::to_string(next_id_);  // never seen
      }
      request.inputs.push_back(std::move(text));
    }
    const std::uint64_t id = next_id_++;
    const bool measured = start >= window.begin && start < window.end;
    outstanding_[id] = {start, static_cast<std::uint32_t>(request.inputs.size()), measured};
    if (measured) {
      ++tally_.sent;
    } else {
      ++tally_.warmup_sent;
    }
    ember::protocol::SendDealt(socket_, ember::protocol::Command::kRequest, id,
                               ember::protocol::Encode(request));
  }

  // Waits up to `timeout` for answers and handles all that are waiting.
  // Returns how many requests were answered.
  int Receive(std::chrono::milliseconds timeout) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) <= 0) return 0;
    int answered = 0;
    std::string error;
    while (auto received = ember::protocol::ReceiveDealt(socket_, &error)) {
      const auto now = Clock::now();
      if (!*received) {
        ++tally_.bad_replies;  // malformed frames: cannot tell which request
        continue;
      }
      const auto& message = **received;
      auto it = outstanding_.find(message.request_id);
      if (it == outstanding_.end()) {
        ++tally_.foreign;
        continue;
      }
      const Outstanding o = it->second;
      outstanding_.erase(it);
      ++answered;
      if (!o.measured) continue;
      if (message.command == ember::protocol::Command::kError) {
        ember::protocol::ErrorBody body;
        if (ember::protocol::Decode(message.body(), &body, &error)) {
          ++tally_.errors[std::string(ember::ErrorCodeName(body.code))];
        } else {
          ++tally_.errors["BAD_ERROR_BODY"];
        }
        continue;
      }
      ember::protocol::EmbedReply reply;
      if (message.command != ember::protocol::Command::kReply ||
          !ember::protocol::Decode(message.body(), &reply, &error) || reply.count != o.texts) {
        ++tally_.errors["BAD_REPLY"];
        continue;
      }
      const double ms = Ms(now - o.start);
      ++tally_.replies;
      tally_.texts += reply.count;
      tally_.latency_ms.push_back(ms);
      tally_.worker_latency[reply.worker].push_back(ms);
      ++tally_.batch_sizes[reply.batch_size];
    }
    return answered;
  }

  std::size_t in_flight() const { return outstanding_.size(); }

  // After the drain deadline: what is still outstanding and measured is missing.
  Tally Finish() {
    for (const auto& [id, o] : outstanding_) {
      if (o.measured) ++tally_.missing;
    }
    outstanding_.clear();
    return std::move(tally_);
  }

  Tally& tally() { return tally_; }

 private:
  const Config& config_;
  const std::vector<std::string>& texts_;
  zmq::socket_t socket_;
  std::mt19937_64 rng_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Outstanding> outstanding_;
  Tally tally_;
};

std::chrono::milliseconds Until(Clock::time_point t) {
  const auto d = t - Clock::now();
  if (d <= Clock::duration::zero()) return 0ms;
  return std::chrono::ceil<std::chrono::milliseconds>(d);
}

// Closed loop: keep `window` requests in flight until the window ends, then drain.
Tally RunClosed(zmq::context_t& context, const Config& config,
                const std::vector<std::string>& texts, const Window& window, int index) {
  Connection c(context, config, texts, config.seed * 1'000'003 + static_cast<std::uint64_t>(index),
               index);
  while (Clock::now() < window.end) {
    while (c.in_flight() < static_cast<std::size_t>(config.window)) {
      const auto now = Clock::now();
      if (now >= window.end) break;
      c.Send(now, window);
    }
    c.Receive(std::min<std::chrono::milliseconds>(100ms, Until(window.end)));
  }
  while (c.in_flight() > 0 && Clock::now() < window.drain) {
    c.Receive(std::min<std::chrono::milliseconds>(100ms, Until(window.drain)));
  }
  return c.Finish();
}

// Closed loop over HTTP: one keep-alive connection, one request in flight.
Tally RunHttp(const Config& config, const std::vector<std::string>& texts, const Window& window,
              int index) {
  Tally tally;
  httplib::Client client(config.http);
  client.set_keep_alive(true);
  // httplib writes a request's headers and body apart: without TCP_NODELAY, Nagle holds the
  // body until the gateway's delayed ACK (~40 ms) and every request waits for it.
  client.set_tcp_nodelay(true);
  const auto timeout = std::chrono::milliseconds(config.timeout_ms) + 1s;
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  std::mt19937_64 rng(config.seed * 1'000'003 + static_cast<std::uint64_t>(index));
  std::uniform_int_distribution<std::size_t> pick(0, texts.size() - 1);
  while (Clock::now() < window.end) {
    nlohmann::json inputs = nlohmann::json::array();
    for (int i = 0; i < config.texts_per_request; ++i) inputs.push_back(texts[pick(rng)]);
    const std::string body =
        nlohmann::json{{"model", config.model}, {"input", inputs}, {"encoding_format", "base64"}}
            .dump();
    const auto start = Clock::now();
    const bool measured = start >= window.begin;
    if (measured) {
      ++tally.sent;
    } else {
      ++tally.warmup_sent;
    }
    const auto result = client.Post("/v1/embeddings", body, "application/json");
    if (!measured) continue;
    if (!result) {
      ++tally.errors["HTTP_" + httplib::to_string(result.error())];
      continue;
    }
    if (result->status != 200) {
      ++tally.errors["HTTP_" + std::to_string(result->status)];
      continue;
    }
    const auto reply = nlohmann::json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded() || !reply.contains("data") ||
        reply["data"].size() != static_cast<std::size_t>(config.texts_per_request)) {
      ++tally.errors["BAD_REPLY"];
      continue;
    }
    ++tally.replies;
    tally.texts += static_cast<std::uint64_t>(config.texts_per_request);
    tally.latency_ms.push_back(Ms(Clock::now() - start));
  }
  return tally;
}

// Open loop: Poisson arrivals of rate `qps`, sent on schedule.
Tally RunOpen(zmq::context_t& context, const Config& config, const std::vector<std::string>& texts,
              Clock::time_point t0, const Window& window, int index, double qps) {
  const std::uint64_t seed = config.seed * 1'000'003 + static_cast<std::uint64_t>(index);
  Connection c(context, config, texts, seed ^ 0x5eed, index);
  std::mt19937_64 arrivals(seed);
  std::exponential_distribution<double> gap_s(qps);
  auto next_gap = [&] {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(gap_s(arrivals)));
  };
  Clock::time_point next = t0 + next_gap();
  double max_lag = 0;
  while (next < window.end) {
    const auto now = Clock::now();
    if (now >= next) {
      if (next >= window.begin) max_lag = std::max(max_lag, Ms(now - next));
      c.Send(next, window);  // latency counts from the schedule, not from now
      next += next_gap();
      continue;
    }
    const auto wait = next - now;
    if (wait >= 1ms) {
      c.Receive(std::chrono::duration_cast<std::chrono::milliseconds>(wait));
    } else {
      c.Receive(0ms);
      std::this_thread::sleep_until(next);
    }
  }
  while (c.in_flight() > 0 && Clock::now() < window.drain) {
    c.Receive(std::min<std::chrono::milliseconds>(100ms, Until(window.drain)));
  }
  Tally t = c.Finish();
  t.max_send_lag_ms = max_lag;
  return t;
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Nearest rank.
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

nlohmann::json LatencyJson(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {{"p50", Percentile(v, 0.50)},
          {"p90", Percentile(v, 0.90)},
          {"p99", Percentile(v, 0.99)},
          {"max", v.empty() ? 0.0 : v.back()},
          {"mean", v.empty() ? 0.0 : sum / static_cast<double>(v.size())}};
}

// Asks the router for its view of the workers (CONTROL status); null on failure.
nlohmann::json RouterStatus(zmq::context_t& context, const Config& config) {
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  socket.connect(config.routers.front());  // the first router's view
  ember::protocol::ControlRequest control{ember::protocol::ControlOp::kStatus};
  ember::protocol::SendDealt(socket, ember::protocol::Command::kControl, 1,
                             ember::protocol::Encode(control));
  const auto deadline = Clock::now() + 2s;
  std::string error;
  while (Clock::now() < deadline) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, Until(deadline)) <= 0) break;
    while (auto received = ember::protocol::ReceiveDealt(socket, &error)) {
      if (!*received || (*received)->request_id != 1 ||
          (*received)->command != ember::protocol::Command::kReply) {
        continue;
      }
      ember::protocol::StatusReply status;
      if (!ember::protocol::Decode((*received)->body(), &status, &error)) return nullptr;
      nlohmann::json workers = nlohmann::json::array();
      for (const auto& w : status.workers) {
        workers.push_back({{"id", w.id},
                           {"capacity", w.capacity},
                           {"in_flight", w.in_flight},
                           {"completed", w.completed},
                           {"failed", w.failed},
                           {"weight", w.weight},
                           {"ewma_ms", w.ewma_ms},
                           {"p50_ms", w.p50_ms},
                           {"p99_ms", w.p99_ms}});
      }
      nlohmann::json models = nlohmann::json::array();
      for (const auto& m : status.models) {
        models.push_back({{"name", m.name}, {"policy", m.policy}, {"queued", m.queued}});
      }
      return {{"router_version", status.router_version},
              {"requests", status.requests},
              {"workers", workers},
              {"models", models}};
    }
  }
  return nullptr;
}

std::vector<std::string> LoadTexts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> texts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) texts.push_back(line);
  }
  if (texts.empty()) throw std::runtime_error(path + " has no non-empty lines");
  return texts;
}

void PrintReport(const nlohmann::json& r) {
  const auto& lat = r["latency_ms"];
  std::printf("\nember-loadgen: %s, model %s, %s\n",
              r["config"]["router"].get<std::string>().c_str(),
              r["config"]["model"].get<std::string>().c_str(),
              r["config"]["mode"].get<std::string>().c_str());
  std::printf("  measured %.1f s after %.1f s warm-up (%llu warm-up requests not counted)\n",
              r["duration_s"].get<double>(), r["config"]["warmup_s"].get<double>(),
              static_cast<unsigned long long>(r["warmup_sent"].get<std::uint64_t>()));
  std::printf("  %-22s %12s\n", "sent", std::to_string(r["sent"].get<std::uint64_t>()).c_str());
  std::printf("  %-22s %12llu\n", "replies",
              static_cast<unsigned long long>(r["replies"].get<std::uint64_t>()));
  std::printf("  %-22s %12llu\n", "errors",
              static_cast<unsigned long long>(r["error_total"].get<std::uint64_t>()));
  for (const auto& [code, n] : r["errors"].items()) {
    std::printf("    %-20s %12llu\n", code.c_str(),
                static_cast<unsigned long long>(n.get<std::uint64_t>()));
  }
  std::printf("  %-22s %12llu\n", "missing",
              static_cast<unsigned long long>(r["missing"].get<std::uint64_t>()));
  if (r["foreign_answers"].get<std::uint64_t>() > 0) {
    std::printf("  %-22s %12llu\n", "foreign answers",
                static_cast<unsigned long long>(r["foreign_answers"].get<std::uint64_t>()));
  }
  if (r["config"].contains("qps") && r["config"]["qps"].get<double>() > 0) {
    std::printf("  %-22s %12.1f\n", "offered QPS", r["offered_qps"].get<double>());
    std::printf("  %-22s %12.2f\n", "max send lag (ms)", r["max_send_lag_ms"].get<double>());
  }
  std::printf("  %-22s %12.1f\n", "achieved QPS", r["qps"].get<double>());
  std::printf("  %-22s %12.1f\n", "texts/s", r["texts_per_s"].get<double>());
  std::printf("  latency (ms)   p50 %8.2f   p90 %8.2f   p99 %8.2f   max %8.2f   mean %8.2f\n",
              lat["p50"].get<double>(), lat["p90"].get<double>(), lat["p99"].get<double>(),
              lat["max"].get<double>(), lat["mean"].get<double>());
  std::printf("  %-24s %9s %7s %9s %9s %9s\n", "worker", "replies", "share", "p50 ms", "p99 ms",
              "max ms");
  for (const auto& [id, w] : r["workers"].items()) {
    std::printf("  %-24s %9llu %6.1f%% %9.2f %9.2f %9.2f\n", id.c_str(),
                static_cast<unsigned long long>(w["replies"].get<std::uint64_t>()),
                100 * w["share"].get<double>(), w["latency_ms"]["p50"].get<double>(),
                w["latency_ms"]["p99"].get<double>(), w["latency_ms"]["max"].get<double>());
  }
  // Worker batch sizes, as the replies report them (largest batch per reply).
  std::printf("  worker batch sizes (texts per batch -> replies):");
  for (const auto& [size, n] : r["batch_sizes"].items()) {
    std::printf(" %s:%llu", size.c_str(), static_cast<unsigned long long>(n.get<std::uint64_t>()));
  }
  std::printf("\n");
  if (!r["router_status"].is_null()) {
    std::printf("  router's view (since router start):\n");
    std::printf("  %-24s %9s %7s %9s %9s %9s\n", "worker", "completed", "failed", "ewma ms",
                "p50 ms", "p99 ms");
    for (const auto& w : r["router_status"]["workers"]) {
      std::printf("  %-24s %9llu %7llu %9.2f %9.2f %9.2f\n", w["id"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(w["completed"].get<std::uint64_t>()),
                  static_cast<unsigned long long>(w["failed"].get<std::uint64_t>()),
                  w["ewma_ms"].get<double>(), w["p50_ms"].get<double>(), w["p99_ms"].get<double>());
    }
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  CLI::App app{"ember-loadgen: load generator for an ember router (closed or open loop)"};
  bool dump_texts = false;
  app.add_flag("--dump-texts", dump_texts,
               "print the built-in texts, one per line, and exit (to feed other benches)");
  auto* router = app.add_option(
      "--router", config.router,
      "router frontend endpoint; several, comma-separated: client i uses the (i mod n)-th");
  auto* http = app.add_option("--http", config.http,
                              "the HTTP gateway's base URL instead (OpenAI API, closed loop)");
  auto* model = app.add_option("--model", config.model, "model name");
  app.add_option("--texts-per-request", config.texts_per_request, "texts in each request")
      ->check(CLI::Range(1, 65'536))
      ->capture_default_str();
  app.add_option("--duration-s", config.duration_s, "measurement time")
      ->check(CLI::Range(0.1, 86'400.0))
      ->capture_default_str();
  app.add_option("--warmup-s", config.warmup_s, "load before measuring (not counted)")
      ->check(CLI::Range(0.0, 3'600.0))
      ->capture_default_str();
  app.add_option("--timeout-ms", config.timeout_ms,
                 "request deadline sent to the router; the run waits timeout + 1 s for answers")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  auto* concurrency = app.add_option("--concurrency", config.concurrency,
                                     "closed loop: client threads, one socket each")
                          ->check(CLI::Range(1, 4096))
                          ->capture_default_str();
  app.add_option("--window", config.window, "closed loop: requests in flight per client")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  auto* qps = app.add_option("--qps", config.qps, "open loop: Poisson arrival rate (requests/s)")
                  ->check(CLI::Range(0.001, 10'000'000.0));
  app.add_option("--connections", config.connections,
                 "open loop: sender threads, each owning one DEALER socket")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  qps->excludes(concurrency);
  app.add_option("--seed", config.seed, "RNG seed (arrivals and text choice)")
      ->capture_default_str();
  app.add_option("--texts-file", config.texts_file,
                 "inputs, one per line (default: built-in English and Chinese sentences)")
      ->check(CLI::ExistingFile);
  app.add_option("--hit-rate", config.hit_rate,
                 "cache bench: fraction of texts that repeat the texts (the rest are unique); "
                 "unset: texts drawn from the texts only")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--json", config.json_file, "also write the report as JSON to this file");
  app.add_flag("--quiet", config.quiet, "do not print the table");
  app.add_flag("!--no-router-status", config.router_status,
               "do not ask the router for its per-worker view at the end");
  CLI11_PARSE(app, argc, argv);
  if (dump_texts) {
    for (const auto& t : kBuiltinTexts) std::cout << t << "\n";
    return 0;
  }
  if ((!router->count() && !http->count()) || !model->count()) {
    std::cerr << "ember-loadgen: --router (or --http) and --model are required\n";
    return 2;
  }
  if (http->count() && config.qps > 0) {
    std::cerr << "ember-loadgen: --http runs closed loop only (no --qps)\n";
    return 2;
  }
  if (http->count()) config.window = 1;  // HTTP/1.1: one request in flight per connection
  if (!router->count()) config.router_status = false;
  for (std::size_t start = 0; router->count();) {
    const std::size_t comma = config.router.find(',', start);
    config.routers.push_back(config.router.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }

  std::vector<std::string> texts;
  try {
    texts = config.texts_file.empty() ? kBuiltinTexts : LoadTexts(config.texts_file);
  } catch (const std::exception& e) {
    std::cerr << "ember-loadgen: " << e.what() << "\n";
    return 2;
  }

  const bool open_loop = config.qps > 0;
  zmq::context_t context(2);
  const auto t0 = Clock::now() + 50ms;  // let every thread connect first
  Window window;
  window.begin = t0 + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(config.warmup_s));
  window.end = window.begin + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(config.duration_s));
  window.drain = window.end + std::chrono::milliseconds(config.timeout_ms) + 1s;

  const int threads_n = open_loop ? config.connections : config.concurrency;
  std::vector<Tally> tallies(static_cast<std::size_t>(threads_n));
  std::vector<std::thread> threads;
  for (int i = 0; i < threads_n; ++i) {
    threads.emplace_back([&, i] {
      if (!open_loop) std::this_thread::sleep_until(t0);
      tallies[static_cast<std::size_t>(i)] =
          !config.http.empty() ? RunHttp(config, texts, window, i)
          : open_loop ? RunOpen(context, config, texts, t0, window, i, config.qps / threads_n)
                      : RunClosed(context, config, texts, window, i);
    });
  }
  for (auto& t : threads) t.join();

  Tally total;
  for (auto& t : tallies) total.Merge(std::move(t));
  std::uint64_t error_total = 0;
  for (const auto& [code, n] : total.errors) error_total += n;

  nlohmann::json report;
  nlohmann::json cfg = {{"router", config.router},
                        {"http", config.http},
                        {"model", config.model},
                        {"mode", open_loop ? "open loop (Poisson)" : "closed loop"},
                        {"texts_per_request", config.texts_per_request},
                        {"hit_rate", config.hit_rate},
                        {"duration_s", config.duration_s},
                        {"warmup_s", config.warmup_s},
                        {"timeout_ms", config.timeout_ms},
                        {"seed", config.seed},
                        {"texts", config.texts_file.empty() ? "builtin" : config.texts_file},
                        {"text_count", texts.size()}};
  if (open_loop) {
    cfg["qps"] = config.qps;
    cfg["connections"] = config.connections;
  } else {
    cfg["concurrency"] = config.concurrency;
    cfg["window"] = config.window;
  }
  report["config"] = cfg;
  report["duration_s"] = config.duration_s;
  report["warmup_sent"] = total.warmup_sent;
  report["sent"] = total.sent;
  report["replies"] = total.replies;
  report["errors"] = total.errors;
  report["error_total"] = error_total;
  report["missing"] = total.missing;
  report["foreign_answers"] = total.foreign;
  report["bad_frames"] = total.bad_replies;
  report["accounted"] = total.replies + error_total + total.missing == total.sent;
  report["offered_qps"] = static_cast<double>(total.sent) / config.duration_s;
  report["qps"] = static_cast<double>(total.replies) / config.duration_s;
  report["texts_per_s"] = static_cast<double>(total.texts) / config.duration_s;
  report["max_send_lag_ms"] = total.max_send_lag_ms;
  report["latency_ms"] = LatencyJson(total.latency_ms);
  nlohmann::json workers = nlohmann::json::object();
  for (auto& [id, v] : total.worker_latency) {
    workers[id] = {
        {"replies", v.size()},
        {"share",
         total.replies ? static_cast<double>(v.size()) / static_cast<double>(total.replies) : 0.0},
        {"latency_ms", LatencyJson(v)}};
  }
  report["workers"] = workers;
  nlohmann::json batches = nlohmann::json::object();
  for (const auto& [size, n] : total.batch_sizes) batches[std::to_string(size)] = n;
  report["batch_sizes"] = batches;
  report["router_status"] = config.router_status ? RouterStatus(context, config) : nullptr;

  if (!config.quiet) PrintReport(report);
  if (!report["accounted"].get<bool>()) {
    std::cerr << "ember-loadgen: BUG: replies + errors + missing != sent\n";
  }
  if (!config.json_file.empty()) {
    std::ofstream out(config.json_file);
    out << report.dump(2) << "\n";
    if (!out) {
      std::cerr << "ember-loadgen: cannot write " << config.json_file << "\n";
      return 2;
    }
  }
  return report["accounted"].get<bool>() ? 0 : 1;
}
