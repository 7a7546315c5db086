// The embedding cache's optional second tier: a Redis server several routers
// share, so a text one router embedded is a hit on the others.
//
// The router thread must never wait on Redis for long, so a RedisTier owns a
// thread with its own hiredis connection. The router thread hands it lookups
// (the misses of one request) and stores through a mutex-protected queue; the
// tier answers lookups into a result queue and wakes the router through an
// inproc PAIR socket (wake_socket()) that the router polls. A lookup the
// router stops waiting for is simply a miss. With Redis down, lookups are
// answered as misses at once, stores are dropped, and the thread reconnects
// with backoff; nothing the router does ever fails because of Redis.
#ifndef EMBER_ROUTER_REDIS_TIER_H_
#define EMBER_ROUTER_REDIS_TIER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "router/cached_embedding.h"

namespace ember::router {

struct RedisTierOptions {
  std::string address;  // "unix:/path/redis.sock" or "tcp://host:port"
  std::chrono::seconds ttl{86400};
  // How long the router waits for a lookup; older queued lookups are skipped.
  std::chrono::milliseconds wait{5};
};

class RedisTier {
 public:
  // One lookup's answer: per key, the entry (an empty vector on a miss).
  struct Result {
    std::uint64_t id = 0;
    std::vector<CachedEmbedding> values;
  };

  // Starts the thread; connects lazily. Throws std::invalid_argument on a
  // malformed address.
  RedisTier(zmq::context_t& context, RedisTierOptions options);
  ~RedisTier();
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  // Router thread: asks for the vectors under `keys` (EmbeddingCache keys).
  // False when the tier is down or its queue is full: treat all as misses.
  bool Lookup(std::uint64_t id, std::vector<std::string> keys);
  // Router thread: stores a vector and its token count (dropped when the tier is down or
  // busy).
  void Store(const std::string& key, std::span<const float> vector, std::uint32_t tokens);
  // Router thread: the socket to poll for ZMQ_POLLIN, and the answers
  // that arrived (call after it polled readable).
  zmq::socket_t& wake_socket() { return wake_; }
  std::vector<Result> TakeResults();

  std::uint64_t errors() const { return errors_.load(); }
  bool connected() const { return connected_.load(); }

  // The Redis key of an EmbeddingCache key: a prefix and a BLAKE2b-256 hash
  // (stable across builds and hosts, unlike std::hash; bounded in length).
  static std::string RedisKey(const std::string& cache_key);

 private:
  struct QueuedLookup {
    std::uint64_t id;
    std::vector<std::string> keys;
    std::chrono::steady_clock::time_point queued;
  };
  struct QueuedStore {
    std::string key;
    std::string value;  // the token count (uint32), then the float32s, little-endian
  };
  struct Connection;  // the hiredis context, RAII

  void Loop();
  bool Serve(Connection& c, std::vector<QueuedLookup>& lookups, std::vector<QueuedStore>& stores,
             zmq::socket_t& wake);
  void Post(std::vector<Result> results, zmq::socket_t& wake);

  RedisTierOptions options_;
  zmq::context_t& context_;
  std::string endpoint_;  // inproc address of the wake PAIR
  zmq::socket_t wake_;    // router thread's end

  std::mutex mutex_;
  std::condition_variable work_;
  bool stop_ = false;
  std::deque<QueuedLookup> lookups_;
  std::deque<QueuedStore> stores_;
  std::vector<Result> results_;

  std::atomic<std::uint64_t> errors_{0};
  std::atomic<bool> connected_{false};
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_REDIS_TIER_H_
