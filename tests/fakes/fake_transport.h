// A router Transport that records what the router's components send, for their unit tests
// (tests/router_components_test.cpp). Peers can be made unreachable to test that path.
#ifndef EMBER_TESTS_FAKES_FAKE_TRANSPORT_H_
#define EMBER_TESTS_FAKES_FAKE_TRANSPORT_H_

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "router/transport.h"

namespace ember::testing {

struct Sent {
  std::string peer;
  protocol::Command command;
  std::uint64_t request_id;
  std::string body;
  std::chrono::milliseconds budget{0};  // a REQUEST's (RequestToWorker)
};

class FakeTransport : public router::Transport {
 public:
  bool ToClient(std::string_view client, protocol::Command command, std::uint64_t request_id,
                zmq::message_t body) override {
    to_clients.push_back({std::string(client), command, request_id, body.to_string()});
    return true;
  }
  bool ToWorker(std::string_view worker, protocol::Command command, std::uint64_t request_id,
                zmq::message_t body) override {
    if (unreachable.contains(std::string(worker))) return false;
    to_workers.push_back({std::string(worker), command, request_id, body.to_string()});
    return true;
  }
  bool RequestToWorker(std::string_view worker, std::uint64_t request_id, zmq::message_t body,
                       std::chrono::milliseconds budget) override {
    if (unreachable.contains(std::string(worker))) return false;
    to_workers.push_back(
        {std::string(worker), protocol::Command::kRequest, request_id, body.to_string(), budget});
    return true;
  }

  std::vector<Sent> to_clients, to_workers;
  std::set<std::string> unreachable;  // sends to these fail, as to a vanished peer
};

}  // namespace ember::testing

#endif  // EMBER_TESTS_FAKES_FAKE_TRANSPORT_H_
