#include "router/zap_handler.h"

#include <spdlog/spdlog.h>

#include <array>
#include <iterator>
#include <vector>
#include <zmq_addon.hpp>

#include "common/curve.h"

namespace ember::router {
namespace {

constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";

std::string Z85(const zmq::message_t& binary_key) {
  if (binary_key.size() != 32) return {};
  std::array<char, 41> text{};
  zmq_z85_encode(text.data(), binary_key.data<std::uint8_t>(), 32);
  return std::string(text.data(), 40);
}

}  // namespace

AllowLists LoadAllowLists(const std::string& client_keys, const std::string& admin_keys,
                          const std::string& worker_keys) {
  AllowLists lists{curve::LoadPublicKeys(client_keys), curve::LoadPublicKeys(admin_keys),
                   curve::LoadPublicKeys(worker_keys)};
  if (lists.workers.empty()) {
    throw std::runtime_error("CURVE is on but no worker key is allowed (--worker-keys)");
  }
  if (lists.clients.empty() && lists.admins.empty()) {
    throw std::runtime_error(
        "CURVE is on but no client key is allowed (--client-keys, --admin-keys)");
  }
  spdlog::info("CURVE allow-lists: {} client, {} admin, {} worker key(s)", lists.clients.size(),
               lists.admins.size(), lists.workers.size());
  return lists;
}

std::string Authorize(const AllowLists& lists, const std::string& domain,
                      const std::string& mechanism, const std::string& z85_public_key) {
  if (mechanism != "CURVE" || z85_public_key.empty()) return {};
  if (domain == kFrontendDomain) {
    if (lists.admins.contains(z85_public_key)) return "admin";
    if (lists.clients.contains(z85_public_key)) return "client";
  } else if (domain == kBackendDomain) {
    if (lists.workers.contains(z85_public_key)) return "worker";
  }
  return {};
}

ZapHandler::ZapHandler(zmq::context_t& context, AllowLists lists) : lists_(std::move(lists)) {
  std::promise<void> bound;
  auto ready = bound.get_future();
  // The thread owns the promise, so it outlives set_value whatever we do.
  thread_ =
      std::thread([this, &context, bound = std::move(bound)]() mutable { Run(context, &bound); });
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

std::uint64_t ZapHandler::refused(std::string_view domain) const {
  const auto& counter = domain == kFrontendDomain  ? refused_frontend_
                        : domain == kBackendDomain ? refused_backend_
                                                   : refused_other_;
  return counter.load(std::memory_order_relaxed);
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  thread_.join();
}

void ZapHandler::Run(zmq::context_t& context, std::promise<void>* bound) {
  // The thread owns its socket from creation to close.
  zmq::socket_t socket(context, zmq::socket_type::rep);
  socket.set(zmq::sockopt::linger, 0);
  try {
    socket.bind(kZapEndpoint);
  } catch (...) {
    bound->set_exception(std::current_exception());
    return;
  }
  bound->set_value();
  while (!stop_.load()) {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(50));
    if (!(item.revents & ZMQ_POLLIN)) continue;
    std::vector<zmq::message_t> request;
    if (!zmq::recv_multipart(socket, std::back_inserter(request))) continue;
    // RFC 27: version, request id, domain, address, identity, mechanism,
    // then the mechanism's credentials (CURVE: the 32-byte public key).
    std::string request_id, user;
    std::string_view domain;
    if (request.size() >= 6 && request[0].to_string_view() == "1.0") {
      request_id = request[1].to_string();
      domain = request[2].to_string_view();
      const std::string key = request.size() >= 7 ? Z85(request[6]) : std::string();
      user = Authorize(lists_, std::string(domain), request[5].to_string(), key);
      if (user.empty()) {
        spdlog::warn("refused a {} connection from {} (domain {}, key {})", request[5].to_string(),
                     request[3].to_string(), domain, key.empty() ? "none" : key);
      }
    }
    if (user.empty()) {
      (domain == kFrontendDomain  ? refused_frontend_
       : domain == kBackendDomain ? refused_backend_
                                  : refused_other_)
          .fetch_add(1, std::memory_order_relaxed);
    }
    std::array<zmq::message_t, 6> reply = {
        zmq::message_t(std::string_view("1.0")),
        zmq::message_t(request_id),
        zmq::message_t(std::string_view(user.empty() ? "400" : "200")),
        zmq::message_t(std::string_view(user.empty() ? "not on the allow-list" : "OK")),
        zmq::message_t(user),
        zmq::message_t(),
    };
    zmq::send_multipart(socket, reply);
  }
}

}  // namespace ember::router
