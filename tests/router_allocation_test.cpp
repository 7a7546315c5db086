// The router's hot path allocates nothing of its own per request once warm (docs/performance.md
// "No allocation per request"): the request table, dispatcher and registry cycle requests
// through accept, header read, dispatch, reply and credit release, as the poll loop does, while
// this binary counts every operator new. Its own executable, since it replaces the global
// operator new.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "common/messages.h"
#include "common/reply_stats.h"
#include "common/request_header.h"
#include "router/dispatcher.h"
#include "router/request_table.h"
#include "router/worker_registry.h"

namespace {

// Counted only while a test says so; ZeroMQ's own buffers come from malloc and are not seen.
std::atomic<bool> counting{false};
std::atomic<std::uint64_t> allocations{0};
std::atomic<std::uint64_t> allocated_bytes{0};

void* Allocate(std::size_t size, std::size_t alignment = alignof(std::max_align_t)) {
  if (counting.load(std::memory_order_relaxed)) {
    allocations.fetch_add(1);
    allocated_bytes.fetch_add(size);
  }
  const std::size_t rounded = (size + alignment - 1) / alignment * alignment;
  void* p = alignment <= alignof(std::max_align_t) ? std::malloc(size == 0 ? 1 : size)
                                                   : std::aligned_alloc(alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t size) { return Allocate(size); }
void* operator new[](std::size_t size) { return Allocate(size); }
void* operator new(std::size_t size, std::align_val_t a) {
  return Allocate(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return Allocate(size, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace ember::router {
namespace {

using namespace std::chrono_literals;
using protocol::Command;

// Counts what would go out; stores nothing (a store would allocate).
class CountingTransport : public Transport {
 public:
  bool ToClient(std::string_view, Command command, std::uint64_t, zmq::message_t) override {
    if (command == Command::kReply) ++replies;
    return true;
  }
  bool ToWorker(std::string_view, Command, std::uint64_t, zmq::message_t) override {
    ++dispatched;
    return true;
  }
  bool RequestToWorker(std::string_view, std::uint64_t, zmq::message_t,
                       std::chrono::milliseconds) override {
    ++dispatched;
    return true;
  }
  std::uint64_t replies = 0, dispatched = 0;
};

TEST(RouterAllocationTest, AWarmRequestCostsAtMostTheHeaderParsersStack) {
  RouterOptions options;
  CountingTransport transport;
  RouterMetrics metrics;
  WorkerRegistry workers;
  RequestTable requests(transport, metrics);
  Dispatcher dispatcher(options, workers, requests, transport, [](const std::string&) {});
  for (const char* id : {"w1", "w2"}) {
    workers.Register(id,
                     {.device = "cpu",
                      .capacity = 8,
                      .session = 1,
                      .models = {{.name = "minilm", .version = 1, .dim = 384}}},
                     Clock::time_point{});
  }
  protocol::EmbedRequest request;
  request.model = "minilm";
  request.inputs = {"the quick brown fox jumps over the lazy dog"};
  request.timeout_ms = 100;
  const std::string body = protocol::Encode(request);
  const std::string reply = "a worker's reply, passed on as it is";
  const std::array<std::string, 2> clients = {"c1", "c2"};

  // Requests cycle as under load: 8 in flight, the oldest answered before the next arrives,
  // the clock moving so deadlines come due and leave the heap.
  std::array<std::uint64_t, 8> in_flight{};
  protocol::EmbedRequestHeader header;
  std::string error;
  Clock::time_point now{};
  std::uint64_t header_failures = 0;
  const auto cycle = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      now += 50us;
      std::uint64_t& slot = in_flight[i % in_flight.size()];
      if (slot != 0) {
        if (PendingRequest* p = requests.Find(slot)) {
          WorkerState* w = workers.Find(p->worker);
          w->Release(slot);
          dispatcher.Answered(p->model, std::chrono::microseconds(400));
          requests.Reply(slot, zmq::message_t(reply.data(), reply.size()), now);
          dispatcher.DrainQueues(w->models, now);
        }
      }
      zmq::message_t frame(body.data(), body.size());
      if (!protocol::Decode(frame.to_string_view(), &header, &error)) ++header_failures;
      const std::uint64_t id = requests.NewId();
      requests.Add(id, {.client = clients[i % clients.size()],
                        .client_request_id = i,
                        .model = header.model,
                        .version = header.version,
                        .body = std::move(frame),
                        .accepted_at = now});
      requests.ArmDeadline(id, now + std::chrono::milliseconds(header.timeout_ms));
      dispatcher.Dispatch(id, now);
      requests.ExpireDeadlines(now);
      dispatcher.Hedge(now);  // as every turn of the router's loop
      slot = id;
    }
  };
  cycle(20'000);  // warm: tables, pools, heaps and metric families reach their steady size
  const std::uint64_t replies_before = transport.replies;
  const std::uint64_t dispatched_before = transport.dispatched;
  constexpr std::uint64_t kRequests = 20'000;
  allocations = 0;
  counting = true;
  cycle(kRequests);
  counting = false;

  ASSERT_EQ(header_failures, 0u) << error;
  EXPECT_EQ(transport.replies - replies_before, kRequests) << "every request was answered";
  EXPECT_EQ(transport.dispatched - dispatched_before, kRequests)
      << "every request went straight to a worker (the path measured is dispatch, not queueing)";
  EXPECT_EQ(metrics.requests["minilm"]["ok"], transport.replies);
  // msgpack-cxx's parser reserves its container stack on each parse (its API has no
  // allocator hook): one per request. Anything more is the router's own.
  EXPECT_LE(allocations.load(), kRequests)
      << static_cast<double>(allocations.load()) / static_cast<double>(kRequests)
      << " allocations per request";
}

// With metrics on, the router reads each reply's batch size and token count (issue 36, defect
// 4): in place, allocating nothing like the vectors' size, where the full decoder it used
// before copies all of them (measured beside it, so this test can tell the two apart).
TEST(RouterAllocationTest, MetricsReadARepliesNumbersWithoutItsVectors) {
  protocol::EmbedReply reply;
  reply.model = "minilm";
  reply.dim = 384;
  reply.count = 32;
  reply.batch_size = 64;
  reply.data.assign(32 * 384, 0.5f);
  reply.tokens.assign(32, 12);
  const std::string body = protocol::Encode(reply);
  const std::uint64_t vector_bytes = reply.data.size() * sizeof(float);
  constexpr int kReads = 1000;
  const auto bytes_per_read = [&](auto read) {
    allocated_bytes = 0;
    counting = true;
    for (int i = 0; i < kReads; ++i) read();
    counting = false;
    return allocated_bytes.load() / kReads;
  };
  protocol::EmbedReplyStats stats;
  bool read_ok = true;
  const std::uint64_t in_place = bytes_per_read([&] { read_ok &= protocol::Decode(body, &stats); });
  protocol::EmbedReply full;
  std::string error;
  const std::uint64_t decoded = bytes_per_read([&] { protocol::Decode(body, &full, &error); });
  ASSERT_TRUE(read_ok);
  EXPECT_EQ(stats.batch_size, 64u);
  EXPECT_EQ(stats.tokens, 32u * 12u);
  std::printf(
      "bytes allocated per reply read: %llu in place, %llu by the full decoder (%llu of "
      "vectors)\n",
      static_cast<unsigned long long>(in_place), static_cast<unsigned long long>(decoded),
      static_cast<unsigned long long>(vector_bytes));
  EXPECT_GE(decoded, vector_bytes) << "the measure sees the full decoder's copy";
  EXPECT_LT(in_place, 1024u) << "no copy of the vectors";
}

}  // namespace
}  // namespace ember::router
