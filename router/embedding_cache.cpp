#include "router/embedding_cache.h"

namespace ember::router {
namespace {

// Key layout: model NUL version NUL truncate NUL dimensions NUL prompt-name size NUL prompt
// name, then the text. Model names hold no NUL, so the prefix up to the text identifies
// (model, version) exactly; the prompt name's size keeps a name and a text apart whatever
// bytes they hold.
std::string Prefix(std::string_view model, std::uint32_t version) {
  std::string key(model);
  key += '\0';
  key += std::to_string(version);
  key += '\0';
  return key;
}

}  // namespace

std::string EmbeddingCache::Key(std::string_view model, std::uint32_t version, bool truncate,
                                std::uint32_t dimensions, std::string_view prompt_name,
                                std::string_view text) {
  std::string key = Prefix(model, version);
  key += truncate ? '1' : '0';
  key += '\0';
  key += std::to_string(dimensions);
  key += '\0';
  key += std::to_string(prompt_name.size());
  key += '\0';
  key += prompt_name;
  key += text;
  return key;
}

std::size_t EmbeddingCache::EntryBytes(std::size_t key_bytes, std::size_t floats) {
  // List node, map node and two allocation headers, roughly.
  constexpr std::size_t kOverhead = 96;
  return key_bytes + floats * sizeof(float) + kOverhead;
}

const CachedEmbedding* EmbeddingCache::Get(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->value;
}

void EmbeddingCache::Put(const std::string& key, std::span<const float> vector,
                         std::uint32_t tokens) {
  const std::size_t cost = EntryBytes(key.size(), vector.size());
  if (auto it = index_.find(key); it != index_.end()) EraseEntry(it->second);
  if (cost > budget_) return;
  while (bytes_ + cost > budget_ && !lru_.empty()) {
    EraseEntry(std::prev(lru_.end()));
    ++evictions_;
  }
  lru_.push_front({key, {std::vector<float>(vector.begin(), vector.end()), tokens}});
  index_.emplace(lru_.front().key, lru_.begin());
  bytes_ += cost;
}

void EmbeddingCache::EraseVersion(std::string_view model, std::uint32_t version) {
  const std::string prefix = Prefix(model, version);
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->key.starts_with(prefix)) EraseEntry(it);
    it = next;
  }
}

void EmbeddingCache::EraseEntry(List::iterator it) {
  bytes_ -= EntryBytes(it->key.size(), it->value.vector.size());
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace ember::router
