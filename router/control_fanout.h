// Model management across workers: a client's load or unload goes to every worker it concerns
// and is answered once, when the last of them has replied, died or run out of time. Owned by
// the router thread.
#ifndef EMBER_ROUTER_CONTROL_FANOUT_H_
#define EMBER_ROUTER_CONTROL_FANOUT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/messages.h"
#include "router/request_table.h"
#include "router/transport.h"
#include "router/worker_registry.h"

namespace ember::router {

class ControlFanout {
 public:
  ControlFanout(Transport& transport, WorkerRegistry& workers, RequestTable& requests,
                std::chrono::milliseconds default_timeout);

  // Sends `control` (load or unload) to its workers: those it names, else every worker for
  // a load (those without the model say so and are left out of the reply) and every worker
  // that has the model for an unload. Refuses at once, with a typed error, when it names an
  // unknown worker or nobody could act on it.
  void Start(const std::string& client, std::uint64_t client_request_id,
             protocol::ControlRequest control, Clock::time_point now);
  // Whether `id` (a worker's answer) belongs to an operation in progress.
  bool Owns(std::uint64_t id) const { return pending_.contains(id); }
  // One worker's answer to operation `id`; the client hears when all are in.
  void Record(std::uint64_t id, protocol::ControlResult result);
  // `worker` went away: operations waiting on it count it as UNAVAILABLE.
  void WorkerGone(const std::string& worker, const std::string& why);
  // Operations past their deadline are answered, the missing workers as TIMEOUT.
  void Expire(Clock::time_point now);

 private:
  struct Pending {
    std::string client;
    std::uint64_t client_request_id = 0;
    bool implicit_targets = false;  // the client named no workers
    protocol::ControlReply reply;
    std::set<std::string> waiting;  // workers yet to answer
    Clock::time_point deadline;
  };
  // Answers `it` if nobody is left to wait for.
  void Finish(std::map<std::uint64_t, Pending>::iterator it);

  Transport& transport_;
  WorkerRegistry& workers_;
  RequestTable& requests_;
  const std::chrono::milliseconds default_timeout_;
  std::map<std::uint64_t, Pending> pending_;  // by router id (RequestTable::NewId)
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_CONTROL_FANOUT_H_
