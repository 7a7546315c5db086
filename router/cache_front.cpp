#include "router/cache_front.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace ember::router {

CacheFront::CacheFront(EmbeddingCache& cache, RedisTier* redis, RouterMetrics& metrics,
                       std::chrono::milliseconds wait)
    : cache_(cache), redis_(redis), metrics_(metrics), wait_(wait) {}

CacheFront::Lookup CacheFront::Look(std::uint64_t id, PendingRequest& p,
                                    protocol::EmbedRequest& request,
                                    std::optional<std::uint32_t> version, Clock::time_point now,
                                    std::string* reply) {
  p.truncate = request.truncate;
  p.dimensions = request.dimensions;
  p.prompt_name = request.prompt_name;
  if (!version) {
    p.texts = std::move(request.inputs);
    return Lookup::kDispatch;
  }
  // Misses go to the worker once per distinct text: repeated texts get the very same vector.
  std::vector<CachedEmbedding> hits(request.inputs.size());
  std::vector<std::string> misses;
  std::vector<std::uint32_t> miss_of(request.inputs.size(), 0);
  std::unordered_map<std::string_view, std::uint32_t> distinct;
  std::size_t missed = 0;
  for (std::size_t i = 0; i < request.inputs.size(); ++i) {
    const std::string& text = request.inputs[i];
    if (const auto* entry = cache_.Get(EmbeddingCache::Key(p.model, *version, p.truncate,
                                                           p.dimensions, p.prompt_name, text))) {
      hits[i] = *entry;
      continue;
    }
    ++missed;
    const auto [it, fresh] = distinct.try_emplace(text, static_cast<std::uint32_t>(misses.size()));
    if (fresh) misses.push_back(text);
    miss_of[i] = it->second;
  }
  metrics_.cache_hits += hits.size() - missed;
  metrics_.cache_misses += missed;
  if (redis_ != nullptr && !misses.empty()) {
    std::vector<std::string> keys;
    keys.reserve(misses.size());
    for (const auto& text : misses) {
      keys.push_back(
          EmbeddingCache::Key(p.model, *version, p.truncate, p.dimensions, p.prompt_name, text));
    }
    if (redis_->Lookup(id, std::move(keys))) {
      p.awaiting_redis = true;
      p.cache_version = *version;
      p.hits = std::move(hits);
      p.texts = std::move(misses);
      p.miss_of = std::move(miss_of);
      waits_.emplace_back(now + wait_, id);
      return Lookup::kAwaitRedis;
    }
    metrics_.cache_redis_misses += missed;  // the tier is down or busy
  }
  return Settle(p, request, *version, std::move(hits), std::move(misses), std::move(miss_of),
                reply);
}

std::vector<std::pair<std::uint64_t, std::vector<CachedEmbedding>>> CacheFront::Ready(
    Clock::time_point now) {
  std::vector<std::pair<std::uint64_t, std::vector<CachedEmbedding>>> ready;
  if (redis_ != nullptr) {
    for (auto& result : redis_->TakeResults())
      ready.emplace_back(result.id, std::move(result.values));
  }
  while (!waits_.empty() && waits_.front().first <= now) {
    ready.emplace_back(waits_.front().second, std::vector<CachedEmbedding>{});
    waits_.pop_front();
  }
  return ready;
}

std::optional<Clock::time_point> CacheFront::NextWaitEnd() const {
  if (waits_.empty()) return std::nullopt;
  return waits_.front().first;
}

CacheFront::Lookup CacheFront::Resume(PendingRequest& p, std::vector<CachedEmbedding> values,
                                      std::string* reply) {
  p.awaiting_redis = false;
  std::vector<CachedEmbedding> hits = std::exchange(p.hits, {});
  std::vector<std::string> texts = std::exchange(p.texts, {});
  std::vector<std::uint32_t> miss_of = std::exchange(p.miss_of, {});
  // Every vector of one reply has one dim: a Redis value of another size is not trusted
  // (corrupt, or written by something else).
  std::size_t dim = 0;
  for (const auto& hit : hits) {
    if (!hit.vector.empty()) dim = hit.vector.size();
  }
  // Per distinct text: its entry from Redis, or its index among the texts still missing.
  std::vector<CachedEmbedding> found(texts.size());
  std::vector<std::uint32_t> still(texts.size(), 0);
  std::vector<std::string> misses;
  for (std::size_t j = 0; j < texts.size(); ++j) {
    CachedEmbedding* value = j < values.size() ? &values[j] : nullptr;
    if (value != nullptr && !value->vector.empty() && (dim == 0 || value->vector.size() == dim)) {
      dim = value->vector.size();
      cache_.Put(EmbeddingCache::Key(p.model, p.cache_version, p.truncate, p.dimensions,
                                     p.prompt_name, texts[j]),
                 value->vector, value->tokens);
      found[j] = std::move(*value);
    } else {
      still[j] = static_cast<std::uint32_t>(misses.size());
      misses.push_back(std::move(texts[j]));
    }
  }
  for (std::size_t i = 0; i < hits.size(); ++i) {
    if (!hits[i].vector.empty()) continue;
    const std::uint32_t j = miss_of[i];
    if (!found[j].vector.empty()) {
      hits[i] = found[j];
      ++metrics_.cache_redis_hits;
    } else {
      miss_of[i] = still[j];
      ++metrics_.cache_redis_misses;
    }
  }
  // p.body is still the client's: it decoded when the request came in.
  protocol::EmbedRequest request;
  std::string error;
  protocol::Decode(p.body.to_string_view(), &request, &error);
  return Settle(p, request, p.cache_version, std::move(hits), std::move(misses), std::move(miss_of),
                reply);
}

