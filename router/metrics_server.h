// Serves the router's Prometheus text on GET /metrics from a thread of its
// own (cpp-httplib). The router thread owns every metric and renders the
// text itself; it hands the latest rendering over with Publish, so the two
// threads share one string under a mutex and no sockets or router state.
#ifndef EMBER_ROUTER_METRICS_SERVER_H_
#define EMBER_ROUTER_METRICS_SERVER_H_

#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace ember::router {

class MetricsServer {
 public:
  // Listens on `listen` ("HOST:PORT"); throws std::runtime_error when it
  // cannot bind, so a bad address fails the router at startup.
  explicit MetricsServer(const std::string& listen);
  ~MetricsServer();  // stops the server and joins its thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Replaces the text GET /metrics returns.
  void Publish(std::string text);

 private:
  std::string Latest() const;

  mutable std::mutex mutex_;
  std::string text_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_METRICS_SERVER_H_
