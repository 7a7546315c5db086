#include "client/ranking.h"

#include <algorithm>

namespace ember {

std::vector<Ranked> RankByScore(const Embeddings& scores, std::size_t top_n) {
  std::vector<Ranked> ranked;
  if (scores.dim() == 0) return ranked;
  ranked.reserve(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) ranked.push_back({i, scores[i][0]});
  std::ranges::stable_sort(ranked,
                           [](const Ranked& a, const Ranked& b) { return a.score > b.score; });
  if (top_n != 0 && top_n < ranked.size()) ranked.resize(top_n);
  return ranked;
}

}  // namespace ember