CacheFront::Lookup CacheFront::Settle(PendingRequest& p, protocol::EmbedRequest& request,
                                      std::uint32_t version, std::vector<CachedEmbedding> hits,
                                      std::vector<std::string> misses,
                                      std::vector<std::uint32_t> miss_of, std::string* reply) {
  if (misses.empty()) {
    const auto dim = static_cast<std::uint32_t>(hits.empty() ? 0 : hits.front().vector.size());
    protocol::EmbedReply answer{.model = p.model,
                                .version = version,
                                .worker = "cache",
                                .dim = dim,
                                .count = static_cast<std::uint32_t>(hits.size()),
                                .batch_size = 0,
                                .data = {},
                                .tokens = {}};
    answer.data.reserve(hits.size() * dim);
    for (const auto& hit : hits) {
      answer.data.insert(answer.data.end(), hit.vector.begin(), hit.vector.end());
      answer.tokens.push_back(hit.tokens);
    }
    if (std::ranges::find(answer.tokens, 0u) != answer.tokens.end()) answer.tokens.clear();
    *reply = protocol::Encode(answer);
    return Lookup::kAnswered;
  }
  if (misses.size() < hits.size()) {
    // Ask the worker for the distinct misses only, of the version the hits are of.
    p.hits = std::move(hits);
    p.miss_of = std::move(miss_of);
    p.version = version;
    request.version = version;
    request.inputs = misses;
    request.model = p.model;
    p.body = zmq::message_t(protocol::Encode(request));
  } else {
    p.hits.clear();  // every text is a distinct miss: the client's body as it is
  }
  p.text_count = static_cast<std::uint32_t>(misses.size());
  p.texts = std::move(misses);
  return Lookup::kDispatch;
}

std::string CacheFront::Complete(const PendingRequest& p, std::string_view body,
                                 const protocol::EmbedReply& reply) {
  const std::size_t dim = reply.dim;
  if (reply.count != p.texts.size() || dim == 0)
    return p.hits.empty() ? std::string(body) : std::string();
  // Per text, the tokens the worker counted (0: it did not say).
  const auto tokens_of = [&](std::size_t i) { return reply.tokens.empty() ? 0u : reply.tokens[i]; };
  for (std::size_t i = 0; i < p.texts.size(); ++i) {
    const std::string key = EmbeddingCache::Key(p.model, reply.version, p.truncate, p.dimensions,
                                                p.prompt_name, p.texts[i]);
    const auto vector = std::span(reply.data).subspan(i * dim, dim);
    cache_.Put(key, vector, tokens_of(i));
    if (redis_ != nullptr) redis_->Store(key, vector, tokens_of(i));
  }
  if (p.hits.empty()) return std::string(body);
  // A partial hit (or repeated texts): put every vector, and its token count, in its place.
  protocol::EmbedReply merged = reply;
  merged.data.clear();
  merged.data.reserve(p.hits.size() * dim);
  merged.tokens.clear();
  for (std::size_t i = 0; i < p.hits.size(); ++i) {
    const auto& hit = p.hits[i];
    if (hit.vector.empty()) {
      const auto from = reply.data.begin() + static_cast<std::ptrdiff_t>(p.miss_of[i] * dim);
      merged.data.insert(merged.data.end(), from, from + static_cast<std::ptrdiff_t>(dim));
      merged.tokens.push_back(tokens_of(p.miss_of[i]));
    } else if (hit.vector.size() == dim) {
      merged.data.insert(merged.data.end(), hit.vector.begin(), hit.vector.end());
      merged.tokens.push_back(hit.tokens);
    } else {
      return {};  // cannot happen: the body pinned the version the hits are of
    }
  }
  // One count not known makes the reply's usage not known, rather than too low.
  if (std::ranges::find(merged.tokens, 0u) != merged.tokens.end()) merged.tokens.clear();
  merged.count = static_cast<std::uint32_t>(p.hits.size());
  return protocol::Encode(merged);
}

}  // namespace ember::router
