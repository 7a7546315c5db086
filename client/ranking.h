// A reranker's answer in rank order (TEI's /rerank, emberctl rerank): the texts a cross-encoder
// scored (Client::Score), best first.
#ifndef EMBER_CLIENT_RANKING_H_
#define EMBER_CLIENT_RANKING_H_

#include <cstddef>
#include <vector>

#include "client/client.h"

namespace ember {

struct Ranked {
  std::size_t index = 0;  // of the text in the request
  float score = 0;
};

// The rows of `scores` by their first score, highest first; equal scores keep the texts'
// order. At most `top_n` of them (0: all).
std::vector<Ranked> RankByScore(const Embeddings& scores, std::size_t top_n = 0);

}  // namespace ember

#endif  // EMBER_CLIENT_RANKING_H_
