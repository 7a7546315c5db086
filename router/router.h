// The ember router: a broker between clients (frontend ROUTER socket) and
// workers (backend ROUTER socket), in the manner of the ZeroMQ guide's
// Majordomo broker, with many requests in flight per worker.
//
// One thread owns both sockets and all state. Each client request gets a
// router-wide id; the router remembers who asked and what, so it can answer
// the right client, resend the work if its worker dies, and time it out.
// Every accepted request gets exactly one reply: a result or a typed error.
#ifndef EMBER_ROUTER_ROUTER_H_
#define EMBER_ROUTER_ROUTER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/error_code.h"
#include "common/protocol.h"
#include "router/policy.h"
#include "router/worker_registry.h"

namespace ember::router {

struct RouterOptions {
  std::string frontend = "tcp://127.0.0.1:5555";  // clients connect here
  std::string backend = "tcp://127.0.0.1:5556";   // workers connect here
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;  // heartbeats a worker may miss before it is dead
  std::chrono::milliseconds default_timeout{30000};  // for requests without one
  int max_attempts = 3;                              // dispatches of one request before it fails
};

class Router {
 public:
  explicit Router(RouterOptions options);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Serves until `stop` becomes true.
  void Run(const std::atomic<bool>& stop);

 private:
  struct Pending {
    std::string client;  // routing id of the client
    std::uint64_t client_request_id = 0;
    std::string model;
    std::uint32_t version = 0;
    std::string body;    // the request body, kept for re-dispatch
    std::string worker;  // routing id of the worker it went to
    Clock::time_point deadline;
    int attempts = 0;
  };

  void HandleFrontend();
  void HandleBackend();
  void HandleRequest(const std::string& client, const protocol::Message& message);
  void HandleControl(const std::string& client, const protocol::Message& message);
  void HandleWorkerMessage(const std::string& worker, const protocol::Message& message);
  void HandleResult(WorkerState& worker, const protocol::Message& message);

  // Sends pending request `id` to a worker, or fails it. Returns false when
  // the request was answered with an error instead.
  bool Dispatch(std::uint64_t id);
  // Fails request `id` with a typed error and forgets it.
  void Fail(std::uint64_t id, ErrorCode code, const std::string& message);
  // Removes a worker and re-dispatches what it had in flight.
  void DropWorker(const std::string& id, const char* why);
  void Redispatch(const std::vector<std::uint64_t>& ids);

  void SendError(const std::string& client, std::uint64_t request_id, ErrorCode code,
                 const std::string& message);
  void HeartbeatWorkers(Clock::time_point now);
  void ExpireDeadlines(Clock::time_point now);

  RouterOptions options_;
  zmq::context_t context_;
  zmq::socket_t frontend_;
  zmq::socket_t backend_;
  WorkerRegistry workers_;
  std::unique_ptr<Policy> policy_;

  std::uint64_t next_id_ = 1;
  std::uint64_t requests_ = 0;
  std::unordered_map<std::uint64_t, Pending> pending_;
  // (deadline, id) min-heap; entries of answered requests are skipped lazily.
  using DeadlineEntry = std::pair<Clock::time_point, std::uint64_t>;
  std::priority_queue<DeadlineEntry, std::vector<DeadlineEntry>, std::greater<>> deadlines_;
  Clock::time_point next_heartbeat_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_ROUTER_H_
