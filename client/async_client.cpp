#include "client/async_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <zmq.hpp>

#include "client/embed_call.h"
#include "client/router_connection.h"
#include "client/router_list.h"
#include "common/protocol.h"
#include "common/thread_name.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::Command;

constexpr char kWakeEndpoint[] = "inproc://ember-async-client-wake";

// One request, from Embed to its answer.
struct Request {
  std::string body;  // the encoded EmbedRequest, resent as is
  std::size_t texts = 0;
  protocol::Task task = protocol::Task::kEmbed;  // what the reply must answer
  std::chrono::milliseconds timeout{};
  int attempts = 1;  // in all
  AsyncClient::Callback done;
  // Owned by the I/O thread from here on.
  int attempt = 0;
  bool sent = false;            // this attempt left for the router
  Clock::time_point sent_at{};  // when it left, if sent
  std::multimap<Clock::time_point, std::uint64_t>::iterator deadline;
};

}  // namespace

struct AsyncClient::Impl {
  Impl(std::vector<std::string> endpoints, ClientOptions client_options)
      : options(std::move(client_options)),
        router_count(static_cast<int>(endpoints.size())),
        routers(endpoints, RouterList::PickHome(options.home, endpoints.size()), options.backoff) {
    wake_out.set(zmq::sockopt::linger, 0);
    wake_out.bind(kWakeEndpoint);
    wake_in.set(zmq::sockopt::linger, 0);
    wake_in.connect(kWakeEndpoint);
    io = std::thread([this] {
      NameThisThread("ember-client-io");
      Run();
    });
  }

  // The I/O thread: sends what callers queued, receives, fails over, until stopped.
  void Run();
  // Takes what callers queued (the caller side of the hand-off is Embed).
  void TakeQueued(Clock::time_point now);
  // Sends the unsent requests while the connection takes them.
  void Flush(Clock::time_point now);
  void Receive(Clock::time_point now);
  // Moves to the next router and resends every unanswered request there; a request out of
  // attempts fails with (code, message) instead.
  void FailOver(ErrorCode code, const std::string& message, Clock::time_point now);
  // Settles the requests whose deadline passed. A late request whose router answered anything
  // since it left is the request's own trouble (a slow or lost worker), not the router's: it
  // alone is resent there under a new id (the router dispatches it afresh), or fails TIMEOUT
  // out of attempts, and every other request stays where it is. A router silent since then
  // (hung; a dead one is noticed by heartbeats) or never reached is left by all of them.
  void Expire(Clock::time_point now);
  void Connect(std::size_t router, Clock::time_point now);
  void Schedule(std::uint64_t id, Request& r, Clock::time_point now);
  // Settles the request with `outcome`: it leaves the books first (in_flight() never counts a
  // request whose outcome is out), then its callback runs.
  void Finish(std::unordered_map<std::uint64_t, Request>::iterator it, Outcome outcome);

  const ClientOptions options;
  const int router_count;  // read by callers (the I/O thread owns `routers`)
  zmq::context_t context{1};
  // Callers' side of the wake-up: used under mu by whichever thread queues.
  zmq::socket_t wake_in{context, zmq::socket_type::push};
  zmq::socket_t wake_out{context, zmq::socket_type::pull};  // the I/O thread's

  std::mutex mu;
  std::vector<Request> queued;  // guarded by mu
  bool signalled = false;       // a wake-up is on its way; guarded by mu
  bool stop = false;            // guarded by mu
  std::atomic<std::size_t> in_flight{0};

  // The I/O thread's own.
  RouterList routers;
  std::size_t router = 0;
  std::unique_ptr<RouterConnection> conn;
  bool connected = false;
  Clock::time_point connect_deadline{};
  Clock::time_point last_answer{};  // the last message from this connection's router
  std::unordered_map<std::uint64_t, Request> pending;
  std::multimap<Clock::time_point, std::uint64_t> deadlines;  // when each is given up on
  std::vector<std::uint64_t> unsent;                          // in the order to send
  std::uint64_t next_id = 1;

  std::thread io;  // last: starts once everything above is built
};

