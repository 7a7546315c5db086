#include "router/redis_tier.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <sodium.h>
#include <spdlog/spdlog.h>

#include <bit>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace ember::router {
namespace {

using namespace std::chrono_literals;

// A value is the token count as a uint32, then the vector's float32s, raw: every router
// reading them must agree on byte order, and the hosts ember supports are little-endian.
static_assert(std::endian::native == std::endian::little);

constexpr std::size_t kMaxQueuedLookups = 4096;   // beyond: misses at once
constexpr std::size_t kMaxQueuedStores = 16'384;  // beyond: stores dropped
constexpr auto kConnectTimeout = 200ms;
// A reply slower than this counts as Redis being down: drop the connection.
constexpr auto kCommandTimeout = 1s;
constexpr auto kFirstBackoff = 100ms;
constexpr auto kMaxBackoff = 5s;
// Bumped if the value layout ever changes, so old and new routers sharing a
// Redis never read each other's values.
// (1: float32s alone; 2: the token count first.)
constexpr std::string_view kKeyPrefix = "ember:emb:2:";

timeval ToTimeval(std::chrono::microseconds d) {
  return {.tv_sec = static_cast<time_t>(d.count() / 1'000'000),
          .tv_usec = static_cast<suseconds_t>(d.count() % 1'000'000)};
}

}  // namespace

struct RedisTier::Connection {
  explicit Connection(redisContext* c) : context(c) {}
  ~Connection() { redisFree(context); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  redisContext* context;
};

namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// Checks the address; returns (unix path, "") or ("", host) with *port.
std::pair<std::string, std::string> ParseAddress(const std::string& address, int* port) {
  if (address.starts_with("unix:")) {
    const std::string path = address.substr(5);
    if (path.empty()) throw std::invalid_argument("cache-redis: empty unix socket path");
    return {path, ""};
  }
  if (address.starts_with("tcp://")) {
    const std::string rest = address.substr(6);
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw std::invalid_argument("cache-redis: expected tcp://HOST:PORT, got '" + address + "'");
    }
    try {
      *port = std::stoi(rest.substr(colon + 1));
    } catch (const std::exception&) {
      *port = 0;
    }
    if (*port <= 0 || *port > 65535) {
      throw std::invalid_argument("cache-redis: bad port in '" + address + "'");
    }
    return {"", rest.substr(0, colon)};
  }
  throw std::invalid_argument("cache-redis: expected unix:/PATH or tcp://HOST:PORT, got '" +
                              address + "'");
}

}  // namespace

RedisTier::RedisTier(zmq::context_t& context, RedisTierOptions options)
    : options_(std::move(options)),
      context_(context),
      endpoint_("inproc://ember-redis-tier-" +
                std::to_string(reinterpret_cast<std::uintptr_t>(this))),
      wake_(context, zmq::socket_type::pair) {
  int port = 0;
  ParseAddress(options_.address, &port);  // fail at startup, not in the thread
  if (sodium_init() < 0) throw std::runtime_error("libsodium failed to initialise");
  wake_.set(zmq::sockopt::linger, 0);
  wake_.bind(endpoint_);
  thread_ = std::thread([this] { Loop(); });
}

RedisTier::~RedisTier() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

std::string RedisTier::RedisKey(const std::string& cache_key) {
  unsigned char hash[32];
  crypto_generichash(hash, sizeof hash, reinterpret_cast<const unsigned char*>(cache_key.data()),
                     cache_key.size(), nullptr, 0);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key(kKeyPrefix);
  for (unsigned char b : hash) {
    key += kHex[b >> 4];
    key += kHex[b & 15];
  }
  return key;
}

bool RedisTier::Lookup(std::uint64_t id, std::vector<std::string> keys) {
  if (!connected_.load()) return false;
  {
    std::lock_guard lock(mutex_);
    if (lookups_.size() >= kMaxQueuedLookups) return false;
    lookups_.push_back({id, std::move(keys), std::chrono::steady_clock::now()});
  }
  work_.notify_one();
  return true;
}

void RedisTier::Store(const std::string& key, std::span<const float> vector, std::uint32_t tokens) {
  if (!connected_.load() || vector.empty()) return;
  std::string value(sizeof tokens + vector.size_bytes(), '\0');
  std::memcpy(value.data(), &tokens, sizeof tokens);
  std::memcpy(value.data() + sizeof tokens, vector.data(), vector.size_bytes());
  {
    std::lock_guard lock(mutex_);
    if (stores_.size() >= kMaxQueuedStores) return;
    stores_.push_back({key, std::move(value)});
  }
  work_.notify_one();
}

std::vector<RedisTier::Result> RedisTier::TakeResults() {
  zmq::message_t ignored;
  while (wake_.recv(ignored, zmq::recv_flags::dontwait)) {
  }
  std::lock_guard lock(mutex_);
  return std::exchange(results_, {});
}

void RedisTier::Post(std::vector<Result> results, zmq::socket_t& wake) {
  if (results.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (auto& r : results) results_.push_back(std::move(r));
  }
  // After the push: the router drains wake-ups before taking results, so it
  // never sleeps on a result. A full pipe means a wake-up is already there.
  (void)wake.send(zmq::buffer("r", 1), zmq::send_flags::dontwait);
}

