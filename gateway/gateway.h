// ember-gateway: an HTTP front door to an ember cluster. It speaks OpenAI's
// embeddings API (POST /v1/embeddings, GET /v1/models) and TEI's (POST
// /embed), and reports its health (GET /health: 200 only when the router
// answers and has workers) and its own counters (GET /metrics).
//
// HTTP is served on `threads` event loops (gateway/http_server.h), and each request's work on
// the cluster is one call on the gateway's AsyncClient with a callback: one connection and
// one I/O thread to the router however many requests are in flight (client/async_client.h),
// and no thread waits for an answer. A request is parsed on its connection's loop, and its
// response is written there too (the client's callback only hands the outcome over). The
// router does the batching and balancing, so the gateway holds no queue of its own. Status
// and model lists, which block on a Client borrowed from a pool (ZeroMQ sockets are
// single-threaded), run on a few control threads of their own.
#ifndef EMBER_GATEWAY_GATEWAY_H_
#define EMBER_GATEWAY_GATEWAY_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "client/async_client.h"
#include "gateway/client_pool.h"
#include "gateway/gateway_metrics.h"
#include "gateway/http_server.h"
#include "gateway/tei_scoring.h"

namespace boost::asio {
class thread_pool;
}  // namespace boost::asio

namespace ember::gateway {

struct GatewayOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (Bind() says which)
  // Router frontends; with several, each request fails over to the next (client/client.h).
  std::vector<std::string> routers = {"tcp://127.0.0.1:5555"};
  // HTTP event loops (threads). Connections and requests in flight are not bounded by them:
  // a waiting request holds no thread. A loop spends ~25 us of its thread per one-text request
  // on a 2-core VM (docs/performance.md "The gateway on event loops").
  int threads = 4;
  std::chrono::milliseconds timeout{30'000};        // per request, as the router enforces it
  std::chrono::milliseconds health_timeout{2'000};  // for GET /health
  int attempts = 0;  // ember::EmbedOptions::attempts (0: one per router)
  std::size_t max_body_bytes = std::size_t{16} << 20;  // larger bodies get 413
  std::string default_model;                           // for TEI /embed without "model"
};

class Gateway {
 public:
  explicit Gateway(GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Binds the listening socket; returns the port. Throws on failure.
  int Bind();
  // Serves until `stop` becomes true (checked every 100 ms), then lets the requests in flight
  // finish (at most `timeout` and a second). Call Bind() first.
  void Run(const std::atomic<bool>& stop);

 private:
  // Routes a request (on its connection's loop).
  void Handle(HttpRequest request, HttpReply reply);
  void OpenAiEmbeddings(const HttpRequest& request, HttpReply reply);
  void OpenAiModels(HttpReply reply);
  void TeiEmbed(const HttpRequest& request, HttpReply reply);
  void TeiRerank(const HttpRequest& request, HttpReply reply);
  void TeiPredict(const HttpRequest& request, HttpReply reply);
  void TeiTokenize(const HttpRequest& request, HttpReply reply);
  void TeiDecode(const HttpRequest& request, HttpReply reply);
  // /embed_sparse and /embed_multi_vector (tei_token_outputs.h).
  void TokenOutputs(const HttpRequest& request, EmbedOutput output, HttpReply reply);
  // Queues the embedding of `call` (/v1/embeddings, /embed) on the cluster.
  void Embed(const EmbeddingCall& call, AsyncClient::Callback done);
  // Queues a cross-encoder's or classifier's scores of `score` (/rerank, /predict).
  void Score(const ScoreCall& score, AsyncClient::Callback done);
  void Health(HttpReply reply);

  GatewayOptions options_;
  ClientPool pool_;  // status and model lists, one blocking Client per control task at a time
  GatewayMetrics metrics_;
  // Destroyed after the two below, which may still hold replies of its requests.
  HttpServer server_;
  std::unique_ptr<boost::asio::thread_pool> control_;  // status and model lists (they block)
  AsyncClient embedder_;  // every request's call on the cluster, on one connection
};

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_GATEWAY_H_
