// ember's asynchronous C++ client: many embedding requests in flight on one connection, so
// that a program with few threads can keep a GPU worker busy (a blocking Client puts one
// request in flight per thread).
//
//   ember::AsyncClient client("tcp://127.0.0.1:5555");   // or "tcp://a:5555,tcp://b:5555"
//   std::vector<std::future<ember::Embeddings>> replies;
//   for (const std::string& text : texts) replies.push_back(client.Embed("minilm", {text}));
//   for (auto& reply : replies) Use(reply.get());  // ember::Error on failure, as Client::Embed
//
// Or with a callback instead of a future, for an event loop that must never block on one
// (ember-gateway): client.Embed("minilm", {text}, {}, [](ember::AsyncClient::Outcome o) {...});
//
// Thread-safe: any thread may call Embed at any time. The request is encoded on the caller's
// thread and handed to an I/O thread of the client's own, which owns the router connection,
// sends, matches replies by request id and fulfils the futures.
//
// Failover as Client's (client/client.h, client/router_list.h): when the connection to the
// router is lost (heartbeats), the router answers UNAVAILABLE, it answers nothing at all while
// a request waits out its timeout (+ 250 ms), or it cannot be reached within
// ClientOptions::connect_timeout, the client moves to the next router and resends every
// request still unanswered there (embedding is idempotent), each at most EmbedOptions::attempts
// times in all (0: once per router); one out of attempts fails with that error. A request late
// while its router answers others is its own trouble (a slow or lost worker), not the
// connection's: it alone is resent to that router, or fails TIMEOUT, and the others stay. Unlike
// Client it does not fail back to its home router once it moved: it stays with the router that
// answers.
//
// A router admits at most its max-in-flight-per-client requests (4096 by default) from one
// connection; beyond that they are answered OVERLOADED. A program that keeps more in flight
// uses several AsyncClients, or raises that router setting.
#ifndef EMBER_CLIENT_ASYNC_CLIENT_H_
#define EMBER_CLIENT_ASYNC_CLIENT_H_

#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "client/client.h"

namespace ember {

class AsyncClient {
 public:
  explicit AsyncClient(const std::string& endpoints,
                       curve::ClientKeys curve = curve::ClientKeys::FromEnvironment());
  AsyncClient(std::vector<std::string> endpoints, ClientOptions options);
  // Fails every request not yet answered with UNAVAILABLE ("client closed"), then joins the
  // I/O thread. Futures obtained from Embed stay valid.
  ~AsyncClient();
  AsyncClient(const AsyncClient&) = delete;
  AsyncClient& operator=(const AsyncClient&) = delete;

  // How a request ended: its reply, or the error (typed code) Client::Embed would have thrown.
  using Outcome = std::variant<Embeddings, Error>;
  // Called exactly once per request, on the client's I/O thread, after the request has left
  // in_flight(). It holds up every other request of the client while it runs: hand anything
  // longer than a few microseconds to a thread of your own. It must not throw, nor destroy the
  // client (whose destructor joins that thread); it may queue more requests.
  using Callback = std::function<void(Outcome)>;

  // Queues an embedding of `texts` with `model` and returns at once. The future yields the
  // vectors or throws ember::Error (typed code) exactly as Client::Embed would.
  std::future<Embeddings> Embed(std::string_view model, std::vector<std::string> texts,
                                const EmbedOptions& options = {});
  void Embed(std::string_view model, std::vector<std::string> texts, const EmbedOptions& options,
             Callback done);
  // Queues a tokenization of `texts` with `model`, as Client::Tokenize.
  std::future<Embeddings> Tokenize(std::string_view model, std::vector<std::string> texts,
                                   const EmbedOptions& options = {});
  void Tokenize(std::string_view model, std::vector<std::string> texts, const EmbedOptions& options,
                Callback done);
  // Queues a decode of `ids` with `model`, as Client::Decode.
  std::future<Embeddings> Decode(std::string_view model,
                                 const std::vector<std::vector<std::uint32_t>>& ids,
                                 const EmbedOptions& options = {});
  void Decode(std::string_view model, const std::vector<std::vector<std::uint32_t>>& ids,
              const EmbedOptions& options, Callback done);
  // Queues a score of `texts` (each paired with pairs[i] when `pairs` is not empty) with a
  // cross-encoder or classifier `model`, as Client::Score.
  std::future<Embeddings> Score(std::string_view model, std::vector<std::string> texts,
                                std::vector<std::string> pairs, const EmbedOptions& options = {});
  void Score(std::string_view model, std::vector<std::string> texts, std::vector<std::string> pairs,
             const EmbedOptions& options, Callback done);

  // Requests queued or sent and not yet answered.
  std::size_t in_flight() const;

 private:
  struct Impl;
  // Queues an encoded request of `texts` texts for `task`; `done` gets its outcome.
  void Queue(std::string body, std::size_t texts, const EmbedOptions& options, protocol::Task task,
             Callback done);

  std::unique_ptr<Impl> impl_;
};

}  // namespace ember

#endif  // EMBER_CLIENT_ASYNC_CLIENT_H_
