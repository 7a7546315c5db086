#include "gateway/gateway.h"

#include <fmt/ranges.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "gateway/http_error.h"
#include "gateway/openai_api.h"
#include "gateway/tei_api.h"
#include "gateway/tei_scoring.h"
#include "gateway/tei_tokenize.h"

namespace ember::gateway {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kJson = "application/json";

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

// Embeds on the gateway's one asynchronous client (one connection, one I/O thread for every
// handler; it fails over and gives up on its own, so the wait is bounded by the timeout).
Embeddings Embed(AsyncClient& client, const EmbeddingCall& call, const GatewayOptions& options) {
  return client.Embed(call.model, call.texts, OptionsOf(call, options)).get();
}

// The same for a cross-encoder's or classifier's scores.
Embeddings Score(AsyncClient& client, const ScoreCall& score, const GatewayOptions& options) {
  EmbedOptions embed = OptionsOf(score.call, options);
  embed.raw_scores = score.raw_scores;
  return client.Score(score.call.model, score.call.texts, score.pairs, embed).get();
}

// Runs `handle`, turning any failure into an error response written by
// `error_json`, and records the request in `metrics`.
template <class Handle, class ErrorJson>
void Serve(GatewayMetrics& metrics, const char* route, httplib::Response& response, Handle handle,
           ErrorJson error_json) {
  const auto start = Clock::now();
  metrics.Begin();
  std::size_t texts = 0;
  try {
    texts = handle();
    response.status = 200;  // httplib's default (-1) becomes 200 only after we return
  } catch (const HttpError& e) {
    response.status = e.status();
    response.set_content(error_json(e), kJson);
  } catch (const Error& e) {
    const HttpError mapped = FromEmberError(e);
    response.status = mapped.status();
    response.set_content(error_json(mapped), kJson);
  } catch (const std::exception& e) {
    spdlog::error("{}: {}", route, e.what());
    const HttpError internal(500, "server_error", "INTERNAL", e.what());
    response.status = 500;
    response.set_content(error_json(internal), kJson);
  }
  if (response.status >= 500)
    spdlog::warn("{} answered {}: {}", route, response.status, response.body);
  metrics.End();
  metrics.Record(route, response.status,
                 std::chrono::duration<double>(Clock::now() - start).count(), texts);
}

}  // namespace

Gateway::Gateway(GatewayOptions options)
    : options_(std::move(options)),
      pool_(options_.routers),
      embedder_(options_.routers, ClientOptions{}),
      server_(std::make_unique<httplib::Server>()) {
  httplib::Server& server = *server_;
  const auto threads = static_cast<std::size_t>(options_.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(options_.max_body_bytes);
  server.set_keep_alive_max_count(1000);
  // httplib writes headers and body separately; without TCP_NODELAY, Nagle
  // plus the client's delayed ACK adds ~40 ms to every keep-alive response.
  server.set_tcp_nodelay(true);

  server.Post("/v1/embeddings",
              [this](const httplib::Request& request, httplib::Response& response) {
                OpenAiEmbeddings(request, response);
              });
  server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& response) {
    OpenAiModels(response);
  });
  server.Post("/embed", [this](const httplib::Request& request, httplib::Response& response) {
    TeiEmbed(request, response);
  });
  server.Post("/rerank", [this](const httplib::Request& request, httplib::Response& response) {
    TeiRerank(request, response);
  });
  server.Post("/predict", [this](const httplib::Request& request, httplib::Response& response) {
    TeiPredict(request, response);
  });
  server.Post("/tokenize", [this](const httplib::Request& request, httplib::Response& response) {
    TeiTokenize(request, response);
  });
  server.Post("/decode", [this](const httplib::Request& request, httplib::Response& response) {
    TeiDecode(request, response);
  });
  server.Get("/health",
             [this](const httplib::Request&, httplib::Response& response) { Health(response); });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(metrics_.Render(), "text/plain; version=0.0.4");
  });
  // Errors httplib produces itself (unknown path 404, body too large 413,
  // ...) get the same JSON shape as ours; responses with a body are ours.
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string message = "HTTP " + std::to_string(response.status);
        if (response.status == 404)
          message = "no such endpoint: " + request.method + " " + request.path;
        if (response.status == 413) {
          message = "request body over " + std::to_string(options_.max_body_bytes) + " bytes";
        }
        const HttpError error(response.status, "invalid_request_error", "BAD_REQUEST", message);
        response.set_content(OpenAiErrorJson(error), kJson);
        metrics_.Record("other", response.status, 0, 0);
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_logger([](const httplib::Request& request, const httplib::Response& response) {
    spdlog::debug("{} {} -> {}", request.method, request.path, response.status);
  });
}

Gateway::~Gateway() = default;

int Gateway::Bind() {
  if (options_.port == 0) {
    const int port = server_->bind_to_any_port(options_.host);
    if (port < 0) throw std::runtime_error("cannot bind " + options_.host + ":0");
    return port;
  }
  if (!server_->bind_to_port(options_.host, options_.port)) {
    throw std::runtime_error("cannot bind " + options_.host + ":" + std::to_string(options_.port));
  }
  return options_.port;
}

