#include "worker/router_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <zmq_addon.hpp>

namespace ember::worker {

RouterLink::RouterLink(zmq::context_t& context, Options options)
    : context_(context), options_(std::move(options)), backoff_(options_.heartbeat_interval) {}

void RouterLink::Connect(Clock::time_point now) {
  socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  socket_->set(zmq::sockopt::routing_id, options_.id);
  socket_->set(zmq::sockopt::linger, 0);
  socket_->set(zmq::sockopt::sndhwm, 100'000);
  socket_->set(zmq::sockopt::rcvhwm, 100'000);
  socket_->set(zmq::sockopt::reconnect_ivl, 100);
  socket_->set(zmq::sockopt::reconnect_ivl_max, 2000);
  // Never block the socket thread on a send: with the connection gone (a router down, or one
  // that refused our key) there is nowhere to queue, and liveness reconnects us anyway.
  socket_->set(zmq::sockopt::sndtimeo, 0);
  curve::MakeClient(*socket_, options_.curve);
  socket_->connect(options_.endpoint);
  connected_ = now;
  ever_heard_ = false;
  next_heartbeat_ = now + options_.heartbeat_interval;
}

void RouterLink::Heard(Clock::time_point now) {
  heard_ = now;
  ever_heard_ = true;
  backoff_ = options_.heartbeat_interval;
}

bool RouterLink::Live(Clock::time_point now) const {
  return socket_ && ever_heard_ && now - heard_ <= options_.heartbeat_interval * options_.liveness;
}

RouterLink::Step RouterLink::Tick(Clock::time_point now) {
  if (socket_) {
    const auto since = ever_heard_ ? heard_ : connected_;  // heard on this socket, or opened
    if (now - since <= options_.heartbeat_interval * options_.liveness) return Step::kNone;
    spdlog::warn("router {} silent for {} heartbeats; reconnecting in {} ms", options_.endpoint,
                 options_.liveness, backoff_.count());
    socket_.reset();
    reconnect_at_ = now + backoff_;
    // Paranoid Pirate doubles up to 32 s; we cap at two heartbeats so that a restarted router
    // has its workers back within a few heartbeats.
    backoff_ = std::min(backoff_ * 2, options_.heartbeat_interval * 2);
    return Step::kDropped;
  }
  if (now < reconnect_at_) return Step::kNone;
  Connect(now);
  return Step::kReconnect;
}

bool RouterLink::HeartbeatDue(Clock::time_point now) {
  if (!socket_ || now < next_heartbeat_) return false;
  next_heartbeat_ = now + options_.heartbeat_interval;
  return true;
}

bool RouterLink::Send(protocol::Command command, std::uint64_t request_id, std::string_view body) {
  return socket_ && protocol::SendDealt(*socket_, command, request_id, body);
}

bool RouterLink::Send(std::span<zmq::message_t> frames) {
  return socket_ && zmq::send_multipart(*socket_, frames).has_value();
}

}  // namespace ember::worker
