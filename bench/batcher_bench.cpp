// ember-batcher-bench: what one batching decision costs the scheduler thread as the queue
// grows (issue 24: at 150k texts/s a scheduler that sorts and scans its queue on every
// decision falls behind the GPU exactly when a backlog forms).
//
//   ember-batcher-bench [--json out.json]
//
// For each queue length N: N texts of random lengths wait (1-128 tokens, as English
// passages), some with deadlines; then, round after round, one request of `batch` texts
// arrives and the scheduler makes the two calls of each of its loops: TakeExpired (nothing has
// expired: the "expire" column) and Next, which takes a full batch of `batch` texts chosen by
// length around the oldest (the "next" column); the queue stays at N. Prints ns per call
// (median of 5 timed runs, with the range).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "worker/batcher.h"

namespace {

using ember::worker::BatcherOptions;
using ember::worker::BatchItem;
using ember::worker::Clock;

struct Cost {
  double expire_ns = 0, next_ns = 0;
};

Cost Measure(std::size_t queued, std::size_t batch, int rounds, std::mt19937& rng) {
  BatcherOptions options;
  options.max_batch_size = batch;
  options.max_batch_tokens = 0;  // no token cap: the batch is `batch` texts
  options.max_queue_delay = std::chrono::milliseconds(1);
  options.max_queue = queued + batch;
  options.padded = false;
  ember::worker::Batcher b(options);
  const Clock::time_point t0 = Clock::now();
  std::uint64_t request = 0;
  std::uniform_int_distribution<std::size_t> length(1, 128);
  auto arrive = [&](std::size_t texts, Clock::time_point at) {
    std::vector<BatchItem> items(texts);
    // One request in four has a deadline (an hour away: none expires here).
    const auto deadline = request % 4 == 0 ? at + std::chrono::hours(1) : Clock::time_point::max();
    for (std::uint32_t i = 0; i < texts; ++i) items[i] = {request, i, length(rng), at, deadline};
    ++request;
    b.Add(items);
  };
  for (std::size_t i = 0; i < queued; ++i) arrive(1, t0);
  Clock::duration expire{}, next{};
  for (int r = 0; r < rounds; ++r) {
    arrive(batch, t0);
    Clock::time_point wake;
    const auto a = Clock::now();
    const auto expired = b.TakeExpired(t0 + std::chrono::milliseconds(1));
    const auto m = Clock::now();
    const auto taken = b.Next(t0 + std::chrono::microseconds(500), &wake);  // full: leaves now
    const auto z = Clock::now();
    if (!expired.empty() || !taken || taken->size() != batch) std::abort();
    expire += m - a;
    next += z - m;
  }
  const auto ns = [rounds](Clock::duration d) {
    return std::chrono::duration<double, std::nano>(d).count() / rounds;
  };
  return {ns(expire), ns(next)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cost of one batching decision vs queue length"};
  std::string json_path;
  std::size_t batch = 64;
  int rounds = 200;
  app.add_option("--json", json_path, "write the results as JSON here");
  app.add_option("--batch", batch, "texts per batch taken")->check(CLI::Range(1, 4096));
  app.add_option("--rounds", rounds, "decisions timed per run")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);

  std::mt19937 rng(42);
  nlohmann::json out = nlohmann::json::array();
  std::printf("%10s %16s %24s %16s %24s\n", "queued", "expire ns (med)", "range", "next ns (med)",
              "range");
  for (std::size_t queued : {256u, 4096u, 65536u}) {
    std::vector<double> expires, nexts;
    for (int run = 0; run < 5; ++run) {
      const Cost c = Measure(queued, batch, rounds, rng);
      expires.push_back(c.expire_ns);
      nexts.push_back(c.next_ns);
    }
    std::sort(expires.begin(), expires.end());
    std::sort(nexts.begin(), nexts.end());
    std::printf("%10zu %16.0f %11.0f - %-10.0f %16.0f %11.0f - %-10.0f\n", queued, expires[2],
                expires.front(), expires.back(), nexts[2], nexts.front(), nexts.back());
    out.push_back(
        {{"queued", queued},
         {"batch", batch},
         {"expire_ns", {{"median", expires[2]}, {"min", expires.front()}, {"max", expires.back()}}},
         {"next_ns", {{"median", nexts[2]}, {"min", nexts.front()}, {"max", nexts.back()}}}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
}
