// Seeded token-id sequences for the model benchmarks: [CLS], random ids in
// [1000, 30000), [SEP], exactly `length` ids each (length >= 2). One
// definition, so ember-model-bench and bench/peer measure the same inputs.
#ifndef EMBER_BENCH_RANDOM_IDS_H_
#define EMBER_BENCH_RANDOM_IDS_H_

#include <cstdint>
#include <random>
#include <vector>

namespace ember::bench {

inline std::vector<std::vector<std::int32_t>> RandomIds(std::int64_t batch, std::int64_t length,
                                                        std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> dist(1000, 29999);
  std::vector<std::vector<std::int32_t>> ids(static_cast<std::size_t>(batch));
  for (auto& seq : ids) {
    seq.resize(static_cast<std::size_t>(length));
    seq.front() = 101;  // [CLS]
    for (std::int64_t i = 1; i + 1 < length; ++i) seq[static_cast<std::size_t>(i)] = dist(rng);
    seq.back() = 102;  // [SEP]
  }
  return ids;
}

}  // namespace ember::bench

#endif  // EMBER_BENCH_RANDOM_IDS_H_
