// The router's embedding cache alone: LRU order, the byte budget, keys that
// separate model, version, truncate flag and text, and retiring a version.
#include "router/embedding_cache.h"

#include <gtest/gtest.h>

namespace ember::router {
namespace {

std::vector<float> Vector(float seed, std::size_t dim = 4) {
  std::vector<float> v(dim);
  for (std::size_t i = 0; i < dim; ++i) v[i] = seed + static_cast<float>(i);
  return v;
}

TEST(EmbeddingCacheTest, ReturnsExactlyWhatWasPut) {
  EmbeddingCache cache(1 << 20);
  const auto key = EmbeddingCache::Key("m", 1, true, "hello");
  EXPECT_EQ(cache.Get(key), nullptr);
  cache.Put(key, Vector(0.5f));
  ASSERT_NE(cache.Get(key), nullptr);
  EXPECT_EQ(*cache.Get(key), Vector(0.5f));
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.bytes(), EmbeddingCache::EntryBytes(key.size(), 4));
}

TEST(EmbeddingCacheTest, KeySeparatesEveryPart) {
  EmbeddingCache cache(1 << 20);
  cache.Put(EmbeddingCache::Key("m", 1, true, "t"), Vector(1));
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 2, true, "t")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, false, "t")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("n", 1, true, "t")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, "t2")), nullptr);
  // Texts may hold NUL bytes; they stay part of the key.
  cache.Put(EmbeddingCache::Key("m", 1, true, std::string("a\0b", 3)), Vector(2));
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, "a")), nullptr);
  EXPECT_NE(cache.Get(EmbeddingCache::Key("m", 1, true, std::string("a\0b", 3))), nullptr);
}

TEST(EmbeddingCacheTest, EvictsLeastRecentlyUsedWithinBudget) {
  const std::size_t entry =
      EmbeddingCache::EntryBytes(EmbeddingCache::Key("m", 1, true, "0000").size(), 4);
  EmbeddingCache cache(3 * entry);
  // Keys of one length (4-digit texts), so every entry costs the same.
  const auto key = [](int i) {
    const std::string digits = std::to_string(i);
    return EmbeddingCache::Key("m", 1, true, std::string(4 - digits.size(), '0') + digits);
  };
  cache.Put(key(0), Vector(0));
  cache.Put(key(1), Vector(1));
  cache.Put(key(2), Vector(2));
  EXPECT_EQ(cache.bytes(), 3 * entry);
  ASSERT_NE(cache.Get(key(0)), nullptr);  // 0 is now the most recent; 1 the least
  cache.Put(key(3), Vector(3));
  EXPECT_EQ(cache.Get(key(1)), nullptr);
  EXPECT_NE(cache.Get(key(0)), nullptr);
  EXPECT_NE(cache.Get(key(2)), nullptr);
  EXPECT_NE(cache.Get(key(3)), nullptr);
  EXPECT_EQ(cache.evictions(), 1u);
  for (int i = 4; i < 100; ++i) {
    cache.Put(key(i), Vector(static_cast<float>(i)));
    EXPECT_LE(cache.bytes(), cache.budget());
  }
  EXPECT_EQ(cache.entries(), 3u);
  // Bigger than the whole budget: not stored, nothing evicted for it.
  cache.Put(key(1000), Vector(0, 1000));
  EXPECT_EQ(cache.Get(key(1000)), nullptr);
  EXPECT_EQ(cache.entries(), 3u);
}

TEST(EmbeddingCacheTest, ReplacingAnEntryKeepsTheAccounting) {
  EmbeddingCache cache(1 << 20);
  const auto key = EmbeddingCache::Key("m", 1, true, "t");
  cache.Put(key, Vector(1, 4));
  cache.Put(key, Vector(2, 8));
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.bytes(), EmbeddingCache::EntryBytes(key.size(), 8));
  EXPECT_EQ(*cache.Get(key), Vector(2, 8));
}

TEST(EmbeddingCacheTest, EraseVersionDropsOnlyThatVersion) {
  EmbeddingCache cache(1 << 20);
  cache.Put(EmbeddingCache::Key("m", 1, true, "a"), Vector(1));
  cache.Put(EmbeddingCache::Key("m", 1, false, "b"), Vector(1));
  cache.Put(EmbeddingCache::Key("m", 11, true, "a"), Vector(2));
  cache.Put(EmbeddingCache::Key("m2", 1, true, "a"), Vector(3));
  cache.EraseVersion("m", 1);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, "a")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, false, "b")), nullptr);
  EXPECT_NE(cache.Get(EmbeddingCache::Key("m", 11, true, "a")), nullptr);
  EXPECT_NE(cache.Get(EmbeddingCache::Key("m2", 1, true, "a")), nullptr);
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.bytes(),
            2 * EmbeddingCache::EntryBytes(EmbeddingCache::Key("m", 11, true, "a").size(), 4));
}

}  // namespace
}  // namespace ember::router
