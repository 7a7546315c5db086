// The ember router: a broker between clients (frontend ROUTER socket) and workers (backend
// ROUTER socket), in the manner of the ZeroMQ guide's Majordomo broker, with many requests in
// flight per worker.
//
// One thread owns both sockets and all state. Router itself is the poll loop and the handling
// of each message; the state and its rules live in components it owns (docs/architecture.md):
// RequestTable (accepted requests, deadlines, exactly one answer each), Dispatcher (which
// worker gets what; per-model queues), ControlFanout (load and unload across workers),
// CacheFront (the embedding cache), ModelCatalog (which models requests may wait for) and
// WorkerRegistry (live workers). They talk to the sockets only through the Transport seam.
#ifndef EMBER_ROUTER_ROUTER_H_
#define EMBER_ROUTER_ROUTER_H_

#include <atomic>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "router/router_options.h"

namespace ember::router {

class Router {
 public:
  explicit Router(RouterOptions options);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Serves until `stop` becomes true.
  void Run(const std::atomic<bool>& stop);

 private:
  struct State;  // the sockets, the components and the poll loop's handlers (router.cpp)
  std::unique_ptr<State> state_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_ROUTER_H_
