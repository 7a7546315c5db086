#include "gateway/gateway.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "gateway/http_error.h"
#include "gateway/openai_api.h"
#include "gateway/tei_api.h"
#include "gateway/tei_scoring.h"
#include "gateway/tei_token_outputs.h"
#include "gateway/tei_tokenize.h"

namespace ember::gateway {
namespace {

using Clock = std::chrono::steady_clock;
using ErrorJson = std::string (*)(const HttpError&);

// Status and model lists at once; /health is polled by probes, the rest is rare.
constexpr int kControlThreads = 4;

EmbedOptions OptionsOf(const EmbeddingCall& call, const GatewayOptions& options) {
  EmbedOptions embed;
  embed.version = call.version;
  embed.truncate = call.truncate.value_or(true);
  embed.dimensions = call.dimensions;
  embed.prompt_name = call.prompt_name;
  embed.timeout = options.timeout;
  embed.attempts = options.attempts;
  return embed;
}

HttpResponse Json(std::string body) { return HttpResponse{.body = std::move(body)}; }

// `error` as a response, its body in a route's JSON error shape.
HttpResponse ErrorResponse(const HttpError& error, ErrorJson error_json) {
  HttpResponse response = Json(error_json(error));
  response.status = error.status();
  return response;
}

// A cluster reply's response, with TEI's header for the tokens it computed.
HttpResponse WithTokens(std::string body, const Embeddings& reply) {
  HttpResponse response = Json(std::move(body));
  response.headers.emplace_back("x-compute-tokens", std::to_string(reply.total_tokens()));
  return response;
}

// One HTTP request of a route, from its handler to its response: it answers exactly once
// (through its HttpReply), turns any failure into the route's JSON error, and records the
// request in the metrics. Copies share the reply.
class Exchange {
 public:
  Exchange(GatewayMetrics& metrics, const char* route, ErrorJson error_json, HttpReply reply)
      : metrics_(&metrics),
        route_(route),
        error_json_(error_json),
        reply_(std::move(reply)),
        start_(Clock::now()) {
    metrics.Begin();
  }

  // Texts the request carries (the metrics count them when it succeeds).
  void set_texts(std::size_t texts) { texts_ = texts; }

  // Answers with what `make` returns, made on the calling thread.
  void Answer(const std::function<HttpResponse()>& make) const { reply_.Send(Finish(make)); }

  // Runs `start` at once, which queues the request's call on the cluster (a throw answers with
  // the error), with a callback from Then.
  void Start(const std::function<void()>& start) const {
    try {
      start();
    } catch (...) {
      Answer([e = std::current_exception()]() -> HttpResponse { std::rethrow_exception(e); });
    }
  }

  // The AsyncClient callback that answers with `format(reply)`, or with the error the cluster
  // gave. The outcome moves to the connection's loop first: formatting there keeps the
  // client's I/O thread, which every request shares, free.
  AsyncClient::Callback Then(std::function<HttpResponse(const Embeddings&)> format) const;

  // The same for a parsed request of `texts` texts, its response body format(*parsed, reply)
  // with TEI's header for the tokens the reply computed.
  template <class Parsed>
  AsyncClient::Callback Then(std::shared_ptr<const Parsed> parsed, std::size_t texts,
                             std::string (*format)(const Parsed&, const Embeddings&)) {
    texts_ = texts;
    return Then([parsed = std::move(parsed), format](const Embeddings& reply) {
      return WithTokens(format(*parsed, reply), reply);
    });
  }

 private:
  HttpResponse Finish(const std::function<HttpResponse()>& make) const;