void Gateway::Run(const std::atomic<bool>& stop) {
  std::atomic<bool> done{false};
  std::thread listener([&] {
    if (!server_->listen_after_bind()) spdlog::error("ember-gateway: the HTTP server failed");
    done.store(true);
  });
  while (!stop.load() && !done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // stop() closes the listening socket; listen_after_bind() then drains the
  // handler threads and returns.
  server_->stop();
  listener.join();
}

void Gateway::OpenAiEmbeddings(const httplib::Request& request, httplib::Response& response) {
  Serve(
      metrics_, "/v1/embeddings", response,
      [&] {
        const OpenAiRequest parsed = ParseOpenAiRequest(request.body);
        const Embeddings embeddings = Embed(embedder_, parsed.call, options_);
        response.set_content(FormatOpenAiResponse(parsed, embeddings), kJson);
        response.set_header("x-compute-tokens", std::to_string(embeddings.total_tokens()));
        return parsed.call.texts.size();
      },
      OpenAiErrorJson);
}

void Gateway::TeiEmbed(const httplib::Request& request, httplib::Response& response) {
  Serve(
      metrics_, "/embed", response,
      [&] {
        const TeiRequest parsed = ParseTeiRequest(request.body, options_.default_model);
        const Embeddings embeddings = Embed(embedder_, parsed.call, options_);
        response.set_content(FormatTeiResponse(parsed, embeddings), kJson);
        // TEI's header for the tokens a request computed.
        response.set_header("x-compute-tokens", std::to_string(embeddings.total_tokens()));
        return parsed.call.texts.size();
      },
      TeiErrorJson);
}

void Gateway::TeiRerank(const httplib::Request& request, httplib::Response& response) {
  Serve(
      metrics_, "/rerank", response,
      [&] {
        const RerankRequest parsed = ParseRerankRequest(request.body, options_.default_model);
        const Embeddings scores = Score(embedder_, parsed.score, options_);
        response.set_content(FormatRerankResponse(parsed, scores), kJson);
        response.set_header("x-compute-tokens", std::to_string(scores.total_tokens()));
        return parsed.score.pairs.size();
      },
      TeiErrorJson);
}

void Gateway::TeiPredict(const httplib::Request& request, httplib::Response& response) {
  Serve(
      metrics_, "/predict", response,
      [&] {
        const PredictRequest parsed = ParsePredictRequest(request.body, options_.default_model);
        const Embeddings scores = Score(embedder_, parsed.score, options_);
        response.set_content(FormatPredictResponse(parsed, scores), kJson);
        response.set_header("x-compute-tokens", std::to_string(scores.total_tokens()));
        return parsed.score.call.texts.size();
      },
      TeiErrorJson);
}

void Gateway::TeiTokenize(const httplib::Request& request, httplib::Response& response) {
  Serve(
      metrics_, "/tokenize", response,
      [&] {
        const TokenizeRequest parsed = ParseTokenizeRequest(request.body, options_.default_model);
        const Embeddings tokens =
            embedder_
                .Tokenize(parsed.call.model, parsed.call.texts, OptionsOf(parsed.call, options_))
                .get();
        response.set_content(FormatTokenizeResponse(parsed, tokens), kJson);
        return parsed.call.texts.size();
      },
      TeiErrorJson);
}

void Gateway::TeiDecode(const httplib::Request& request, httplib::Response& response) {
  Serve(
      metrics_, "/decode", response,
      [&] {
        const DecodeRequest parsed = ParseDecodeRequest(request.body, options_.default_model);
        EmbedOptions options = OptionsOf(parsed.call, options_);
        options.skip_special_tokens = parsed.skip_special_tokens;
        const Embeddings decoded = embedder_.Decode(parsed.call.model, parsed.ids, options).get();
        response.set_content(FormatDecodeResponse(decoded), kJson);
        return parsed.ids.size();
      },
      TeiErrorJson);
}

void Gateway::OpenAiModels(httplib::Response& response) {
  Serve(
      metrics_, "/v1/models", response,
      [&] {
        ClientPool::Lease client = pool_.Acquire();
        protocol::StatusReply status;
        try {
          status = client->Status(options_.health_timeout);
        } catch (const Error&) {
          client.Discard();
          throw;
        }
        std::set<std::string> names;
        for (const auto& worker : status.workers) {
          for (const auto& model : worker.models) names.insert(model.name);
        }
        nlohmann::json data = nlohmann::json::array();
        for (const auto& name : names) {
          data.push_back(
              {{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "ember"}});
        }
        response.set_content(nlohmann::json{{"object", "list"}, {"data", data}}.dump(), kJson);
        return std::size_t{0};
      },
      OpenAiErrorJson);
}

void Gateway::Health(httplib::Response& response) {
  const auto start = Clock::now();
  nlohmann::json body;
  ClientPool::Lease client = pool_.Acquire();
  try {
    const protocol::StatusReply status = client->Status(options_.health_timeout);
    std::set<std::string> names;
    for (const auto& worker : status.workers) {
      for (const auto& model : worker.models) names.insert(model.name);
    }
    body = {{"status", status.workers.empty() ? "unavailable" : "ok"},
            {"workers", status.workers.size()},
            {"models", names}};
    if (status.workers.empty()) body["reason"] = "the router has no workers";
    response.status = status.workers.empty() ? 503 : 200;
  } catch (const Error& e) {
    client.Discard();
    body = {{"status", "unavailable"},
            {"reason", fmt::format("routers {}: ", fmt::join(options_.routers, ",")) +
                           std::string(ErrorCodeName(e.code())) + ": " + e.what()}};
    response.status = 503;
  }
  response.set_content(body.dump(), kJson);
  metrics_.Record("/health", response.status,
                  std::chrono::duration<double>(Clock::now() - start).count(), 0);
}

}  // namespace ember::gateway
