#include "router/metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace ember::router {

MetricsServer::MetricsServer(const std::string& listen)
    : server_(std::make_unique<httplib::Server>()) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw std::runtime_error("metrics-listen '" + listen + "' is not HOST:PORT");
  }
  const std::string host = listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    throw std::runtime_error("metrics-listen '" + listen + "' has no valid port");
  }
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(Latest(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // Bind here, on the caller's thread, so a taken port is an error at once.
  // Port 0: any free port (logged), for tests.
  const int bound = port == 0                           ? server_->bind_to_any_port(host)
                    : server_->bind_to_port(host, port) ? port
                                                        : -1;
  if (bound <= 0) throw std::runtime_error("metrics-listen: cannot listen on " + listen);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  spdlog::info("event=metrics_listen address={}:{}", host, bound);
}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void MetricsServer::Publish(std::string text) {
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
}

std::string MetricsServer::Latest() const {
  std::lock_guard lock(mutex_);
  return text_;
}

}  // namespace ember::router
