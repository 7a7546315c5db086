// What the router's cache tiers keep per text: the vector, and how many tokens the model ran
// on the text, so that a cached answer reports the same usage as a computed one.
#ifndef EMBER_ROUTER_CACHED_EMBEDDING_H_
#define EMBER_ROUTER_CACHED_EMBEDDING_H_

#include <cstdint>
#include <vector>

namespace ember::router {

struct CachedEmbedding {
  std::vector<float> vector;  // empty: no entry (a miss)
  std::uint32_t tokens = 0;   // 0: not known (the worker that computed it did not say)
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_CACHED_EMBEDDING_H_