AsyncClient::AsyncClient(const std::string& endpoints, curve::ClientKeys curve)
    : AsyncClient(RouterList::Split(endpoints), ClientOptions{.curve = std::move(curve)}) {}

AsyncClient::AsyncClient(std::vector<std::string> endpoints, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(endpoints), std::move(options))) {}

AsyncClient::~AsyncClient() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
    impl_->wake_in.send(zmq::str_buffer("x"), zmq::send_flags::dontwait);
  }
  impl_->io.join();
}

std::size_t AsyncClient::in_flight() const { return impl_->in_flight.load(); }

namespace {

// A callback that fulfils a promise, for the future-returning calls.
AsyncClient::Callback Fulfil(std::future<Embeddings>* future) {
  auto promise = std::make_shared<std::promise<Embeddings>>();
  *future = promise->get_future();
  return [promise](AsyncClient::Outcome outcome) {
    if (Error* error = std::get_if<Error>(&outcome)) {
      promise->set_exception(std::make_exception_ptr(std::move(*error)));
    } else {
      promise->set_value(std::move(std::get<Embeddings>(outcome)));
    }
  };
}

}  // namespace

std::future<Embeddings> AsyncClient::Embed(std::string_view model, std::vector<std::string> texts,
                                           const EmbedOptions& options) {
  std::future<Embeddings> future;
  Embed(model, std::move(texts), options, Fulfil(&future));
  return future;
}

void AsyncClient::Embed(std::string_view model, std::vector<std::string> texts,
                        const EmbedOptions& options, Callback done) {
  const std::size_t count = texts.size();  // before the texts move into the body
  Queue(embed_call::EncodeRequest(model, std::move(texts), options), count, options,
        embed_call::EmbedTask(options), std::move(done));
}

std::future<Embeddings> AsyncClient::Tokenize(std::string_view model,
                                              std::vector<std::string> texts,
                                              const EmbedOptions& options) {
  std::future<Embeddings> future;
  Tokenize(model, std::move(texts), options, Fulfil(&future));
  return future;
}

void AsyncClient::Tokenize(std::string_view model, std::vector<std::string> texts,
                           const EmbedOptions& options, Callback done) {
  const std::size_t count = texts.size();
  Queue(embed_call::EncodeTokenizeRequest(model, std::move(texts), options), count, options,
        protocol::Task::kTokenize, std::move(done));
}

std::future<Embeddings> AsyncClient::Decode(std::string_view model,
                                            const std::vector<std::vector<std::uint32_t>>& ids,
                                            const EmbedOptions& options) {
  std::future<Embeddings> future;
  Decode(model, ids, options, Fulfil(&future));
  return future;
}

void AsyncClient::Decode(std::string_view model, const std::vector<std::vector<std::uint32_t>>& ids,
                         const EmbedOptions& options, Callback done) {
  Queue(embed_call::EncodeDecodeRequest(model, ids, options), ids.size(), options,
        protocol::Task::kDecode, std::move(done));
}

std::future<Embeddings> AsyncClient::Score(std::string_view model, std::vector<std::string> texts,
                                           std::vector<std::string> pairs,
                                           const EmbedOptions& options) {
  std::future<Embeddings> future;
  Score(model, std::move(texts), std::move(pairs), options, Fulfil(&future));
  return future;
}

void AsyncClient::Score(std::string_view model, std::vector<std::string> texts,
                        std::vector<std::string> pairs, const EmbedOptions& options,
                        Callback done) {
  const std::size_t count = texts.size();
  Queue(embed_call::EncodeScoreRequest(model, std::move(texts), std::move(pairs), options), count,
        options, protocol::Task::kScore, std::move(done));
}

void AsyncClient::Queue(std::string body, std::size_t texts, const EmbedOptions& options,
                        protocol::Task task, Callback done) {
  Request r;
  r.texts = texts;
  r.task = task;
  r.timeout = options.timeout;
  r.attempts = options.attempts > 0 ? options.attempts : impl_->router_count;
  r.body = std::move(body);
  r.done = std::move(done);
  ++impl_->in_flight;
  std::lock_guard lock(impl_->mu);
  impl_->queued.push_back(std::move(r));
  if (!impl_->signalled) {
    impl_->signalled = true;
    impl_->wake_in.send(zmq::str_buffer("x"), zmq::send_flags::dontwait);
  }
}

