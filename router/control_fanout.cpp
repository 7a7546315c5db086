#include "router/control_fanout.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "router/dispatcher.h"

namespace ember::router {

using protocol::ControlOp;

ControlFanout::ControlFanout(Transport& transport, WorkerRegistry& workers, RequestTable& requests,
                             std::chrono::milliseconds default_timeout)
    : transport_(transport),
      workers_(workers),
      requests_(requests),
      default_timeout_(default_timeout) {}

void ControlFanout::Start(const std::string& client, std::uint64_t client_request_id,
                          protocol::ControlRequest control, Clock::time_point now) {
  const std::string op(protocol::ControlOpName(control.op));
  if (control.model.empty()) {
    requests_.SendError(client, client_request_id, ErrorCode::kBadRequest,
                        op + " needs a model name");
    return;
  }
  std::set<std::string> targets;
  for (const auto& id : control.workers) {
    if (workers_.Find(id) == nullptr) {
      requests_.SendError(client, client_request_id, ErrorCode::kBadRequest,
                          "no worker '" + id + "'");
      return;
    }
    targets.insert(id);
  }
  if (targets.empty()) {
    for (const auto& [id, w] : workers_.workers()) {
      const bool has = std::ranges::any_of(w.models, [&](const protocol::ModelInfo& m) {
        return m.name == control.model && (control.version == 0 || m.version == control.version);
      });
      if (control.op == ControlOp::kLoad || has) targets.insert(id);
    }
  }
  if (targets.empty()) {
    if (workers_.workers().empty()) {
      requests_.SendError(client, client_request_id, ErrorCode::kUnavailable,
                          "no workers are connected");
    } else {
      requests_.SendError(client, client_request_id, ErrorCode::kUnknownModel,
                          UnknownModelMessage(control.model, control.version));
    }
    return;
  }
  const std::uint64_t id = requests_.NewId();
  Pending& pending = pending_[id];
  pending.client = client;
  pending.client_request_id = client_request_id;
  pending.implicit_targets = control.workers.empty();
  pending.reply.op = control.op;
  pending.reply.model = control.model;
  const auto timeout =
      control.timeout_ms > 0 ? std::chrono::milliseconds(control.timeout_ms) : default_timeout_;
  pending.deadline = now + timeout;
  // Workers get the op without a target list: it is about themselves.
  control.workers.clear();
  const std::string body = protocol::Encode(control);
  spdlog::info("event=control op={} model={} version={} workers={}", op, control.model,
               control.version, targets.size());
  for (const auto& w : targets) {
    if (transport_.ToWorker(w, protocol::Command::kControl, id, zmq::message_t(body))) {
      pending.waiting.insert(w);
    } else {
      pending.reply.results.push_back(
          {.worker = w, .code = ErrorCode::kUnavailable, .message = "worker unreachable"});
    }
  }
  Finish(pending_.find(id));
}

void ControlFanout::Record(std::uint64_t id, protocol::ControlResult result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending& c = it->second;
  if (c.waiting.erase(result.worker) == 0) return;  // a late or duplicate answer
  spdlog::info(
      "event=control_result op={} model={} worker={} version={} result={} millis={} "
      "message=\"{}\"",
      protocol::ControlOpName(c.reply.op), c.reply.model, result.worker, result.version,
      result.ok ? "ok" : ErrorCodeName(result.code), result.millis, result.message);
  c.reply.results.push_back(std::move(result));
  Finish(it);
}

void ControlFanout::WorkerGone(const std::string& worker, const std::string& why) {
  std::vector<std::uint64_t> waiting;
  for (const auto& [id, c] : pending_) {
    if (c.waiting.contains(worker)) waiting.push_back(id);
  }
  for (std::uint64_t id : waiting) {
    Record(id, {.worker = worker,
                .code = ErrorCode::kUnavailable,
                .message = "worker went away (" + why + ")"});
  }
}

void ControlFanout::Expire(Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto current = it++;
    Pending& c = current->second;
    if (c.deadline > now) continue;
    for (const auto& w : c.waiting) {
      c.reply.results.push_back({.worker = w,
                                 .code = ErrorCode::kTimeout,
                                 .message = "no answer before the deadline; the worker may "
                                            "still finish (see the model list)"});
    }
    c.waiting.clear();
    Finish(current);
  }
}

void ControlFanout::Finish(std::map<std::uint64_t, Pending>::iterator it) {
  Pending& c = it->second;
  if (!c.waiting.empty()) return;
  auto& results = c.reply.results;
  // Asked of every worker, "not in my repository" is no failure as long as some worker did
  // have the model.
  const auto not_here = [](const protocol::ControlResult& r) {
    return !r.ok && r.code == ErrorCode::kUnknownModel;
  };
  if (c.implicit_targets && c.reply.op == ControlOp::kLoad &&
      !std::ranges::all_of(results, not_here)) {
    std::erase_if(results, not_here);
  }
  transport_.ToClient(c.client, protocol::Command::kReply, c.client_request_id,
                      zmq::message_t(protocol::Encode(c.reply)));
  pending_.erase(it);
}

}  // namespace ember::router
