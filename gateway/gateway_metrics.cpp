#include "gateway/gateway_metrics.h"

#include <cstdio>

namespace ember::gateway {

void GatewayMetrics::Record(const std::string& route, int status, double seconds,
                            std::size_t texts) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
  Latency& latency = latency_[route];
  latency.sum += seconds;
  ++latency.count;
  texts_ += texts;
}

std::string GatewayMetrics::Render() const {
  std::string out;
  char line[256];
  std::lock_guard lock(mutex_);
  out += "# HELP ember_gateway_requests_total HTTP requests answered, by route and status.\n";
  out += "# TYPE ember_gateway_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    std::snprintf(line, sizeof(line),
                  "ember_gateway_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                  key.first.c_str(), key.second, static_cast<unsigned long long>(count));
    out += line;
  }
  out += "# HELP ember_gateway_request_seconds Time from request to response, by route.\n";
  out += "# TYPE ember_gateway_request_seconds summary\n";
  for (const auto& [route, latency] : latency_) {
    std::snprintf(line, sizeof(line),
                  "ember_gateway_request_seconds_sum{route=\"%s\"} %.6f\n"
                  "ember_gateway_request_seconds_count{route=\"%s\"} %llu\n",
                  route.c_str(), latency.sum, route.c_str(),
                  static_cast<unsigned long long>(latency.count));
    out += line;
  }
  out += "# HELP ember_gateway_texts_total Texts embedded through the gateway.\n";
  out += "# TYPE ember_gateway_texts_total counter\n";
  out += "ember_gateway_texts_total " + std::to_string(texts_) + "\n";
  out += "# HELP ember_gateway_in_flight HTTP requests being handled.\n";
  out += "# TYPE ember_gateway_in_flight gauge\n";
  out += "ember_gateway_in_flight " + std::to_string(in_flight_.load()) + "\n";
  return out;
}

}  // namespace ember::gateway
