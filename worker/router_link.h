// One of a worker's connections to a router: a DEALER to its backend endpoint, kept by the
// ZeroMQ guide's Paranoid Pirate rules, per connection. The link is live while the router
// has been heard within `liveness` heartbeats; a link that falls silent closes its socket
// (dropping what was queued for a router that may be gone) and reconnects after a backoff
// that doubles up to two heartbeats, without ever blocking the worker's loop, so the other
// links keep serving meanwhile.
//
// A worker has one link per router it is given (--router A --router B); Worker decides what
// goes over which (worker/worker.h). Used by the worker's socket thread only.
#ifndef EMBER_WORKER_ROUTER_LINK_H_
#define EMBER_WORKER_ROUTER_LINK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "common/curve.h"
#include "common/protocol.h"

namespace ember::worker {

class RouterLink {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::string endpoint;  // the router's backend, e.g. tcp://router-0:5556
    std::string id;        // our routing id (the same on every link)
    std::chrono::milliseconds heartbeat_interval{1000};
    int liveness = 3;
    curve::ClientKeys curve;
  };

  RouterLink(zmq::context_t& context, Options options);

  const std::string& endpoint() const { return options_.endpoint; }
  // Null while the link waits out its reconnect backoff.
  zmq::socket_t* socket() { return socket_.get(); }

  // Opens a fresh socket now. The caller then sends READY.
  void Connect(Clock::time_point now);
  // The router spoke: the link is live, and the backoff starts over.
  void Heard(Clock::time_point now);
  bool Live(Clock::time_point now) const;

  // What Tick() asks of the caller.
  enum class Step {
    kNone,
    kDropped,    // fell silent: the socket is closed; the link is no longer live
    kReconnect,  // the backoff is over: a fresh socket is open; send READY on it
  };
  // Call every loop turn: drops a silent link and reopens it when its backoff is over.
  Step Tick(Clock::time_point now);
  // Whether a heartbeat is due now (and, if so, schedules the next one).
  bool HeartbeatDue(Clock::time_point now);

  // Never blocks: false when the message could not be queued (no connection, or we are
  // waiting to reconnect). The router re-dispatches what it does not hear back about.
  bool Send(protocol::Command command, std::uint64_t request_id, std::string_view body);
  bool Send(std::span<zmq::message_t> frames);

  // The highest READY sequence number this router has acknowledged.
  std::uint64_t acked() const { return acked_; }
  void Acked(std::uint64_t seq) { acked_ = std::max(acked_, seq); }

 private:
  zmq::context_t& context_;
  const Options options_;
  std::unique_ptr<zmq::socket_t> socket_;
  Clock::time_point heard_{};         // last message from the router
  Clock::time_point connected_{};     // when the current socket opened
  Clock::time_point reconnect_at_{};  // while socket_ is null
  Clock::time_point next_heartbeat_{};
  std::chrono::milliseconds backoff_;
  bool ever_heard_ = false;  // on this socket
  std::uint64_t acked_ = 0;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_ROUTER_LINK_H_
