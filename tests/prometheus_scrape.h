// Reading a router's Prometheus endpoint in tests: a free port to give it,
// a scrape over HTTP (cpp-httplib), and one sample's value out of the text.
#ifndef EMBER_TESTS_PROMETHEUS_SCRAPE_H_
#define EMBER_TESTS_PROMETHEUS_SCRAPE_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ember::testing {

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

// GET http://127.0.0.1:port/metrics; empty on any failure.
std::string Scrape(int port);

// The value of the sample written exactly as `series` (`name` or
// `name{label="v",...}`, labels in the order the router writes them).
std::optional<double> Sample(std::string_view text, std::string_view series);

// Scrapes until `ready(text)` holds or `timeout` passes; returns the last text.
std::string ScrapeUntil(int port, const std::function<bool(const std::string&)>& ready,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace ember::testing

#endif  // EMBER_TESTS_PROMETHEUS_SCRAPE_H_
