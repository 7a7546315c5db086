// The embedding cache in front of the workers (docs/caching.md): looks a request's texts up in
// the in-memory cache (and, through the Redis tier, in Redis), answers full hits itself, asks
// workers only for the distinct texts that missed, and merges their vectors with the cached
// ones into the reply in input order. Owned by the router thread.
#ifndef EMBER_ROUTER_CACHE_FRONT_H_
#define EMBER_ROUTER_CACHE_FRONT_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/messages.h"
#include "router/embedding_cache.h"
#include "router/redis_tier.h"
#include "router/request_table.h"
#include "router/router_metrics.h"

namespace ember::router {

class CacheFront {
 public:
  // `redis` may be null (no second tier); `wait` bounds a Redis lookup.
  CacheFront(EmbeddingCache& cache, RedisTier* redis, RouterMetrics& metrics,
             std::chrono::milliseconds wait);

  enum class Lookup {
    kAnswered,    // every text hit: *reply holds the body to answer with
    kDispatch,    // send p (its body may now ask for the misses only)
    kAwaitRedis,  // wait for Redis (Resume) before dispatching
  };

  // Looks request `id` up; `version` is what its (model, version) resolves to now (nullopt:
  // nothing READY, so it waits for a worker the ordinary way and the reply fills the cache).
  Lookup Look(std::uint64_t id, PendingRequest& p, protocol::EmbedRequest& request,
              std::optional<std::uint32_t> version, Clock::time_point now, std::string* reply);

  // Ids whose Redis answer came (with the entries, one per p.texts) or whose wait ran out at
  // `now` (values empty). Owned values: pass them on to Resume.
  std::vector<std::pair<std::uint64_t, std::vector<CachedEmbedding>>> Ready(Clock::time_point now);
  // The earliest time a wait runs out, if any is pending.
  std::optional<Clock::time_point> NextWaitEnd() const;

  // Merges Redis's `values` (empty: none came) into `p`; then as Look.
  Lookup Resume(PendingRequest& p, std::vector<CachedEmbedding> values, std::string* reply);

  // A worker's REPLY `body` to `p`: stores its vectors and merges in the cached ones. Returns
  // the body to send the client, or an empty string when the reply is unusable.
  std::string Complete(const PendingRequest& p, std::string_view body,
                       const protocol::EmbedReply& reply);

 private:
  // Answers `p` when every input has a cached vector, else leaves the distinct misses in
  // p.texts and rewrites p.body to ask for them only.
  Lookup Settle(PendingRequest& p, protocol::EmbedRequest& request, std::uint32_t version,
                std::vector<CachedEmbedding> hits, std::vector<std::string> misses,
                std::vector<std::uint32_t> miss_of, std::string* reply);

  EmbeddingCache& cache_;
  RedisTier* const redis_;
  RouterMetrics& metrics_;
  const std::chrono::milliseconds wait_;
  // (give up at, id) of requests awaiting Redis; one wait for all, so FIFO order is
  // deadline order.
  std::deque<std::pair<Clock::time_point, std::uint64_t>> waits_;
  std::vector<std::pair<std::uint64_t, std::vector<std::vector<float>>>> answered_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_CACHE_FRONT_H_
