// One DEALER connection to a router's frontend, opened as both SDK clients open it
// (client/client.h, client/async_client.h): its own ZeroMQ context, CURVE if keys are given,
// ZMTP heartbeats so that a hung or partitioned router is left within 3 heartbeats, nothing
// queued for a router not connected (ZMQ_IMMEDIATE: a send fails instead, so a request that
// could not be sent certainly never reached it), and a monitor that says when the connection
// is made or lost. Used by one thread at a time, as its socket.
#ifndef EMBER_CLIENT_ROUTER_CONNECTION_H_
#define EMBER_CLIENT_ROUTER_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/curve.h"

namespace ember {

// Past a request's own deadline the router answers TIMEOUT itself; a client waits this much
// longer before it concludes that the router is unreachable.
inline constexpr std::chrono::milliseconds kReplyGrace{250};

class RouterConnection {
 public:
  // Connects (asynchronously, as ZeroMQ does) to `endpoint`.
  static std::unique_ptr<RouterConnection> Open(const std::string& endpoint,
                                                const curve::ClientKeys& curve,
                                                std::chrono::milliseconds heartbeat);

  zmq::socket_t& socket() { return socket_; }
  zmq::socket_t& monitor() { return monitor_; }
  const std::string& endpoint() const { return endpoint_; }

  // What the monitor reported since the last call (each call drains the reports, so one is
  // seen by one call): the connection made (handshake done), lost, or both.
  struct Events {
    bool connected = false;
    bool lost = false;
  };
  Events Drain();

 private:
  explicit RouterConnection(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  const std::string endpoint_;
  zmq::context_t context_{1};
  zmq::socket_t socket_{context_, zmq::socket_type::dealer};
  zmq::socket_t monitor_{context_, zmq::socket_type::pair};  // on the socket's monitor
};

}  // namespace ember

#endif  // EMBER_CLIENT_ROUTER_CONNECTION_H_