void RedisTier::Loop() {
  // hiredis writes with write(2): a Redis that went away would raise SIGPIPE
  // and kill the router. Blocked in this thread only, the write fails EPIPE.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  zmq::socket_t wake(context_, zmq::socket_type::pair);
  wake.set(zmq::sockopt::linger, 0);
  wake.connect(endpoint_);
  int port = 0;
  const auto [unix_path, host] = ParseAddress(options_.address, &port);
  std::unique_ptr<Connection> connection;
  auto backoff = kFirstBackoff;
  auto next_connect = std::chrono::steady_clock::now();
  bool logged_down = false;
  for (;;) {
    // Connect first, so a lookup finds the tier up from the start.
    if (!connection && std::chrono::steady_clock::now() >= next_connect) {
      const timeval tv = ToTimeval(kConnectTimeout);
      redisContext* c = unix_path.empty() ? redisConnectWithTimeout(host.c_str(), port, tv)
                                          : redisConnectUnixWithTimeout(unix_path.c_str(), tv);
      if (c != nullptr && c->err == 0 && redisSetTimeout(c, ToTimeval(kCommandTimeout)) == 0) {
        connection = std::make_unique<Connection>(c);
        connected_ = true;
        backoff = kFirstBackoff;
        logged_down = false;
        spdlog::info("event=redis_up address={}", options_.address);
      } else {
        const std::string why = c != nullptr ? c->errstr : "out of memory";
        if (c != nullptr) redisFree(c);
        ++errors_;
        if (!logged_down) {
          spdlog::warn("event=redis_down address={} error=\"{}\" (retrying with backoff)",
                       options_.address, why);
          logged_down = true;
        }
        next_connect = std::chrono::steady_clock::now() + backoff;
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
      }
    }
    std::vector<QueuedLookup> lookups;
    std::vector<QueuedStore> stores;
    {
      std::unique_lock lock(mutex_);
      // Wakes up now and then without work to reconnect.
      work_.wait_for(lock, kFirstBackoff,
                     [this] { return stop_ || !lookups_.empty() || !stores_.empty(); });
      if (stop_) break;
      lookups.assign(std::make_move_iterator(lookups_.begin()),
                     std::make_move_iterator(lookups_.end()));
      lookups_.clear();
      stores.assign(std::make_move_iterator(stores_.begin()),
                    std::make_move_iterator(stores_.end()));
      stores_.clear();
    }
    const auto now = std::chrono::steady_clock::now();
    // The router has stopped waiting for these: asking Redis would only
    // delay the fresh ones behind them.
    std::erase_if(lookups, [&](const QueuedLookup& l) { return now - l.queued > options_.wait; });
    if (!connection) {
      std::vector<Result> misses;
      for (auto& l : lookups) misses.push_back({l.id, std::vector<CachedEmbedding>(l.keys.size())});
      Post(std::move(misses), wake);
      continue;  // stores dropped
    }
    if (!Serve(*connection, lookups, stores, wake)) {
      connection.reset();
      connected_ = false;
      ++errors_;
      if (!logged_down) {
        spdlog::warn("event=redis_down address={} (connection lost; retrying with backoff)",
                     options_.address);
        logged_down = true;
      }
      next_connect = std::chrono::steady_clock::now() + backoff;
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
    }
  }
  connected_ = false;
}

bool RedisTier::Serve(Connection& c, std::vector<QueuedLookup>& lookups,
                      std::vector<QueuedStore>& stores, zmq::socket_t& wake) {
  // One pipeline: an MGET per lookup, then a SET ... EX per store.
  for (const auto& l : lookups) {
    std::vector<std::string> keys;
    keys.reserve(l.keys.size());
    for (const auto& k : l.keys) keys.push_back(RedisKey(k));
    std::vector<const char*> argv{"MGET"};
    std::vector<std::size_t> lens{4};
    for (const auto& k : keys) {
      argv.push_back(k.data());
      lens.push_back(k.size());
    }
    redisAppendCommandArgv(c.context, static_cast<int>(argv.size()), argv.data(), lens.data());
  }
  const std::string ttl = std::to_string(options_.ttl.count());
  for (const auto& s : stores) {
    const std::string key = RedisKey(s.key);
    const char* argv[] = {"SET", key.data(), s.value.data(), "EX", ttl.data()};
    const std::size_t lens[] = {3, key.size(), s.value.size(), 2, ttl.size()};
    redisAppendCommandArgv(c.context, 5, argv, lens);
  }
  std::vector<Result> results;
  bool ok = true;
  for (const auto& l : lookups) {
    Result r{l.id, std::vector<CachedEmbedding>(l.keys.size())};
    void* raw = nullptr;
    if (ok && redisGetReply(c.context, &raw) == REDIS_OK) {
      ReplyPtr reply(static_cast<redisReply*>(raw));
      if (reply->type == REDIS_REPLY_ARRAY && reply->elements == l.keys.size()) {
        for (std::size_t i = 0; i < reply->elements; ++i) {
          const redisReply* e = reply->element[i];
          // Anything but a count and whole floats is not ours (or corrupt): a miss.
          constexpr std::size_t kCount = sizeof(std::uint32_t);
          if (e->type != REDIS_REPLY_STRING || e->len <= kCount ||
              (e->len - kCount) % sizeof(float) != 0) {
            continue;
          }
          CachedEmbedding& value = r.values[i];
          std::memcpy(&value.tokens, e->str, kCount);
          value.vector.resize((e->len - kCount) / sizeof(float));
          std::memcpy(value.vector.data(), e->str + kCount, e->len - kCount);
        }
      } else {
        ++errors_;
      }
    } else {
      ok = false;
    }
    results.push_back(std::move(r));
  }
  // Answer lookups before waiting on the stores' acknowledgements.
  Post(std::move(results), wake);
  for (std::size_t i = 0; ok && i < stores.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(c.context, &raw) != REDIS_OK) {
      ok = false;
      break;
    }
    ReplyPtr reply(static_cast<redisReply*>(raw));
    if (reply->type == REDIS_REPLY_ERROR) ++errors_;
  }
  return ok;
}

}  // namespace ember::router
