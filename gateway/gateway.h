// ember-gateway: an HTTP front door to an ember cluster. It speaks OpenAI's
// embeddings API (POST /v1/embeddings, GET /v1/models) and TEI's (POST
// /embed), and reports its health (GET /health: 200 only when the router
// answers and has workers) and its own counters (GET /metrics).
//
// Each HTTP request is handled on one of `threads` handler threads, and its embedding is one
// call on the gateway's AsyncClient, shared by every handler: one connection and one I/O
// thread to the router however many requests are in flight (client/async_client.h). The
// router does the batching and balancing, so the gateway holds no queue of its own. Status
// and model lists use blocking Clients borrowed from a pool (ZeroMQ sockets are
// single-threaded).
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

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace ember::gateway {

struct GatewayOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (Bind() says which)
  // Router frontends; with several, each request fails over to the next (client/client.h).
  std::vector<std::string> routers = {"tcp://127.0.0.1:5555"};
  // HTTP handler threads = requests handled at once (a keep-alive connection holds one while it
  // lasts). Enough for the router to form GPU-sized batches from one-text requests (issue 24:
  // 8 let an OpenAI-API user put 8 texts in flight); idle threads cost only their stacks.
  int threads = 256;
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
  // Serves until `stop` becomes true (checked every 100 ms). Call Bind() first.
  void Run(const std::atomic<bool>& stop);

 private:
  void OpenAiEmbeddings(const httplib::Request& request, httplib::Response& response);
  void OpenAiModels(httplib::Response& response);
  void TeiEmbed(const httplib::Request& request, httplib::Response& response);
  void TeiRerank(const httplib::Request& request, httplib::Response& response);
  void TeiPredict(const httplib::Request& request, httplib::Response& response);
  void TeiTokenize(const httplib::Request& request, httplib::Response& response);
  void TeiDecode(const httplib::Request& request, httplib::Response& response);
  void Health(httplib::Response& response);

  GatewayOptions options_;
  ClientPool pool_;       // status and model lists, one blocking Client per handler at a time
  AsyncClient embedder_;  // embeddings: every handler's requests on one connection
  GatewayMetrics metrics_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_GATEWAY_H_
