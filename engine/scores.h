// A classifier's logits as scores, the one definition every client sees (TEI's, for /rerank and
// /predict without raw_scores): the sigmoid of a single logit (a cross-encoder's relevance),
// the softmax of several (a classifier's label probabilities). sentence-transformers'
// CrossEncoder.predict applies the same sigmoid to a one-label model. Header-only.
#ifndef EMBER_ENGINE_SCORES_H_
#define EMBER_ENGINE_SCORES_H_

#include <algorithm>
#include <cmath>
#include <span>

namespace ember::engine {

// Replaces one sequence's logits by its scores, computing in double.
inline void ActivateScores(std::span<float> logits) {
  if (logits.empty()) return;
  if (logits.size() == 1) {
    logits[0] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[0]))));
    return;
  }
  const double max = *std::ranges::max_element(logits);
  double sum = 0;
  for (const float x : logits) sum += std::exp(x - max);
  for (float& x : logits) x = static_cast<float>(std::exp(x - max) / sum);
}

}  // namespace ember::engine

#endif  // EMBER_ENGINE_SCORES_H_