void AsyncClient::Impl::Connect(std::size_t to, Clock::time_point now) {
  router = to;
  conn = RouterConnection::Open(routers.endpoint(to), options.curve, options.heartbeat);
  conn->socket().set(zmq::sockopt::sndtimeo, 0);  // the I/O thread never blocks on a send
  connected = false;
  connect_deadline = now + options.connect_timeout;
}

void AsyncClient::Impl::Schedule(std::uint64_t id, Request& r, Clock::time_point now) {
  ++r.attempt;
  r.sent = false;
  r.deadline = deadlines.emplace(now + r.timeout + kReplyGrace, id);
  unsent.push_back(id);
}

void AsyncClient::Impl::Finish(std::unordered_map<std::uint64_t, Request>::iterator it,
                               Outcome outcome) {
  const Callback done = std::move(it->second.done);
  deadlines.erase(it->second.deadline);
  pending.erase(it);
  --in_flight;
  done(std::move(outcome));
}

void AsyncClient::Impl::TakeQueued(Clock::time_point now) {
  zmq::message_t drop;
  while (wake_out.recv(drop, zmq::recv_flags::dontwait)) {
  }
  std::vector<Request> taken;
  {
    std::lock_guard lock(mu);
    taken.swap(queued);
    signalled = false;
  }
  // With no connection, what waits to be sent waits at most connect_timeout, as a Client call.
  if (!taken.empty() && unsent.empty() && !connected) {
    connect_deadline = std::max(connect_deadline, now + options.connect_timeout);
  }
  for (Request& r : taken) {
    const std::uint64_t id = next_id++;
    auto [it, inserted] = pending.emplace(id, std::move(r));
    Schedule(id, it->second, now);
  }
}

void AsyncClient::Impl::Flush(Clock::time_point now) {
  std::size_t sent = 0;
  for (; sent < unsent.size(); ++sent) {
    const auto it = pending.find(unsent[sent]);
    if (it == pending.end()) continue;  // answered or failed meanwhile
    // No waiting: with no connection (ZMQ_IMMEDIATE) the send fails and the rest waits.
    if (!protocol::SendDealt(conn->socket(), Command::kRequest, it->first, it->second.body)) break;
    it->second.sent = true;
    it->second.sent_at = now;
  }
  unsent.erase(unsent.begin(), unsent.begin() + static_cast<std::ptrdiff_t>(sent));
}

void AsyncClient::Impl::FailOver(ErrorCode code, const std::string& message,
                                 Clock::time_point now) {
  routers.Failed(router, now);
  Connect(routers.Pick(now), now);  // a fresh socket: nothing queued for the old router
  unsent.clear();
  std::vector<std::uint64_t> ids;
  ids.reserve(pending.size());
  for (const auto& [id, r] : pending) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // resent in the order they were first sent
  for (const std::uint64_t id : ids) {
    const auto it = pending.find(id);
    if (it->second.attempt >= it->second.attempts) {
      Finish(it, Error(code, message));
      continue;
    }
    deadlines.erase(it->second.deadline);
    Schedule(id, it->second, now);
  }
}

void AsyncClient::Impl::Expire(Clock::time_point now) {
  while (!deadlines.empty() && deadlines.begin()->first <= now) {
    const std::uint64_t id = deadlines.begin()->second;
    const auto it = pending.find(id);
    Request& late = it->second;
    const std::string within = " within " + std::to_string(late.timeout.count()) + " ms";
    if (!late.sent) {  // never left: the router was not reachable in the request's time
      FailOver(ErrorCode::kUnavailable, "could not reach router " + conn->endpoint() + within, now);
      return;
    }
    const std::string message = "no reply from router " + conn->endpoint() + within;
    if (last_answer < late.sent_at) {  // nothing heard since it left: the router is hung
      FailOver(ErrorCode::kTimeout, message, now);
      return;
    }
    if (late.attempt >= late.attempts) {
      Finish(it, Error(ErrorCode::kTimeout, message));
      continue;
    }
    // A new id: an answer to the old one, should it come, is a late answer and dropped.
    Request moved = std::move(late);
    deadlines.erase(moved.deadline);
    pending.erase(it);
    const std::uint64_t fresh = next_id++;
    Schedule(fresh, pending.emplace(fresh, std::move(moved)).first->second, now);
  }
}

