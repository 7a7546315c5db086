#include "gateway/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <thread>

#include "common/thread_name.h"

namespace ember::gateway {

bool IsJsonMediaType(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto first = type.find_first_not_of(" \t");
  const auto last = type.find_last_not_of(" \t");
  if (first == std::string::npos) return false;
  type = type.substr(first, last - first + 1);
  return type == "application/json" || (type.rfind("application/", 0) == 0 && type.size() > 17 &&
                                        type.compare(type.size() - 5, 5, "+json") == 0);
}
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// One event loop and the thread that runs it.
struct Loop {
  asio::io_context context{1};  // one thread: Asio may skip its locking
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(context);
  std::thread thread;
};

// What every connection shares with the server.
struct Shared {
  Shared(HttpServerOptions o, HttpHandler h, HttpErrorBody e)
      : options(std::move(o)), handler(std::move(h)), error_body(std::move(e)) {}

  const HttpServerOptions options;
  const HttpHandler handler;
  const HttpErrorBody error_body;
  std::atomic<bool> draining{false};  // answer what is in flight, then close
  std::atomic<bool> stopped{false};   // the loops are gone: nothing more is sent
  std::atomic<std::size_t> in_flight{0};
};

// The server's own answer, never throwing (a failing error_body still gives a response).
HttpResponse ErrorResponse(const Shared& shared, int status, const std::string& message) {
  try {
    return shared.error_body(status, message);
  } catch (const std::exception& e) {
    spdlog::error("http: the error body for {} failed: {}", status, e.what());
    return HttpResponse{.status = status, .content_type = "text/plain", .body = message};
  }
}

std::string ToString(beast::string_view s) { return std::string(s.data(), s.size()); }

bool IsProtocolError(const beast::error_code& ec) {
  return ec.category() == beast::http::make_error_code(http::error::bad_method).category();
}

// One client connection: reads a request, hands it to the handler, writes its answer, and
// reads the next, all on its loop's thread.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Shared& shared, tcp::socket socket) : shared_(shared), stream_(std::move(socket)) {}

  void Start() { ReadHeader(); }

  asio::any_io_executor executor() { return stream_.get_executor(); }
  Shared& shared() { return shared_; }

  // The handler's answer to the request read last. On the loop.
  void Answer(HttpResponse response) { Write(std::move(response), keep_alive_, true); }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(shared_.options.max_body_bytes);
    stream_.expires_after(shared_.options.idle_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return Failed(ec);
    const auto& request = parser_->get();
    version_ = request.version();
    keep_alive_ = request.keep_alive();
    if (const auto length = parser_->content_length();
        length && *length > shared_.options.max_body_bytes) {
      return Failed(http::error::body_limit);  // refused before the body comes
    }
    if (beast::iequals(request[http::field::expect], "100-continue")) {
      // The client waits for this before it sends the body (curl does for bodies over 1 KiB);
      // a body over the limit was refused above.
      continue_ = http::response<http::empty_body>(http::status::continue_, version_);
      http::async_write(stream_, continue_,
                        [self = shared_from_this()](beast::error_code e, std::size_t) {
                          if (e) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return OnBody({});
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec) return Failed(ec);
    stream_.expires_never();  // the handler's time is its own business (the cluster's deadline)
    if (shared_.draining.load()) return Refuse(503, "the gateway is shutting down");
    auto& message = parser_->get();
    HttpRequest request;
    request.method = ToString(message.method_string());
    const beast::string_view target = message.target();
    request.path = ToString(target.substr(0, target.find('?')));
    request.content_type = ToString(message[http::field::content_type]);
    request.body = std::move(message.body());
    ++shared_.in_flight;
    try {
      shared_.handler(std::move(request),
                      HttpReply(std::make_shared<HttpReply::State>(shared_from_this())));
    } catch (const std::exception& e) {  // its reply, dropped unanswered, answers 500
      spdlog::error("http: the handler of {} failed: {}", ToString(target), e.what());
    }
  }

  // A read that ended: a request the server refuses itself, or a connection that is done.
  void Failed(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return Refuse(
          413, "request body over " + std::to_string(shared_.options.max_body_bytes) + " bytes");
    }
    if (IsProtocolError(ec) && ec != http::error::end_of_stream &&
        ec != http::error::partial_message) {
      return Refuse(400, "malformed HTTP request: " + ec.message());
    }
    Close();  // closed by the client, timed out, reset: nobody to answer
  }

  void Refuse(int status, const std::string& message) {
    keep_alive_ = false;  // the rest of the stream cannot be trusted (or is an unread body)
    Write(ErrorResponse(shared_, status, message), false, false);
  }

  // `counted`: the answer to a request handed to the handler (in_flight).
  void Write(HttpResponse r, bool keep_alive, bool counted) {
    keep_alive = keep_alive && !shared_.draining.load();
    response_ = {};
    response_.version(version_);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::server, "ember-gateway");
    response_.set(http::field::content_type, r.content_type);
    for (auto& [name, value] : r.headers) response_.set(name, value);
    response_.body() = std::move(r.body);
    response_.keep_alive(keep_alive);
    response_.prepare_payload();
    stream_.expires_after(shared_.options.idle_timeout);
    http::async_write(
        stream_, response_,
        [self = shared_from_this(), keep_alive, counted](beast::error_code ec, std::size_t) {
          if (counted) --self->shared_.in_flight;
          if (ec) return self->Close();
          if (!keep_alive) return self->Linger();
          self->ReadHeader();
        });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    // The socket closes with the session, when the last handler holding it returns.
  }

