#include "tests/load_client.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <thread>
#include <zmq.hpp>

#include "client/client.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "tests/cluster.h"

namespace ember::testing {
namespace {

using namespace std::chrono_literals;

LoadResult RunClient(int c, const std::string& frontend, const Reference& reference,
                     const LoadOptions& options, std::atomic<int>* answered) {
  LoadResult result;
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  socket.connect(frontend);
  const std::size_t n = reference.texts.size();
  struct Outstanding {
    std::vector<std::size_t> picks;  // text indexes
    std::chrono::steady_clock::time_point sent;
  };
  std::map<std::uint64_t, Outstanding> outstanding;
  std::map<std::uint64_t, int> answers;
  const auto deadline = std::chrono::steady_clock::now() + options.limit;
  auto more = [&] {
    return result.sent < options.requests_per_client &&
           (options.until == nullptr || !options.until->load());
  };
  while ((more() || !outstanding.empty()) && std::chrono::steady_clock::now() < deadline) {
    while (more() && outstanding.size() < static_cast<std::size_t>(options.window)) {
      const std::uint64_t id = static_cast<std::uint64_t>(c) * 1'000'000 + result.sent;
      protocol::EmbedRequest request;
      request.model = options.model;
      request.timeout_ms = options.timeout_ms;
      std::vector<std::size_t> picks;
      const int texts =
          options.texts_per_request > 0 ? options.texts_per_request : 1 + result.sent % 3;
      for (int t = 0; t < texts; ++t) {
        picks.push_back((c * 31 + result.sent * 7 + t * 13) % n);
      }
      for (auto p : picks) request.inputs.push_back(reference.texts[p]);
      protocol::SendDealt(socket, protocol::Command::kRequest, id, protocol::Encode(request));
      outstanding[id] = {picks, std::chrono::steady_clock::now()};
      ++result.sent;
    }
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 100ms);
    std::string error;
    while (auto received = protocol::ReceiveDealt(socket, &error)) {
      if (!*received) {
        ++result.wrong;
        continue;
      }
      const auto& message = **received;
      if (++answers[message.request_id] > 1) {
        ++result.duplicates;
        continue;
      }
      auto it = outstanding.find(message.request_id);
      if (it == outstanding.end()) {
        ++result.wrong;  // an answer to a request this client never sent
        continue;
      }
      if (answered) ++*answered;
      if (message.command == protocol::Command::kError) {
        protocol::ErrorBody e;
        protocol::Decode(message.body(), &e, &error);
        ++result.errors[e.code];
      } else {
        protocol::EmbedReply reply;
        const auto& picks = it->second.picks;
        if (!protocol::Decode(message.body(), &reply, &error) || reply.count != picks.size()) {
          ++result.wrong;
        } else {
          for (std::size_t i = 0; i < picks.size(); ++i) {
            const auto got = std::span(reply.data).subspan(i * reply.dim, reply.dim);
            if (MaxAbsDiff(got, reference.vectors[picks[i]]) > 1e-4f) ++result.wrong;
          }
          if (options.record) {
            result.served.push_back(
                {it->second.sent, std::chrono::steady_clock::now(), reply.version});
          }
          ++result.replies;
          ++result.served_by[reply.worker];
          result.largest_batch = std::max(result.largest_batch, reply.batch_size);
        }
      }
      outstanding.erase(it);
    }
  }
  result.missing = static_cast<int>(outstanding.size());
  // Linger briefly to catch a duplicate that would arrive after the last answer.
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, 300ms) > 0) ++result.duplicates;
  return result;
}

}  // namespace

bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

std::uint64_t Completed(Client& client) {
  std::uint64_t completed = 0;
  for (const auto& w : client.Status().workers) completed += w.completed;
  return completed;
}

float MaxAbsDiff(std::span<const float> a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

Reference LoadTinyReference() {
  std::ifstream in(TinyModelDir() + "/reference.json");
  const auto json = nlohmann::json::parse(in);
  return {json["texts"].get<std::vector<std::string>>(),
          json["vectors"].get<std::vector<std::vector<float>>>()};
}

int LoadResult::error_count() const {
  int total = 0;
  for (const auto& [code, k] : errors) total += k;
  return total;
}

LoadResult RunLoad(const std::string& frontend, const Reference& reference,
                   const LoadOptions& options, std::atomic<int>* answered) {
  std::vector<LoadResult> results(static_cast<std::size_t>(options.clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < options.clients; ++c) {
    threads.emplace_back([&, c] {
      results[static_cast<std::size_t>(c)] = RunClient(c, frontend, reference, options, answered);
    });
  }
  for (auto& t : threads) t.join();
  LoadResult total;
  for (const auto& r : results) {
    total.sent += r.sent;
    total.replies += r.replies;
    total.wrong += r.wrong;
    total.duplicates += r.duplicates;
    total.missing += r.missing;
    for (const auto& [code, k] : r.errors) total.errors[code] += k;
    for (const auto& [w, k] : r.served_by) total.served_by[w] += k;
    total.largest_batch = std::max(total.largest_batch, r.largest_batch);
    total.served.insert(total.served.end(), r.served.begin(), r.served.end());
  }
  return total;
}

}  // namespace ember::testing