void AsyncClient::Impl::Receive(Clock::time_point now) {
  std::string error;
  while (auto received = protocol::ReceiveDealt(conn->socket(), &error)) {
    if (!*received) continue;  // malformed: cannot tell whose; that request times out
    const protocol::Message& message = **received;
    const auto it = pending.find(message.request_id);
    last_answer = now;                  // the router is alive, whatever the answer
    if (it == pending.end()) continue;  // a late answer to a request already settled
    routers.Answered(router);
    Request& r = it->second;
    if (message.command == Command::kError) {
      Error e = embed_call::ErrorOf(message.body());
      if (e.code() == ErrorCode::kUnavailable && r.attempt < r.attempts) {
        FailOver(e.code(), e.what(), now);  // as Client: UNAVAILABLE moves to the next router
        return;                             // this connection is gone
      }
      Finish(it, std::move(e));
      continue;
    }
    if (message.command != Command::kReply) {
      Finish(it, Error(ErrorCode::kInternal,
                       "unexpected " + std::string(protocol::CommandName(message.command))));
      continue;
    }
    const int attempt = r.attempt;
    try {
      Embeddings e = embed_call::EmbeddingsOf(message.body(), r.texts, attempt,
                                              routers.endpoint(router), r.task);
      Finish(it, std::move(e));
    } catch (const Error& e) {
      Finish(it, e);
    }
  }
}

void AsyncClient::Impl::Run() {
  Connect(routers.Pick(Clock::now()), Clock::now());
  for (;;) {
    auto now = Clock::now();
    // Sleep until a caller queues, the router answers or the connection changes, or the
    // first deadline (a request's, or the connection's while requests wait to be sent).
    Clock::time_point wake = Clock::time_point::max();
    if (!deadlines.empty()) wake = deadlines.begin()->first;
    if (!unsent.empty() && !connected) wake = std::min(wake, connect_deadline);
    const auto wait = wake == Clock::time_point::max()
                          ? std::chrono::milliseconds(-1)
                          : std::max(std::chrono::milliseconds(0),
                                     std::chrono::ceil<std::chrono::milliseconds>(wake - now));
    zmq::pollitem_t items[] = {
        {wake_out.handle(), 0, ZMQ_POLLIN, 0},
        {conn->socket().handle(), 0,
         static_cast<short>(ZMQ_POLLIN | (unsent.empty() ? 0 : ZMQ_POLLOUT)), 0},
        {conn->monitor().handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, 3, wait);
    now = Clock::now();
    if (items[0].revents & ZMQ_POLLIN) {
      TakeQueued(now);
      std::lock_guard lock(mu);
      if (stop) break;
    }
    if (items[2].revents & ZMQ_POLLIN) {
      const RouterConnection::Events events = conn->Drain();
      connected |= events.connected;
      if (events.lost) {
        connected = false;
        // Answers already received still count: take them before leaving the connection.
        Receive(now);
        if (!pending.empty()) {
          FailOver(ErrorCode::kUnavailable,
                   "lost the connection to router " + conn->endpoint() + " before it answered",
                   now);
          continue;
        }
      }
    }
    if (items[1].revents & ZMQ_POLLIN) Receive(now);
    if (!unsent.empty()) Flush(now);
    if (!unsent.empty() && !connected && now >= connect_deadline) {
      FailOver(ErrorCode::kUnavailable,
               "could not reach router " + conn->endpoint() + " within " +
                   std::to_string(options.connect_timeout.count()) + " ms",
               now);
      continue;
    }
    Expire(now);
  }
  // Closed: whatever is left fails, queued or in flight.
  for (auto it = pending.begin(); it != pending.end(); it = pending.begin()) {
    Finish(it, Error(ErrorCode::kUnavailable, "client closed before the router answered"));
  }
}

}  // namespace ember