  GatewayMetrics* metrics_;
  const char* route_;
  ErrorJson error_json_;
  HttpReply reply_;
  Clock::time_point start_;
  std::size_t texts_ = 0;
};

AsyncClient::Callback Exchange::Then(std::function<HttpResponse(const Embeddings&)> format) const {
  return [exchange = *this, format = std::move(format)](AsyncClient::Outcome outcome) mutable {
    const HttpReply reply = exchange.reply_;
    reply.Send(std::function<HttpResponse()>(
        [exchange = std::move(exchange), format = std::move(format), outcome = std::move(outcome)] {
          return exchange.Finish([&]() -> HttpResponse {
            if (const Error* error = std::get_if<Error>(&outcome)) throw *error;
            return format(std::get<Embeddings>(outcome));
          });
        }));
  };
}

HttpResponse Exchange::Finish(const std::function<HttpResponse()>& make) const {
  HttpResponse response;
  try {
    response = make();
  } catch (const HttpError& e) {
    response = ErrorResponse(e, error_json_);
  } catch (const Error& e) {
    response = ErrorResponse(FromEmberError(e), error_json_);
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", route_, e.what());
    response = ErrorResponse(HttpError(500, "server_error", "INTERNAL", e.what()), error_json_);
  }
  if (response.status >= 500) {
    spdlog::warn("{} answered {}: {}", route_, response.status, response.body);
  }
  metrics_->End();
  metrics_->Record(route_, response.status,
                   std::chrono::duration<double>(Clock::now() - start_).count(),
                   response.status == 200 ? texts_ : 0);
  return response;
}

// The model names the router's workers serve.
std::set<std::string> ModelNames(const protocol::StatusReply& status) {
  std::set<std::string> names;
  for (const auto& worker : status.workers) {
    for (const auto& model : worker.models) names.insert(model.name);
  }
  return names;
}

}  // namespace

Gateway::Gateway(GatewayOptions options)
    : options_(std::move(options)),
      pool_(options_.routers),
      server_(
          HttpServerOptions{
              .host = options_.host,
              .port = options_.port,
              .threads = options_.threads,
              .max_body_bytes = options_.max_body_bytes,
              // Each request in flight ends by its deadline: the client gives up then.
              .drain_timeout = options_.timeout + std::chrono::seconds(1),
          },
          [this](HttpRequest request, HttpReply reply) {
            Handle(std::move(request), std::move(reply));
          },
          // What the server answers itself (413, 400; 503 while shutting down; 500 for a
          // request dropped unanswered) gets the same JSON shape as ours.
          [this](int status, const std::string& message) {
            metrics_.Record("other", status, 0, 0);
            const char* code = status < 500    ? "BAD_REQUEST"
                               : status == 503 ? "UNAVAILABLE"
                                               : "INTERNAL";
            return ErrorResponse(
                HttpError(status, status < 500 ? "invalid_request_error" : "server_error", code,
                          message),
                OpenAiErrorJson);
          }),
      control_(std::make_unique<boost::asio::thread_pool>(kControlThreads)),
      embedder_(options_.routers, ClientOptions{}) {}

Gateway::~Gateway() {
  control_->join();  // before the server goes: its tasks hold replies
}

int Gateway::Bind() { return server_.Bind(); }

void Gateway::Run(const std::atomic<bool>& stop) {
  server_.Start();
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_.Stop();
}

void Gateway::Handle(HttpRequest request, HttpReply reply) {
  const std::string& path = request.path;
  if (request.method == "POST" && !IsJsonMediaType(request.content_type)) {
    // As TEI (axum's Json) and OpenAI: a body not declared JSON is refused, not guessed at.
    metrics_.Record("other", 415, 0, 0);
    return reply.Send(ErrorResponse(
        HttpError(415, "invalid_request_error", "UNSUPPORTED_MEDIA_TYPE",
                  "expected a request with Content-Type: application/json, got " +
                      (request.content_type.empty() ? std::string("none")
                                                    : "\"" + request.content_type + "\"")),
        path == "/v1/embeddings" ? OpenAiErrorJson : TeiErrorJson));
  }
  if (request.method == "POST") {
    if (path == "/v1/embeddings") return OpenAiEmbeddings(request, std::move(reply));
    if (path == "/embed") return TeiEmbed(request, std::move(reply));
    if (path == "/rerank") return TeiRerank(request, std::move(reply));
    if (path == "/predict") return TeiPredict(request, std::move(reply));
    if (path == "/tokenize") return TeiTokenize(request, std::move(reply));
    if (path == "/decode") return TeiDecode(request, std::move(reply));
    if (path == "/embed_sparse")
      return TokenOutputs(request, EmbedOutput::kSparse, std::move(reply));
    if (path == "/embed_multi_vector") {
      return TokenOutputs(request, EmbedOutput::kMultiVector, std::move(reply));
    }
  } else if (request.method == "GET") {
    if (path == "/v1/models") return OpenAiModels(std::move(reply));
    if (path == "/health") return Health(std::move(reply));
    if (path == "/metrics") {
      return reply.Send(
          HttpResponse{.content_type = "text/plain; version=0.0.4", .body = metrics_.Render()});
    }
  }
  metrics_.Record("other", 404, 0, 0);
  reply.Send(ErrorResponse(HttpError(404, "invalid_request_error", "BAD_REQUEST",
                                     "no such endpoint: " + request.method + " " + path),
                           OpenAiErrorJson));
}

void Gateway::OpenAiEmbeddings(const HttpRequest& request, HttpReply reply) {
  Exchange exchange(metrics_, "/v1/embeddings", OpenAiErrorJson, std::move(reply));
  exchange.Start([&] {
    const auto parsed = std::make_shared<const OpenAiRequest>(ParseOpenAiRequest(request.body));
    Embed(parsed->call, exchange.Then(parsed, parsed->call.texts.size(), &FormatOpenAiResponse));
  });
}

void Gateway::TeiEmbed(const HttpRequest& request, HttpReply reply) {
  Exchange exchange(metrics_, "/embed", TeiErrorJson, std::move(reply));
  exchange.Start([&] {
    const auto parsed =
        std::make_shared<const TeiRequest>(ParseTeiRequest(request.body, options_.default_model));
    Embed(parsed->call, exchange.Then(parsed, parsed->call.texts.size(), &FormatTeiResponse));
  });
}

void Gateway::TeiRerank(const HttpRequest& request, HttpReply reply) {
  Exchange exchange(metrics_, "/rerank", TeiErrorJson, std::move(reply));
  exchange.Start([&] {
    const auto parsed = std::make_shared<const RerankRequest>(
        ParseRerankRequest(request.body, options_.default_model));
    Score(parsed->score, exchange.Then(parsed, parsed->score.pairs.size(), &FormatRerankResponse));
  });
}

void Gateway::TeiPredict(const HttpRequest& request, HttpReply reply) {
  Exchange exchange(metrics_, "/predict", TeiErrorJson, std::move(reply));
  exchange.Start([&] {
    const auto parsed = std::make_shared<const PredictRequest>(
        ParsePredictRequest(request.body, options_.default_model));
    Score(parsed->score,
          exchange.Then(parsed, parsed->score.call.texts.size(), &FormatPredictResponse));
  });
}

void Gateway::Embed(const EmbeddingCall& call, AsyncClient::Callback done) {
  embedder_.Embed(call.model, call.texts, OptionsOf(call, options_), std::move(done));
}

void Gateway::Score(const ScoreCall& score, AsyncClient::Callback done) {
  EmbedOptions options = OptionsOf(score.call, options_);
  options.raw_scores = score.raw_scores;
  embedder_.Score(score.call.model, score.call.texts, score.pairs, options, std::move(done));
}

void Gateway::TeiTokenize(const HttpRequest& request, HttpReply reply) {
  Exchange exchange(metrics_, "/tokenize", TeiErrorJson, std::move(reply));
  exchange.Start([&] {
    auto parsed = std::make_shared<const TokenizeRequest>(
        ParseTokenizeRequest(request.body, options_.default_model));
    exchange.set_texts(parsed->call.texts.size());
    embedder_.Tokenize(parsed->call.model, parsed->call.texts, OptionsOf(parsed->call, options_),
                       exchange.Then([parsed](const Embeddings& tokens) {
                         return Json(FormatTokenizeResponse(*parsed, tokens));
                       }));
  });
}

void Gateway::TeiDecode(const HttpRequest& request, HttpReply reply) {
  Exchange exchange(metrics_, "/decode", TeiErrorJson, std::move(reply));
  exchange.Start([&] {
    const DecodeRequest parsed = ParseDecodeRequest(request.body, options_.default_model);
    exchange.set_texts(parsed.ids.size());
    EmbedOptions options = OptionsOf(parsed.call, options_);
    options.skip_special_tokens = parsed.skip_special_tokens;
    embedder_.Decode(parsed.call.model, parsed.ids, options,
                     exchange.Then([](const Embeddings& decoded) {
                       return Json(FormatDecodeResponse(decoded));
                     }));
  });
}

void Gateway::TokenOutputs(const HttpRequest& request, EmbedOutput output, HttpReply reply) {
  const bool sparse = output == EmbedOutput::kSparse;
  Exchange exchange(metrics_, sparse ? "/embed_sparse" : "/embed_multi_vector", TeiErrorJson,
                    std::move(reply));
  exchange.Start([&] {
    const EmbeddingCall call = ParseTokenOutputsRequest(request.body, options_.default_model);
    exchange.set_texts(call.texts.size());
    EmbedOptions options = OptionsOf(call, options_);
    options.output = output;
    embedder_.Embed(
        call.model, call.texts, options, exchange.Then([sparse](const Embeddings& outputs) {
          return Json(sparse ? FormatSparseResponse(outputs) : FormatMultiVectorResponse(outputs));
        }));
  });
}

void Gateway::OpenAiModels(HttpReply reply) {
  Exchange exchange(metrics_, "/v1/models", OpenAiErrorJson, std::move(reply));
  boost::asio::post(*control_, [this, exchange] {
    exchange.Answer([&] {
      ClientPool::Lease client = pool_.Acquire();
      protocol::StatusReply status;
      try {
        status = client->Status(options_.health_timeout);
      } catch (const Error&) {
        client.Discard();
        throw;
      }
      nlohmann::json data = nlohmann::json::array();
      for (const auto& name : ModelNames(status)) {
        data.push_back({{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "ember"}});
      }
      return Json(nlohmann::json{{"object", "list"}, {"data", data}}.dump());
    });
  });
}

void Gateway::Health(HttpReply reply) {
  boost::asio::post(*control_, [this, reply = std::move(reply)] {
    const auto start = Clock::now();
    nlohmann::json body;
    HttpResponse response;
    ClientPool::Lease client = pool_.Acquire();
    try {
      const protocol::StatusReply status = client->Status(options_.health_timeout);
      body = {{"status", status.workers.empty() ? "unavailable" : "ok"},
              {"workers", status.workers.size()},
              {"models", ModelNames(status)}};
      if (status.workers.empty()) body["reason"] = "the router has no workers";
      response.status = status.workers.empty() ? 503 : 200;
    } catch (const Error& e) {
      client.Discard();
      body = {{"status", "unavailable"},
              {"reason", fmt::format("routers {}: ", fmt::join(options_.routers, ",")) +
                             std::string(ErrorCodeName(e.code())) + ": " + e.what()}};
      response.status = 503;
    }
    response.body = body.dump();
    metrics_.Record("/health", response.status,
                    std::chrono::duration<double>(Clock::now() - start).count(), 0);
    reply.Send(std::move(response));
  });
}

}  // namespace ember::gateway
