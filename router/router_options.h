// The router's settings: defaults here, overridden by a TOML file (config/router.toml, which
// RenderRouterConfig() writes), overridden by command-line flags.
#ifndef EMBER_ROUTER_ROUTER_OPTIONS_H_
#define EMBER_ROUTER_ROUTER_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>

#include "common/settings.h"
#include "router/policy.h"

namespace ember::router {

struct ModelOptions {
  PolicyKind policy = PolicyKind::kAdaptive;
  std::size_t max_queue = 1024;  // requests waiting for worker credit
  // Hedging (router/dispatcher.h): a request a worker holds longer than hedge_after_p99 x the
  // p99 of the model's recent replies, and at least hedge_min, goes once more to another
  // worker; the first answer wins. 0: never.
  double hedge_after_p99 = 4.0;
  std::chrono::milliseconds hedge_min{100};
};

struct RouterOptions {
  std::string frontend = "tcp://127.0.0.1:5555";  // clients connect here
  std::string backend = "tcp://127.0.0.1:5556";   // workers connect here
  // ZeroMQ I/O threads: each connection's reads and writes run on one of them.
  int io_threads = 1;
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;  // heartbeats a worker may miss before it is dead
  std::chrono::milliseconds default_timeout{30000};  // for requests without one
  // For load/unload commands that set none: big models take a while.
  std::chrono::milliseconds control_timeout{600'000};
  int max_attempts = 3;  // dispatches of one request before it fails
  // How long requests for a model wait (queued) after its last worker left,
  // before new ones are refused as UNKNOWN_MODEL.
  std::chrono::milliseconds model_retention{60000};
  // Input limits: violations get a typed error; the router keeps serving.
  std::size_t max_texts_per_request = 1024;     // BAD_REQUEST beyond
  std::size_t max_text_bytes = 1 << 20;         // per text; BAD_REQUEST beyond
  std::size_t max_in_flight_per_client = 4096;  // OVERLOADED beyond
  // Largest message accepted on the frontend (ZMQ_MAXMSGSIZE): a bigger one
  // makes ZeroMQ drop that client's connection before ember sees it.
  std::int64_t max_message_bytes = 64 << 20;
  // CURVE (docs/security.md): on when curve_key names the router's key pair
  // file. The allow-lists are key files or directories of them; a client key
  // may embed and look (status, list), an admin key may also load and unload.
  std::string curve_key;
  std::string client_keys, admin_keys, worker_keys;
  ModelOptions model_defaults;
  std::map<std::string, ModelOptions, std::less<>> models;    // per-model overrides
  std::map<std::string, double, std::less<>> worker_weights;  // by worker id
  std::string log_level = "info";
  // Prometheus text on http://HOST:PORT/metrics; empty: off (docs/operations.md).
  std::string metrics_listen;
  // Embedding cache budget in bytes (docs/caching.md); 0: off.
  std::size_t cache_bytes = 0;
  // Redis second tier behind it, shared between routers (docs/caching.md):
  // "unix:/path/redis.sock" or "tcp://host:port"; empty: off. Needs
  // cache_bytes > 0. Entries expire after cache_redis_ttl; a request that
  // missed the in-memory cache waits at most cache_redis_wait for Redis.
  std::string cache_redis;
  std::chrono::seconds cache_redis_ttl{86400};
  std::chrono::milliseconds cache_redis_wait{5};
  // Worker health (router/worker_health.h): a worker whose p50 is more than
  // this many times its peers' median is "slow".
  double slow_factor = 3.0;

  const ModelOptions& ForModel(std::string_view model) const {
    auto it = models.find(model);
    return it == models.end() ? model_defaults : it->second;
  }
};

// The router's settings, each declared once (common/settings.h): flag, TOML key, range and
// comment. ModelSettings() are the per-model keys, at the top level (every model's defaults)
// and in [models.NAME] tables.
const settings::Table<RouterOptions>& RouterSettings();
const settings::Table<ModelOptions>& ModelSettings();

// Reads a router TOML file into *options (keys absent from the file keep
// their current values). Throws std::runtime_error naming the file and key.
void LoadRouterConfig(const std::filesystem::path& path, RouterOptions* options);

// config/router.toml: every setting with its comment, as shipped.
std::string RenderRouterConfig();

}  // namespace ember::router

#endif  // EMBER_ROUTER_ROUTER_OPTIONS_H_
