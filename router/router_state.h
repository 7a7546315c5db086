// The router's state (internal to router.cpp): its sockets, the components that hold the
// rules (docs/architecture.md), and the handlers of the poll loop that tie them together.
#ifndef EMBER_ROUTER_ROUTER_STATE_H_
#define EMBER_ROUTER_ROUTER_STATE_H_

#include <atomic>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/request_header.h"
#include "router/cache_front.h"
#include "router/control_fanout.h"
#include "router/dispatcher.h"
#include "router/embedding_cache.h"
#include "router/metrics_server.h"
#include "router/model_catalog.h"
#include "router/redis_tier.h"
#include "router/request_table.h"
#include "router/router.h"
#include "router/router_metrics.h"
#include "router/transport.h"
#include "router/worker_health.h"
#include "router/worker_registry.h"
#include "router/zap_handler.h"

namespace ember::router {

struct Router::State {
  explicit State(RouterOptions o);
  ~State();

  void Run(const std::atomic<bool>& stop);
  void HandleFrontend();
  void HandleBackend();
  // The handlers take the message by reference to move its body frame on.
  void HandleRequest(const std::string& client, protocol::Message& message);
  void HandleControl(const std::string& client, const protocol::Message& message, bool admin);
  void HandleWorkerMessage(const std::string& id, protocol::Message& message);
  void HandleRegistration(const std::string& id, const protocol::Message& message);
  void HandleResult(WorkerState& worker, protocol::Message& message);
  void HandleRedis(Clock::time_point now);
  // Sends, answers or queues request `id` after its cache lookup came out as `lookup`.
  void AfterLookup(std::uint64_t id, CacheFront::Lookup lookup, const std::string& reply,
                   Clock::time_point now);
  // Removes a worker and re-dispatches what it had in flight.
  void DropWorker(const std::string& id, const std::string& why);
  void HeartbeatWorkers(Clock::time_point now);
  void PurgeSilentWorkers(Clock::time_point now);
  void PublishMetrics(Clock::time_point now);
  bool Known(const std::string& model, std::uint32_t version, Clock::time_point now) const {
    return catalog.Known(model, version, now);
  }

  RouterOptions options;
  zmq::context_t context;
  // With CURVE on: admits only allow-listed keys. Declared between the context and the
  // sockets: it must exist before they accept connections.
  std::unique_ptr<ZapHandler> zap;
  zmq::socket_t frontend;
  zmq::socket_t backend;
  ZmqTransport transport;
  RouterMetrics metrics;
  WorkerRegistry workers;
  WorkerHealth health;
  RequestTable requests;
  Dispatcher dispatcher;
  ControlFanout controls;
  ModelCatalog catalog;
  std::unique_ptr<EmbeddingCache> cache;          // null when cache_bytes is 0
  std::unique_ptr<RedisTier> redis;               // null when cache_redis is empty
  std::unique_ptr<CacheFront> cache_front;        // with the cache
  std::unique_ptr<MetricsServer> metrics_server;  // null when metrics_listen is empty
  std::uint64_t accepted = 0;                     // requests seen (status)
  protocol::EmbedRequestHeader header;            // HandleRequest's, reused
  Clock::time_point next_heartbeat, next_metrics;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_ROUTER_STATE_H_
