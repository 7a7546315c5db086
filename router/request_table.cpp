#include "router/request_table.h"

#include <algorithm>

#include "common/messages.h"

namespace ember::router {

using protocol::Command;

RequestTable::RequestTable(Transport& transport, RouterMetrics& metrics)
    : transport_(transport), metrics_(metrics) {}

PendingRequest& RequestTable::Add(std::uint64_t id, PendingRequest request) {
  ++client_in_flight_[request.client];
  return pending_[id] = std::move(request);
}

PendingRequest* RequestTable::Find(std::uint64_t id) {
  auto it = pending_.find(id);
  return it == pending_.end() ? nullptr : &it->second;
}

std::vector<std::uint64_t> RequestTable::Ids() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(pending_.size());
  for (const auto& [id, p] : pending_) ids.push_back(id);
  return ids;
}

std::size_t RequestTable::InFlight(const std::string& client) const {
  auto it = client_in_flight_.find(client);
  return it == client_in_flight_.end() ? 0 : it->second;
}

namespace {
// Stale deadline entries tolerated beyond the table's size before a rebuild: small tables
// never rebuild, and a rebuild's cost is spread over at least this many requests.
constexpr std::size_t kDeadlineSlack = 1024;
}  // namespace

void RequestTable::ArmDeadline(std::uint64_t id, Clock::time_point deadline) {
  PendingRequest* p = Find(id);
  if (p == nullptr) return;
  p->deadline = deadline;
  p->deadline_armed = true;
  deadlines_.emplace_back(deadline, id);
  std::push_heap(deadlines_.begin(), deadlines_.end(), std::greater<>{});
  if (deadlines_.size() > 2 * pending_.size() + kDeadlineSlack) CompactDeadlines();
}

void RequestTable::CompactDeadlines() {
  // Only each live request's current deadline stays (a re-armed one had older entries too).
  deadlines_.clear();
  for (const auto& [id, p] : pending_) {
    if (p.deadline_armed) deadlines_.emplace_back(p.deadline, id);
  }
  std::make_heap(deadlines_.begin(), deadlines_.end(), std::greater<>{});
}

void RequestTable::ExpireDeadlines(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.front().first <= now) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), std::greater<>{});
    const auto [deadline, id] = deadlines_.back();
    deadlines_.pop_back();
    // A request re-armed later (or answered) is not due.
    const PendingRequest* p = Find(id);
    if (p != nullptr && p->deadline <= now) {
      Fail(id, ErrorCode::kTimeout, "request deadline passed", now);
    }
  }
}

void RequestTable::Reply(std::uint64_t id, zmq::message_t body, Clock::time_point now) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  transport_.ToClient(it->second.client, Command::kReply, it->second.client_request_id,
                      std::move(body));
  CountOutcome(it->second.model, "ok", it->second.accepted_at, now);
  Forget(it);
}

void RequestTable::ForwardError(std::uint64_t id, ErrorCode code, zmq::message_t body,
                                Clock::time_point now) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  metrics_.CountError(ErrorCodeName(code));
  CountOutcome(it->second.model, ErrorCodeName(code), it->second.accepted_at, now);
  transport_.ToClient(it->second.client, Command::kError, it->second.client_request_id,
                      std::move(body));
  Forget(it);
}

void RequestTable::Fail(std::uint64_t id, ErrorCode code, const std::string& message,
                        Clock::time_point now) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  CountOutcome(it->second.model, ErrorCodeName(code), it->second.accepted_at, now);
  SendError(it->second.client, it->second.client_request_id, code, message);
  Forget(it);
}

void RequestTable::Refuse(const std::string& client, std::uint64_t client_request_id,
                          const std::string& model, ErrorCode code, const std::string& message,
                          Clock::time_point accepted_at) {
  CountOutcome(model, ErrorCodeName(code), accepted_at, accepted_at);
  SendError(client, client_request_id, code, message);
}

void RequestTable::SendError(const std::string& client, std::uint64_t client_request_id,
                             ErrorCode code, const std::string& message) {
  metrics_.CountError(ErrorCodeName(code));
  transport_.ToClient(client, Command::kError, client_request_id,
                      zmq::message_t(protocol::Encode(protocol::ErrorBody{code, message})));
}

void RequestTable::Forget(PendingMap::iterator it) {
  auto c = client_in_flight_.find(it->second.client);
  if (c != client_in_flight_.end() && --c->second == 0) client_in_flight_.erase(c);
  pending_.erase(it);
}

void RequestTable::CountOutcome(const std::string& model, std::string_view outcome,
                                Clock::time_point accepted_at, Clock::time_point now) {
  metrics_.CountRequest(model, outcome);
  if (outcome == "ok") {
    RouterMetrics::Observe(metrics_.end_to_end, model,
                           std::chrono::duration<double>(now - accepted_at).count());
  }
}

}  // namespace ember::router
