#include "router/router_options.h"

#include <stdexcept>

#include "common/config_file.h"

namespace ember::router {
namespace {

constexpr char kPolicies[] =
    "How requests are spread over the workers that serve a model:\n"
    "  round_robin           each worker in turn\n"
    "  weighted_round_robin  in proportion to each worker's weight\n"
    "  least_connections     the worker with the fewest requests in flight\n"
    "  response_time         the worker with the lowest latency EWMA\n"
    "  adaptive              power of two choices on peak-EWMA latency x (in flight + 1);\n"
    "                        the best tail latency when workers are uneven (docs/balancing.md)";

}  // namespace

const settings::Table<ModelOptions>& ModelSettings() {
  static const settings::Table<ModelOptions> table = [] {
    settings::Table<ModelOptions> t;
    t.Choice(
         "policy",
         "default balancing policy: round_robin, weighted_round_robin, least_connections, "
         "response_time, adaptive",
         [](auto& m) -> auto& { return m.policy; }, ParsePolicyKind, PolicyKindName,
         {"round_robin", "weighted_round_robin", "least_connections", "response_time", "adaptive"})
        .Doc(kPolicies);
    t.Int(
         "max-queue", "requests per model waiting for worker credit before OVERLOADED",
         [](auto& m) -> auto& { return m.max_queue; }, 0, 10'000'000)
        .Doc(
            "Requests per model that may wait in the router for a worker with free capacity;\n"
            "beyond this, clients get OVERLOADED at once.");
    t.Real(
         "hedge-after-p99", "hedge a request held this many times the model's p99 (0: never)",
         [](auto& m) -> auto& { return m.hedge_after_p99; }, 0.0, 1000.0)
        .Doc(
            "A request a worker has held this many times the p99 of the model's last 256\n"
            "replies (and at least hedge-min-ms) is sent once more to another worker with free\n"
            "capacity; the first answer goes to the client. A stopped, dying or cut-off worker\n"
            "then costs its requests about this long, not the heartbeats' liveness. 0: never.");
    t.Duration(
         "hedge-min-ms", "never hedge a request sooner than this",
         [](auto& m) -> auto& { return m.hedge_min; }, 1, 3'600'000)
        .Doc("The shortest time a worker holds a request before it is hedged, in milliseconds.");
    return t;
  }();
  return table;
}

const settings::Table<RouterOptions>& RouterSettings() {
  static const settings::Table<RouterOptions> table = [] {
    settings::Table<RouterOptions> t;
    t.Text(
         "frontend", "endpoint clients connect to", [](auto& o) -> auto& { return o.frontend; })
        .Doc("Clients (the SDK, emberctl, the gateway) connect here.");
    t.Text(
         "backend", "endpoint workers connect to", [](auto& o) -> auto& { return o.backend; })
        .Doc("Workers connect here.");
    t.Duration(
         "heartbeat-ms", "heartbeat interval",
         [](auto& o) -> auto& { return o.heartbeat_interval; }, 10, 60'000)
        .Doc(
            "Workers and router exchange heartbeats this often; a worker silent for `liveness`\n"
            "intervals is dead and its requests go to another worker.");
    t.Int(
         "liveness", "heartbeats a worker may miss", [](auto& o) -> auto& { return o.liveness; }, 1,
         100)
        .Doc("Heartbeats a worker may miss.");
    t.Duration(
         "default-timeout-ms", "deadline of requests that set none",
         [](auto& o) -> auto& { return o.default_timeout; }, 1, 3'600'000)
        .Doc("Deadline for requests that do not set timeout_ms.");
    t.Duration(
         "control-timeout-ms", "deadline of load / unload commands that set none",
         [](auto& o) -> auto& { return o.control_timeout; }, 1, 86'400'000)
        .Doc("Deadline for load and unload commands that set none (big models take a while).");
    t.Int(
         "max-attempts", "workers one request may be tried on before UNAVAILABLE",
         [](auto& o) -> auto& { return o.max_attempts; }, 1, 100)
        .Doc(
            "Workers one request is tried on (its worker died, or was unreachable) before it\n"
            "fails with UNAVAILABLE.");
    t.Duration(
         "model-retention-ms", "how long requests wait for a model after its last worker left",
         [](auto& o) -> auto& { return o.model_retention; }, 0, 86'400'000)
        .Doc(
            "How long requests for a model keep waiting (queued, until their deadline) after its\n"
            "last worker left, e.g. during a worker restart. Afterwards new requests get\n"
            "UNKNOWN_MODEL.");
    t.Text(
         "log-level", "trace, debug, info, warn, error",
         [](auto& o) -> auto& { return o.log_level; })
        .Doc("Log level: trace, debug, info, warn, error.");
    t.Int(
         "max-texts-per-request", "texts in one request before BAD_REQUEST",
         [](auto& o) -> auto& { return o.max_texts_per_request; }, 1, 10'000'000)
        .Section(
            "Input limits. Too many texts or too long a text: BAD_REQUEST. Too many requests in\n"
            "flight from one client: OVERLOADED. A message larger than max-message-bytes makes\n"
            "ZeroMQ drop that client's connection (no reply is possible at that point),\n"
            "protecting the router's memory.")
        .Doc("Texts in one request.");
    t.Int(
         "max-text-bytes", "bytes of one text before BAD_REQUEST",
         [](auto& o) -> auto& { return o.max_text_bytes; }, 1, std::int64_t{1} << 32)
        .Doc("Bytes of one text.");
    t.Int(
         "io-threads", "ZeroMQ I/O threads for the sockets' reads and writes",
         [](auto& o) -> auto& { return o.io_threads; }, 1, 64)
        .Doc(
            "ZeroMQ I/O threads: each connection's reads and writes run on one of them. On an\n"
            "H200 host one thread was busy 0.73 of its time at 58k one-text requests/s\n"
            "(docs/performance.md \"Served on an H200\"); more spread the connections.");
    t.Int(
         "max-in-flight-per-client", "requests one client may have in flight before OVERLOADED",
         [](auto& o) -> auto& { return o.max_in_flight_per_client; }, 1, 10'000'000)
        .Doc("Requests one client may have in flight.");
    t.Int(
         "max-message-bytes", "largest frontend message; ZeroMQ drops a client that sends more",
         [](auto& o) -> auto& { return o.max_message_bytes; }, 1024, std::int64_t{1} << 34)
        .Doc("Largest message on the frontend.");
    t.Text(
         "metrics-listen", "HOST:PORT to serve Prometheus metrics on (GET /metrics); empty: off",
         [](auto& o) -> auto& { return o.metrics_listen; })
        .Section(
            "Prometheus metrics on http://HOST:PORT/metrics (docs/operations.md): request counts\n"
            "by model and outcome, latency and batch-size histograms, queues, worker liveness\n"
            "and health, cache hits. Empty: off.")
        .Doc("HOST:PORT; empty: off.")
        .Example("\"127.0.0.1:9464\"");
    t.Real(
         "slow-factor", "a worker whose p50 exceeds this many times its peers' median is slow",
         [](auto& o) -> auto& { return o.slow_factor; }, 1.0, 1000.0)
        .Doc(
            "A worker whose router-measured p50 is more than slow-factor times the median of its\n"
            "peers' (workers serving one of its models) is flagged \"slow\".");
    t.Int(
         "cache-bytes", "embedding cache budget in bytes (docs/caching.md); 0: off",
         [](auto& o) -> auto& { return o.cache_bytes; }, 0, std::int64_t{1} << 40)
        .Doc(
            "Embedding cache (docs/caching.md): vectors kept in the router, LRU, within this many\n"
            "bytes; repeated texts are answered without a worker. 0: off.");
    t.Text(
         "cache-redis",
         "Redis second tier for the cache: unix:/PATH or tcp://HOST:PORT; empty: off",
         [](auto& o) -> auto& { return o.cache_redis; })
        .Doc(
            "Redis second tier behind the in-memory cache, shared by several routers\n"
            "(docs/caching.md): \"unix:/run/redis/redis.sock\" or \"tcp://HOST:PORT\". Needs\n"
            "cache-bytes > 0. Empty: off. Redis down never fails a request.");
    t.Duration(
         "cache-redis-ttl-s", "expiry of vectors stored in Redis",
         [](auto& o) -> auto& { return o.cache_redis_ttl; }, 1, 365 * 86400)
        .Doc("Expiry of the vectors the router stores in Redis (SET ... EX), in seconds.");
    t.Duration(
         "cache-redis-wait-ms", "longest a request waits for Redis before going to a worker",
         [](auto& o) -> auto& { return o.cache_redis_wait; }, 1, 10'000)
        .Doc(
            "Longest a request that missed in memory waits for Redis before it goes to a worker\n"
            "anyway.");
    t.Text(
         "curve-key", "this router's CURVE key pair file (emberctl keys generate); turns CURVE on",
         [](auto& o) -> auto& { return o.curve_key; })
        .Example("\"/etc/ember/keys/router.key\"")
        .Section(
            "CURVE authentication and encryption (docs/security.md); off unless curve-key is set.\n"
            "Allow-lists are a key file or a directory of *.pub files. Client keys may embed and\n"
            "see status; admin keys may also load and unload.")
        .Commented();
    t.Text(
         "client-keys", "public key file or directory: clients that may embed and see status",
         [](auto& o) -> auto& { return o.client_keys; })
        .Example("\"/etc/ember/keys/clients\"");
    t.Text(
         "admin-keys", "public key file or directory: clients that may also load and unload models",
         [](auto& o) -> auto& { return o.admin_keys; })
        .Example("\"/etc/ember/keys/admins\"");
    t.Text(
         "worker-keys", "public key file or directory: workers that may register",
         [](auto& o) -> auto& { return o.worker_keys; })
        .Example("\"/etc/ember/keys/workers\"");
    return t;
  }();
  return table;
}

void LoadRouterConfig(const std::filesystem::path& path, RouterOptions* options) {
  const toml::table root = config::ParseFile(path);
  std::vector<std::string> known = RouterSettings().Keys();
  for (const auto& k : ModelSettings().Keys()) known.push_back(k);
  known.push_back("models");
  known.push_back("workers");
  config::CheckKeys(root, known, path);
  RouterSettings().Read(root, options, path);
  ModelSettings().Read(root, &options->model_defaults, path);
  if (const toml::table* models = root["models"].as_table()) {
    for (const auto& [name, node] : *models) {
      const std::string key = "models." + std::string(name.str());
      const toml::table* t = node.as_table();
      if (t == nullptr) config::Bad(path, key, "expected a table");
      config::CheckKeys(*t, ModelSettings().Keys(), path, key + ".");
      ModelOptions m = options->model_defaults;
      ModelSettings().Read(*t, &m, path, key + ".");
      options->models[std::string(name.str())] = m;
    }
  }
  if (const toml::table* workers = root["workers"].as_table()) {
    for (const auto& [id, node] : *workers) {
      const auto weight =
          node.as_table() ? (*node.as_table())["weight"].value<double>() : std::nullopt;
      if (!weight || *weight <= 0) {
        config::Bad(path, "workers." + std::string(id.str()) + ".weight",
                    "expected a positive number");
      }
      options->worker_weights[std::string(id.str())] = *weight;
    }
  }
}

std::string RenderRouterConfig() {
  RouterOptions shipped;
  // A router serves other machines' clients and workers.
  shipped.frontend = "tcp://0.0.0.0:5555";
  shipped.backend = "tcp://0.0.0.0:5556";
  return "# ember-router configuration: `ember-router --config router.toml`.\n"
         "# Generated by `ember-router --print-config` (scripts/make-configs.sh): keys are the\n"
         "# router's long flags; a flag on the command line wins. Unknown keys are an error.\n" +
         RouterSettings().Render(shipped) + ModelSettings().Render(shipped.model_defaults) +
         "\n"
         "# Per-model overrides of policy, max-queue and hedging.\n"
         "# [models.bge-small]\n"
         "# policy = \"least_connections\"\n"
         "# max-queue = 4096\n"
         "\n"
         "# Worker weights by worker id (otherwise the weight the worker announces).\n"
         "# [workers.\"gpu-a/cuda:0\"]\n"
         "# weight = 3.0\n";
}

}  // namespace ember::router