  // Closes after a last answer, reading and dropping what the client still sends for a while:
  // closing a socket with unread data resets the connection, and a client that is still
  // sending the body of a refused request would then lose the refusal before reading it.
  void Linger() {
    Close();
    stream_.expires_after(std::chrono::seconds(2));
    Drain();
  }

  void Drain() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(64 * 1024),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec) return;  // the client closed too, or time is up
                              self->buffer_.commit(n);
                              self->Drain();
                            });
  }

  Shared& shared_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  http::response<http::empty_body> continue_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
};

}  // namespace

struct HttpReply::State {
  explicit State(std::shared_ptr<Session> s) : session(std::move(s)) {}
  ~State() {
    if (sent.exchange(true)) return;
    Deliver([shared = &session->shared()] {
      return ErrorResponse(*shared, 500, "the request was dropped without an answer");
    });
  }

  void Deliver(std::function<HttpResponse()> make) {
    if (session->shared().stopped.load()) return;  // the loops are gone
    asio::dispatch(session->executor(), [session = session, make = std::move(make)] {
      HttpResponse response;
      try {
        response = make();
      } catch (const std::exception& e) {
        spdlog::error("http: making a response failed: {}", e.what());
        response = ErrorResponse(session->shared(), 500, e.what());
      }
      session->Answer(std::move(response));
    });
  }

  const std::shared_ptr<Session> session;
  std::atomic<bool> sent{false};
};

void HttpReply::Send(HttpResponse response) const {
  Send(std::function<HttpResponse()>([r = std::move(response)]() mutable { return std::move(r); }));
}

void HttpReply::Send(std::function<HttpResponse()> make) const {
  if (state_->sent.exchange(true)) return;
  state_->Deliver(std::move(make));
}

struct HttpServer::Core : Shared {
  using Shared::Shared;

  // Accepts the next connection onto the next loop (round robin). On loop 0.
  void Accept() {
    Loop& loop = *loops[next++ % loops.size()];
    acceptor->async_accept(loop.context, [this, &loop](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
      if (ec) {  // e.g. out of file descriptors: try again shortly rather than spin
        spdlog::warn("ember-gateway: accept failed: {}", ec.message());
        retry->expires_after(std::chrono::milliseconds(100));
        retry->async_wait([this](beast::error_code e) {
          if (!e) Accept();
        });
        return;
      }
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      asio::post(loop.context, [this, socket = std::move(socket)]() mutable {
        std::make_shared<Session>(*this, std::move(socket))->Start();
      });
      Accept();
    });
  }

  std::vector<std::unique_ptr<Loop>> loops;
  std::optional<tcp::acceptor> acceptor;  // on loop 0
  std::optional<asio::steady_timer> retry;
  std::size_t next = 0;  // loop 0's
  bool started = false;
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler, HttpErrorBody error_body)
    : core_(std::make_unique<Core>(std::move(options), std::move(handler), std::move(error_body))) {
  const int loops = std::max(1, core_->options.threads);
  for (int i = 0; i < loops; ++i) core_->loops.push_back(std::make_unique<Loop>());
  core_->retry.emplace(core_->loops.front()->context);
}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::Bind() {
  const HttpServerOptions& o = core_->options;
  asio::io_context& context = core_->loops.front()->context;
  try {
    tcp::resolver resolver(context);
    const tcp::endpoint endpoint =
        resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive)->endpoint();
    tcp::acceptor& acceptor = core_->acceptor.emplace(context);
    acceptor.open(endpoint.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen(asio::socket_base::max_listen_connections);
    return acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    core_->acceptor.reset();
    throw std::runtime_error("cannot bind " + o.host + ":" + std::to_string(o.port) + ": " +
                             e.what());
  }
}

void HttpServer::Start() {
  if (!core_->acceptor) throw std::logic_error("HttpServer::Start before Bind");
  core_->started = true;
  asio::post(core_->loops.front()->context, [core = core_.get()] { core->Accept(); });
  for (auto& loop : core_->loops) {
    loop->thread = std::thread([context = &loop->context] {
      NameThisThread("ember-http");
      context->run();
    });
  }
}

void HttpServer::Stop() {
  Core& core = *core_;
  if (!core.started || core.stopped.load()) return;
  core.draining = true;
  asio::post(core.loops.front()->context, [&core] {
    beast::error_code ignored;
    core.acceptor->close(ignored);
    core.retry->cancel();
  });
  // Bounded: each request in flight ends by its own deadline at the latest.
  const auto deadline = std::chrono::steady_clock::now() + core.options.drain_timeout;
  while (core.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  core.stopped = true;
  for (auto& loop : core.loops) {
    loop->work.reset();
    loop->context.stop();
  }
  for (auto& loop : core.loops) {
    if (loop->thread.joinable()) loop->thread.join();
  }
}

}  // namespace ember::gateway
