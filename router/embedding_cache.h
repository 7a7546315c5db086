// The router's embedding cache: least-recently-used vectors under a byte
// budget, keyed by (model, resolved version, truncate flag, dimensions, prompt name, text). The key
// holds the version that computed the vector, so a vector of a retired
// version is never served for its successor; EraseVersion frees them early.
// Owned and used by the router thread only.
#ifndef EMBER_ROUTER_EMBEDDING_CACHE_H_
#define EMBER_ROUTER_EMBEDDING_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "router/cached_embedding.h"

namespace ember::router {

class EmbeddingCache {
 public:
  explicit EmbeddingCache(std::size_t budget_bytes) : budget_(budget_bytes) {}

  // `dimensions` and `prompt_name`: the request's (0, "": the model's own), since a cut
  // vector, or one with another prompt before the text, is another vector.
  static std::string Key(std::string_view model, std::uint32_t version, bool truncate,
                         std::uint32_t dimensions, std::string_view prompt_name,
                         std::string_view text);

  // The entry under `key`, now the most recently used; nullptr on a miss.
  // Valid until the next Put or Erase.
  const CachedEmbedding* Get(const std::string& key);
  // Stores a vector and its token count (0: not known), evicting the least recently used
  // entries to stay within the budget. An entry bigger than the whole budget is not stored.
  void Put(const std::string& key, std::span<const float> vector, std::uint32_t tokens);
  // Drops every entry of (model, version).
  void EraseVersion(std::string_view model, std::uint32_t version);

  std::size_t bytes() const { return bytes_; }
  std::size_t budget() const { return budget_; }
  std::size_t entries() const { return index_.size(); }
  std::uint64_t evictions() const { return evictions_; }

  // What one entry costs against the budget: key, floats and bookkeeping.
  static std::size_t EntryBytes(std::size_t key_bytes, std::size_t floats);

 private:
  struct Entry {
    std::string key;
    CachedEmbedding value;
  };
  using List = std::list<Entry>;  // most recently used first

  void EraseEntry(List::iterator it);

  std::size_t budget_;
  std::size_t bytes_ = 0;
  std::uint64_t evictions_ = 0;
  List lru_;
  std::unordered_map<std::string_view, List::iterator> index_;  // views into Entry::key
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_EMBEDDING_CACHE_H_
