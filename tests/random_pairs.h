// A batch of fresh random pairs for a sequence classifier's tests (bert_model_test,
// cuda_encoder_test): [CLS] a [SEP] b [SEP] of mixed lengths, up to the model's longest, each
// with its second segment marked (TokenBatch::second_start); single texts mixed in.
#ifndef EMBER_TESTS_RANDOM_PAIRS_H_
#define EMBER_TESTS_RANDOM_PAIRS_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/encoder/encoder_model.h"
#include "engine/token_batch.h"

namespace ember::engine {

inline TokenBatch RandomPairs(const EncoderModel& model, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(1000, static_cast<int32_t>(model.vocab_size() - 1));
  const auto longest = static_cast<std::size_t>(model.max_tokens());
  // (first, second) lengths without the special tokens; second 0: a single text.
  std::vector<std::pair<std::size_t, std::size_t>> lens = {
      {1, 1}, {5, 30}, {30, 5}, {0, 7}, {12, 0}, {longest / 2 - 2, longest - longest / 2 - 1}};
  std::shuffle(lens.begin(), lens.end(), rng);
  TokenBatch batch;
  for (const auto& [a, b] : lens) {
    std::vector<int32_t> seq = {101};
    for (std::size_t i = 0; i < a; ++i) seq.push_back(id(rng));
    seq.push_back(102);
    const std::size_t second = b == 0 ? 0 : seq.size();
    for (std::size_t i = 0; i < b; ++i) seq.push_back(id(rng));
    if (b != 0) seq.push_back(102);
    batch.Add(seq, second);
  }
  return batch;
}

}  // namespace ember::engine

#endif  // EMBER_TESTS_RANDOM_PAIRS_H_
