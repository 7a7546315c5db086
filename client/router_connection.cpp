#include "client/router_connection.h"

#include <cstring>

namespace ember {
namespace {

// Each connection has a context of its own, so the name is private to it.
constexpr char kMonitorEndpoint[] = "inproc://ember-client-monitor";

}  // namespace

std::unique_ptr<RouterConnection> RouterConnection::Open(const std::string& endpoint,
                                                         const curve::ClientKeys& curve,
                                                         std::chrono::milliseconds heartbeat) {
  std::unique_ptr<RouterConnection> c(new RouterConnection(endpoint));
  zmq::socket_t& s = c->socket_;
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::reconnect_ivl, 100);
  s.set(zmq::sockopt::reconnect_ivl_max, 2000);
  // Queue nothing for a router we are not connected to: the send fails instead, and the
  // request goes to the next router, certainly not received by this one.
  s.set(zmq::sockopt::immediate, 1);
  // No limit of ZeroMQ's own on messages queued either way: AsyncClient keeps thousands of
  // requests in flight, and both clients bound what they send by their own rules.
  s.set(zmq::sockopt::sndhwm, 0);
  s.set(zmq::sockopt::rcvhwm, 0);
  const int ms = static_cast<int>(heartbeat.count());
  s.set(zmq::sockopt::heartbeat_ivl, ms);
  s.set(zmq::sockopt::heartbeat_timeout, 3 * ms);
  curve::MakeClient(s, curve);
  if (zmq_socket_monitor(s.handle(), kMonitorEndpoint,
                         ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED) != 0) {
    throw zmq::error_t();
  }
  c->monitor_.set(zmq::sockopt::linger, 0);
  c->monitor_.connect(kMonitorEndpoint);
  s.connect(endpoint);
  return c;
}

RouterConnection::Events RouterConnection::Drain() {
  Events events;
  for (;;) {
    zmq::message_t event;
    if (!monitor_.recv(event, zmq::recv_flags::dontwait)) return events;
    zmq::message_t address;  // the second frame: the endpoint
    (void)monitor_.recv(address, zmq::recv_flags::dontwait);
    std::uint16_t id = 0;
    if (event.size() >= sizeof id) std::memcpy(&id, event.data(), sizeof id);
    events.connected |= id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
    events.lost |= id == ZMQ_EVENT_DISCONNECTED;
  }
}

}  // namespace ember
