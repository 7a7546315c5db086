// The router's ZAP handler (ZeroMQ RFC 27): with CURVE on, libzmq asks it,
// for each new connection, whether the peer's public key may connect, and
// under which User-Id. It answers from allow-lists of public keys:
//
//   domain "frontend" (clients):  admin keys -> User-Id "admin"
//                                 client keys -> User-Id "client"
//   domain "backend" (workers):   worker keys -> User-Id "worker"
//
// Anything else is refused with 400, so the connection never carries a
// message. Worker keys cannot act as clients and vice versa because each
// socket has its own domain. The router reads the User-Id of each message
// (protocol::Envelope::user_id) to keep model management to admins.
#ifndef EMBER_ROUTER_ZAP_HANDLER_H_
#define EMBER_ROUTER_ZAP_HANDLER_H_

#include <atomic>
#include <future>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <zmq.hpp>

namespace ember::router {

inline constexpr char kFrontendDomain[] = "frontend";
inline constexpr char kBackendDomain[] = "backend";

struct AllowLists {
  std::set<std::string> clients;  // Z85 public keys
  std::set<std::string> admins;
  std::set<std::string> workers;
};

// Reads the allow-lists (each a key file or a directory of key files; see
// common/curve.h). Throws std::runtime_error when a file is bad, or when the
// lists admit no worker or no client at all (a router nobody can use).
AllowLists LoadAllowLists(const std::string& client_keys, const std::string& admin_keys,
                          const std::string& worker_keys);

// What the handler decides for one request; the thread's logic, exposed for
// clarity and unit tests. Returns the User-Id, or "" to refuse.
std::string Authorize(const AllowLists& lists, const std::string& domain,
                      const std::string& mechanism, const std::string& z85_public_key);

class ZapHandler {
 public:
  // Binds inproc://zeromq.zap.01 in `context` and starts answering; returns
  // once bound, so sockets created afterwards are guarded. Throws if the
  // endpoint cannot be bound (another handler in the same context).
  ZapHandler(zmq::context_t& context, AllowLists lists);
  // Stops the thread (within one poll tick) and closes its socket.
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Connections refused so far on kFrontendDomain or kBackendDomain (anything else: requests
  // for other domains or malformed ones). Thread-safe: the router thread reads what the
  // handler's thread counts.
  std::uint64_t refused(std::string_view domain) const;

 private:
  void Run(zmq::context_t& context, std::promise<void>* bound);

  const AllowLists lists_;
  std::atomic<std::uint64_t> refused_frontend_{0};
  std::atomic<std::uint64_t> refused_backend_{0};
  std::atomic<std::uint64_t> refused_other_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_ZAP_HANDLER_H_
