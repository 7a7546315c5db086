// A model's memo of the words it has tokenized (internal to engine/tokenizer/): BPE's merges
// and Unigram's Viterbi cost hundreds of nanoseconds a word, a lookup here a few dozen, and
// real text repeats its words. One cache per model, shared by all the threads that tokenize
// with it (HF keeps one per thread), in 64 shards each behind a mutex of its own, so that
// threads seldom meet. A word's first pieces are kept inside its entry (most words have few),
// so that a hit reads no other memory. A shard that fills up is emptied and fills again with
// what comes next. Words of 256 bytes or more are not kept (HF's limit). Thread-safe.
#ifndef EMBER_ENGINE_TOKENIZER_WORD_CACHE_H_
#define EMBER_ENGINE_TOKENIZER_WORD_CACHE_H_

#include <tsl/hopscotch_map.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocabulary.h"

namespace ember::engine {

// The words a model's cache holds: about 10 MB of them.
inline constexpr std::size_t kWordCacheCapacity = 100'000;

template <class Piece>
class WordCache {
 public:
  static constexpr std::size_t kMaxWordBytes = 256;

  // At most `capacity` words in all.
  explicit WordCache(std::size_t capacity)
      : per_shard_(std::max<std::size_t>(capacity / kShards, 1)) {}
  WordCache(const WordCache&) = delete;
  WordCache& operator=(const WordCache&) = delete;

  // The pieces of `word` into `out` (replacing what it held); false when not cached.
  bool Get(std::string_view word, std::vector<Piece>& out) {
    const std::size_t hash = StringViewHash{}(word);
    Shard& shard = shards_[ShardOf(hash)];
    std::lock_guard lock(shard.mu);
    const auto it = shard.words.find(word, hash);
    if (it == shard.words.end()) return false;
    const Entry& e = it->second;
    const Piece* first = e.count <= kInline ? e.inline_pieces.data() : e.more.get();
    out.assign(first, first + e.count);
    return true;
  }

  void Put(std::string_view word, const std::vector<Piece>& pieces) {
    if (word.size() >= kMaxWordBytes) return;
    Entry e;
    e.count = static_cast<std::uint32_t>(pieces.size());
    if (pieces.size() <= kInline) {
      std::copy(pieces.begin(), pieces.end(), e.inline_pieces.begin());
    } else {
      e.more = std::make_unique<Piece[]>(pieces.size());
      std::copy(pieces.begin(), pieces.end(), e.more.get());
    }
    Shard& shard = shards_[ShardOf(StringViewHash{}(word))];
    std::lock_guard lock(shard.mu);
    if (shard.words.size() >= per_shard_) shard.words.clear();
    shard.words.emplace(std::string(word), std::move(e));
  }

 private:
  static constexpr std::size_t kShards = 64;
  static constexpr std::size_t kInline = std::max<std::size_t>(1, 48 / sizeof(Piece));
  struct Entry {
    std::uint32_t count = 0;
    std::array<Piece, kInline> inline_pieces{};
    std::unique_ptr<Piece[]> more;  // when count > kInline
  };
  struct Shard {
    std::mutex mu;
    tsl::hopscotch_map<std::string, Entry, StringViewHash, std::equal_to<>> words;
  };
  // The hash's top bits pick the shard (the map uses its low bits).
  static std::size_t ShardOf(std::size_t hash) { return (hash >> 58) % kShards; }

  std::size_t per_shard_;
  std::array<Shard, kShards> shards_;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_WORD_CACHE_H_
