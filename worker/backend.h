// The seam between the worker and a model runtime. A Backend turns a batch of
// texts into vectors; everything about tensors, devices and tokenizers lives
// behind it, so the worker's socket and batching code never sees LibTorch.
#ifndef EMBER_WORKER_BACKEND_H_
#define EMBER_WORKER_BACKEND_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ember::worker {

class Backend {
 public:
  virtual ~Backend() = default;

  // Length of each output vector.
  virtual std::int64_t dim() const = 0;

  // Embeds `texts` as one batch and returns row-major float32
  // [texts.size() x dim()]. Throws ember::Error (BAD_REQUEST, TOO_LONG) for
  // inputs it rejects; any other exception is an internal failure. Called
  // from one thread at a time.
  virtual std::vector<float> Embed(std::span<const std::string> texts, bool truncate) = 0;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_BACKEND_H_
