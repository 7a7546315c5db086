// An HTTP/1.1 server on event loops (Boost.Beast over Asio), for a front door whose requests
// mostly wait on something else (the cluster).
//
// `threads` loops each run on a thread of their own; a connection lives on one loop, which
// reads its requests, calls the handler and writes the responses without locks. The handler
// answers through an HttpReply, at once or later and from any thread: the response is
// carried back to the connection's loop. So a request that waits holds no thread, and one
// loop serves thousands of connections (the gateway before this ran a thread per request and
// spent most of its CPU switching between them).
//
// A connection reads its next request only after answering the current one (keep-alive;
// pipelined requests wait their turn). The server answers some requests itself, with a
// response made by `HttpErrorBody`: a body over `max_body_bytes` (413, told before the body
// is sent when the client asks with "Expect: 100-continue"), a request it cannot parse (400).
// A connection idle for `idle_timeout` between requests is closed.
#ifndef EMBER_GATEWAY_HTTP_SERVER_H_
#define EMBER_GATEWAY_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::gateway {

struct HttpRequest {
  std::string method;        // "GET", "POST", ... as sent
  std::string path;          // the target up to its query, e.g. "/v1/embeddings"
  std::string content_type;  // the Content-Type header as sent; empty if none
  std::string body;
};

// Whether a Content-Type names JSON: application/json or application/<anything>+json, any case,
// parameters (charset) ignored; as axum's Json extractor, which TEI answers 415 with otherwise.
bool IsJsonMediaType(std::string_view content_type);

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers{};  // beyond type and length
};

// The answer to one request. Copies share it; the first Send counts and later ones are
// ignored. If every copy is dropped without a Send, the request is answered 500, so an
// accepted request always gets exactly one response.
class HttpReply {
 public:
  // Sends `response`. Any thread.
  void Send(HttpResponse response) const;
  // Runs `make` on the connection's loop and sends what it returns (500 if it throws). Any
  // thread: for work that should not run where the answer arrives (e.g. on a client's I/O
  // thread shared by every request).
  void Send(std::function<HttpResponse()> make) const;

  struct State;  // http_server.cpp's
  explicit HttpReply(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

using HttpHandler = std::function<void(HttpRequest request, HttpReply reply)>;
// The server's own answers (413, 400): the status and what went wrong, as a response.
using HttpErrorBody = std::function<HttpResponse(int status, const std::string& message)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (Bind() says which)
  int threads = 1;  // event loops
  std::size_t max_body_bytes = std::size_t{16} << 20;
  std::chrono::milliseconds idle_timeout{60'000};  // a keep-alive connection between requests
  // How long Stop() lets requests in flight finish before closing their connections.
  std::chrono::milliseconds drain_timeout{5'000};
};

class HttpServer {
 public:
  // `handler` runs on the loops, for every request the server does not answer itself: it
  // must not block (hand blocking work to another thread and answer from there).
  HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorBody error_body);
  // Stops (as Stop()). Every HttpReply must be gone by then: whatever holds one (a client's
  // pending callbacks, a thread pool's queue) is destroyed before the server.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the port. Throws std::runtime_error on failure.
  int Bind();
  // Starts the loops (after Bind).
  void Start();
  // Stops accepting, lets the requests in flight finish (each connection closes after its
  // answer) for at most drain_timeout, then closes every connection and joins the loops.
  void Stop();

 private:
  struct Core;
  std::unique_ptr<Core> core_;
};

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_HTTP_SERVER_H_
