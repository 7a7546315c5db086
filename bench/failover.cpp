// ember-failover-bench: what clients see when a router dies under load. `clients` SDK clients
// (client/client.h, homes spread over the routers) embed closed-loop through the router list;
// at --kill-at-s the bench itself sends SIGKILL to --kill-pid (a router), so the kill time is
// exact. Reports throughput before and after, the longest request overall and across the kill
// (the failover gap), the longest stretch with no reply at all, and errors; JSON with --json.
//
//   ember-failover-bench --router tcp://a:5555,tcp://b:5555 --model tiny --clients 8
//                        --duration-s 10 --kill-at-s 5 --kill-pid 1234
//
// Every run ends by duration + the request timeout.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "client/client.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  double sent_s, received_s;  // since the start
  bool ok;
};

double Ms(double seconds) { return seconds * 1000; }

}  // namespace

int main(int argc, char** argv) {
  std::string routers = "tcp://127.0.0.1:5555";
  std::string model = "tiny";
  int clients = 8;
  double duration_s = 10, kill_at_s = 5;
  int kill_pid = 0;
  int heartbeat_ms = 1000;
  std::string json_file;
  CLI::App app{"ember-failover-bench: a router killed under load, as clients see it"};
  app.add_option("--router", routers, "router frontends, comma-separated")->required();
  app.add_option("--model", model, "model name");
  app.add_option("--clients", clients, "SDK clients (one thread each)")->check(CLI::Range(1, 256));
  app.add_option("--duration-s", duration_s, "run time")->check(CLI::Range(1.0, 600.0));
  app.add_option("--kill-at-s", kill_at_s, "when to kill --kill-pid")
      ->check(CLI::Range(0.0, 600.0));
  app.add_option("--kill-pid", kill_pid, "the router process to SIGKILL (0: none)");
  app.add_option("--heartbeat-ms", heartbeat_ms, "the clients' ZMTP heartbeat")
      ->check(CLI::Range(10, 60'000));
  app.add_option("--json", json_file, "also write the report as JSON to this file");
  CLI11_PARSE(app, argc, argv);

  const auto start = Clock::now();
  const auto since = [&](Clock::time_point t) {
    return std::chrono::duration<double>(t - start).count();
  };
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::vector<Sample> samples;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      ember::Client client(
          ember::RouterList::Split(routers),
          ember::ClientOptions{.heartbeat = std::chrono::milliseconds(heartbeat_ms), .home = c});
      std::vector<Sample> mine;
      const std::vector<std::string> text = {"the quick brown fox " + std::to_string(c)};
      while (!stop.load()) {
        const auto sent = Clock::now();
        bool ok = true;
        try {
          client.Embed(model, text, ember::EmbedOptions{.timeout = std::chrono::seconds(10)});
        } catch (const ember::Error&) {
          ok = false;
        }
        mine.push_back({since(sent), since(Clock::now()), ok});
      }
      std::lock_guard lock(mutex);
      samples.insert(samples.end(), mine.begin(), mine.end());
    });
  }
  double killed_s = -1;
  while (since(Clock::now()) < duration_s) {
    if (kill_pid > 0 && killed_s < 0 && since(Clock::now()) >= kill_at_s) {
      killed_s = since(Clock::now());
      ::kill(kill_pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  for (auto& t : threads) t.join();

  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.received_s < b.received_s; });
  int errors = 0;
  double longest = 0, across = 0, silence = 0, last_reply = 0;
  int before = 0, after = 0;
  const double split = killed_s >= 0 ? killed_s : duration_s / 2;
  for (const Sample& s : samples) {
    const double took = s.received_s - s.sent_s;
    longest = std::max(longest, took);
    if (killed_s >= 0 && s.received_s >= killed_s && s.sent_s < killed_s + 1) {
      across = std::max(across, took);
    }
    if (!s.ok) {
      ++errors;
      continue;
    }
    if (s.received_s > 0.5) silence = std::max(silence, s.received_s - last_reply);
    last_reply = s.received_s;
    (s.received_s < split ? before : after)++;
  }
  const double qps_before = before / std::max(split, 1e-9);
  const double qps_after = after / std::max(duration_s - split, 1e-9);
  std::printf("%-34s %10s\n", "clients", std::to_string(clients).c_str());
  std::printf("%-34s %10.1f\n", "replies/s before the kill", qps_before);
  std::printf("%-34s %10.1f\n", "replies/s after the kill", qps_after);
  std::printf("%-34s %10d\n", "errors", errors);
  std::printf("%-34s %10.1f\n", "longest request (ms)", Ms(longest));
  std::printf("%-34s %10.1f\n", "longest request across kill (ms)", Ms(across));
  std::printf("%-34s %10.1f\n", "longest gap between replies (ms)", Ms(silence));
  if (!json_file.empty()) {
    nlohmann::json out = {{"clients", clients},
                          {"routers", routers},
                          {"killed_at_s", killed_s},
                          {"replies_per_s_before", qps_before},
                          {"replies_per_s_after", qps_after},
                          {"errors", errors},
                          {"longest_ms", Ms(longest)},
                          {"longest_across_kill_ms", Ms(across)},
                          {"longest_gap_ms", Ms(silence)}};
    std::ofstream(json_file) << out.dump(2) << "\n";
  }
  return errors == 0 ? 0 : 1;
}
