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
  const auto key = EmbeddingCache::Key("m", 1, true, 0, "", "hello");
  EXPECT_EQ(cache.Get(key), nullptr);
  cache.Put(key, Vector(0.5f), 17);
  ASSERT_NE(cache.Get(key), nullptr);
  EXPECT_EQ(cache.Get(key)->vector, Vector(0.5f));
  EXPECT_EQ(cache.Get(key)->tokens, 17u);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.bytes(), EmbeddingCache::EntryBytes(key.size(), 4));
}

TEST(EmbeddingCacheTest, KeySeparatesEveryPart) {
  EmbeddingCache cache(1 << 20);
  cache.Put(EmbeddingCache::Key("m", 1, true, 0, "", "t"), Vector(1), 0);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 2, true, 0, "", "t")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, false, 0, "", "t")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, 64, "", "t")), nullptr) << "a cut vector";
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, 0, "query", "t")), nullptr) << "a prompt";
  // The prompt name's length keeps name and text apart: ("ab", "c") is not ("a", "bc").
  EXPECT_NE(EmbeddingCache::Key("m", 1, true, 0, "ab", "c"),
            EmbeddingCache::Key("m", 1, true, 0, "a", "bc"));
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("n", 1, true, 0, "", "t")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, 0, "", "t2")), nullptr);
  // Texts may hold NUL bytes; they stay part of the key.
  cache.Put(EmbeddingCache::Key("m", 1, true, 0, "", std::string("a\0b", 3)), Vector(2), 0);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, 0, "", "a")), nullptr);
  EXPECT_NE(cache.Get(EmbeddingCache::Key("m", 1, true, 0, "", std::string("a\0b", 3))), nullptr);
}

TEST(EmbeddingCacheTest, EvictsLeastRecentlyUsedWithinBudget) {
  const std::size_t entry =
      EmbeddingCache::EntryBytes(EmbeddingCache::Key("m", 1, true, 0, "", "0000").size(), 4);
  EmbeddingCache cache(3 * entry);
  // Keys of one length (4-digit texts), so every entry costs the same.
  const auto key = [](int i) {
    const std::string digits = std::to_string(i);
    return EmbeddingCache::Key("m", 1, true, 0, "", std::string(4 - digits.size(), '0') + digits);
  };
  cache.Put(key(0), Vector(0), 0);
  cache.Put(key(1), Vector(1), 0);
  cache.Put(key(2), Vector(2), 0);
  EXPECT_EQ(cache.bytes(), 3 * entry);
  ASSERT_NE(cache.Get(key(0)), nullptr);  // 0 is now the most recent; 1 the least
  cache.Put(key(3), Vector(3), 0);
  EXPECT_EQ(cache.Get(key(1)), nullptr);
  EXPECT_NE(cache.Get(key(0)), nullptr);
  EXPECT_NE(cache.Get(key(2)), nullptr);
  EXPECT_NE(cache.Get(key(3)), nullptr);
  EXPECT_EQ(cache.evictions(), 1u);
  for (int i = 4; i < 100; ++i) {
    cache.Put(key(i), Vector(static_cast<float>(i)), 0);
    EXPECT_LE(cache.bytes(), cache.budget());
  }
  EXPECT_EQ(cache.entries(), 3u);
  // Bigger than the whole budget: not stored, nothing evicted for it.
  cache.Put(key(1000), Vector(0, 1000), 0);
  EXPECT_EQ(cache.Get(key(1000)), nullptr);
  EXPECT_EQ(cache.entries(), 3u);
}

TEST(EmbeddingCacheTest, ReplacingAnEntryKeepsTheAccounting) {
  EmbeddingCache cache(1 << 20);
  const auto key = EmbeddingCache::Key("m", 1, true, 0, "", "t");
  cache.Put(key, Vector(1, 4), 0);
  cache.Put(key, Vector(2, 8), 0);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.bytes(), EmbeddingCache::EntryBytes(key.size(), 8));
  EXPECT_EQ(cache.Get(key)->vector, Vector(2, 8));
}

TEST(EmbeddingCacheTest, EraseVersionDropsOnlyThatVersion) {
  EmbeddingCache cache(1 << 20);
  cache.Put(EmbeddingCache::Key("m", 1, true, 0, "", "a"), Vector(1), 0);
  cache.Put(EmbeddingCache::Key("m", 1, false, 0, "", "b"), Vector(1), 0);
  cache.Put(EmbeddingCache::Key("m", 11, true, 0, "", "a"), Vector(2), 0);
  cache.Put(EmbeddingCache::Key("m2", 1, true, 0, "", "a"), Vector(3), 0);
  cache.EraseVersion("m", 1);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, true, 0, "", "a")), nullptr);
  EXPECT_EQ(cache.Get(EmbeddingCache::Key("m", 1, false, 0, "", "b")), nullptr);
  EXPECT_NE(cache.Get(EmbeddingCache::Key("m", 11, true, 0, "", "a")), nullptr);
  EXPECT_NE(cache.Get(EmbeddingCache::Key("m2", 1, true, 0, "", "a")), nullptr);
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.bytes(), 2 * EmbeddingCache::EntryBytes(
                                   EmbeddingCache::Key("m", 11, true, 0, "", "a").size(), 4));
}

}  // namespace
}  // namespace ember::router
