// The router's two sockets as its components see them: send to a client, send to a worker.
// Components (request table, dispatcher, control fan-out) talk only to this seam, so their
// unit tests drive them with a fake that records what was sent (tests/fakes/fake_transport.h);
// ZmqTransport is the real one, over the frontend and backend ROUTER sockets that the
// router's poll loop owns.
#ifndef EMBER_ROUTER_TRANSPORT_H_
#define EMBER_ROUTER_TRANSPORT_H_

#include <chrono>
#include <cstdint>
#include <string_view>
#include <zmq.hpp>

#include "common/protocol.h"

namespace ember::router {

class Transport {
 public:
  virtual ~Transport() = default;
  // Each returns false when the peer is gone or its queue is full (nothing was sent). `body`
  // is sent as it is: a frame received from a peer (or copy()'d from one, which shares the
  // bytes) goes on without a copy; bytes built here go as zmq::message_t(bytes).
  virtual bool ToClient(std::string_view client, protocol::Command command,
                        std::uint64_t request_id, zmq::message_t body) = 0;
  virtual bool ToWorker(std::string_view worker, protocol::Command command,
                        std::uint64_t request_id, zmq::message_t body) = 0;
  // A REQUEST with the router's time left for it (protocol.h frame 4; 0: none), so that the
  // worker gives up on it when the router does.
  virtual bool RequestToWorker(std::string_view worker, std::uint64_t request_id,
                               zmq::message_t body, std::chrono::milliseconds budget) = 0;
};

// Over the router's frontend (clients) and backend (workers) ROUTER sockets, which must
// outlive it and are used from the thread that owns them.
class ZmqTransport : public Transport {
 public:
  ZmqTransport(zmq::socket_t& frontend, zmq::socket_t& backend)
      : frontend_(frontend), backend_(backend) {}

  bool ToClient(std::string_view client, protocol::Command command, std::uint64_t request_id,
                zmq::message_t body) override {
    return protocol::ForwardRouted(frontend_, client, command, request_id, std::move(body));
  }
  bool ToWorker(std::string_view worker, protocol::Command command, std::uint64_t request_id,
                zmq::message_t body) override {
    return protocol::ForwardRouted(backend_, worker, command, request_id, std::move(body));
  }
  bool RequestToWorker(std::string_view worker, std::uint64_t request_id, zmq::message_t body,
                       std::chrono::milliseconds budget) override {
    return protocol::ForwardRequest(backend_, worker, request_id, std::move(body),
                                    static_cast<std::uint32_t>(budget.count()));
  }

 private:
  zmq::socket_t& frontend_;
  zmq::socket_t& backend_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_TRANSPORT_H_
