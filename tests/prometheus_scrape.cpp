#include "tests/prometheus_scrape.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <thread>

namespace ember::testing {

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(2));
  client.set_read_timeout(std::chrono::seconds(2));
  auto result = client.Get("/metrics");
  if (!result || result->status != 200) return {};
  return result->body;
}

std::optional<double> Sample(std::string_view text, std::string_view series) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    if (line.size() > series.size() && line.starts_with(series) && line[series.size()] == ' ') {
      return std::stod(std::string(line.substr(series.size() + 1)));
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::string ScrapeUntil(int port, const std::function<bool(const std::string&)>& ready,
                        std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string text;
  while (std::chrono::steady_clock::now() < deadline) {
    text = Scrape(port);
    if (!text.empty() && ready(text)) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return text;
}

}  // namespace ember::testing
