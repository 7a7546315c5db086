// Dynamic batching policy for one model version: which queued texts run
// together, and when. Pure logic with the clock passed in, so tests drive it
// with made-up times; ModelRunner supplies the threads.
//
// Rules (as Triton's dynamic batcher and TEI's token budget):
//  - a batch leaves when it is full (max_batch_size texts, or the token budget
//    would overflow: padded tokens, or real ones for a backend that packs), when
//    a preferred batch size can be formed, or when its oldest text has waited
//    max_queue_delay;
//  - the oldest text is always in the next batch (no starvation), even if it
//    alone exceeds max_batch_tokens (it then runs alone: never a loop);
//  - the rest of the batch is filled with the texts closest in length to the
//    oldest, so short texts are not padded to long ones;
//  - the queue is bounded (max_queue texts); a full queue refuses new work.
//
// Cost: the queue is indexed by arrival, by length and by deadline, so a decision costs
// O(log queue) and taking a batch of b texts O(b log queue): at the 100k+ texts/s a GPU
// demands, the scheduler's cost per text does not grow with the backlog (it used to sort and
// scan the whole queue on every decision).
#ifndef EMBER_WORKER_BATCHER_H_
#define EMBER_WORKER_BATCHER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember::worker {

using Clock = std::chrono::steady_clock;

struct BatcherOptions {
  std::size_t max_batch_size = 32;  // texts per batch
  std::chrono::microseconds max_queue_delay{2000};
  // Tokens per batch: batch size x longest text when `padded`, else the sum of its texts'
  // lengths (a backend that packs sequences pays only for real tokens: Backend::pads()).
  std::size_t max_batch_tokens = 16384;
  bool padded = true;
  std::vector<std::size_t> preferred_batch_sizes;  // e.g. {8, 16, 32}; empty: none
  std::size_t max_queue = 4096;                    // texts waiting
};

// On CPU, throughput peaks at a few hundred padded tokens per batch and falls
// beyond (docs/batching.md); GPUs want large batches (TEI's default).
inline constexpr std::size_t kCpuBatchTokens = 512;
inline constexpr std::size_t kGpuBatchTokens = 32768;
// Texts per batch: on CPU the measured sweet spot; on a GPU no cap of its own (the setting's
// largest value), so that the token budget alone sizes batches (issue 24: with a cap of 32 an
// H200 sat half idle with 512 requests in flight).
inline constexpr std::size_t kCpuBatchTexts = 32;
inline constexpr std::size_t kGpuBatchTexts = 65'536;

// One text of a request, with what the batcher needs to know about it.
struct BatchItem {
  std::uint64_t request = 0;
  std::uint32_t index = 0;  // position in the request's inputs
  std::size_t tokens = 0;
  Clock::time_point enqueued;
  Clock::time_point deadline;
};

class Batcher {
 public:
  explicit Batcher(BatcherOptions options);

  const BatcherOptions& options() const { return options_; }
  std::size_t size() const { return queue_.size(); }

  // Whether what waits already fills a batch (by texts or by tokens): waiting longer cannot
  // grow the next batch.
  bool Full() const;
  // Whether a batch may leave without waiting for max_queue_delay: full, or a preferred size
  // can be formed. Whoever queues texts wakes the scheduler when this turns true.
  bool Formed() const;

  // Queues all items of one request, or none if they do not fit.
  bool Add(const std::vector<BatchItem>& items);

  // Takes the next batch if one should leave at `now`. Otherwise returns
  // nullopt and sets *wake to when it should be asked again (max time_point
  // if the queue is empty).
  std::optional<std::vector<BatchItem>> Next(Clock::time_point now, Clock::time_point* wake);

  // Takes the next batch now whatever the rules say (used when the model is
  // idle and draining); empty if the queue is.
  std::vector<BatchItem> Take();

  // Removes and returns items whose deadline passed at `now`.
  std::vector<BatchItem> TakeExpired(Clock::time_point now);

  // Removes the items of `request` (it failed); returns how many.
  std::size_t Remove(std::uint64_t request);

 private:
  using Seq = std::uint64_t;  // arrival number: queue order, unique
  struct Queued {
    BatchItem item;
    std::multimap<Clock::time_point, Seq>::iterator deadline;  // by_deadline_.end(): none
  };
  // A request's items have consecutive arrival numbers [first, first + count).
  struct Span {
    Seq first = 0;
    std::size_t count = 0;
    std::size_t live = 0;  // still queued
  };

  bool ShouldLeave(Clock::time_point now) const;
  // Unlinks the item `it` from every index.
  void Erase(std::map<Seq, Queued>::iterator it);
  // What a batch of `count` texts, the longest `longest` tokens and `sum` tokens in all, costs
  // against max_batch_tokens.
  std::size_t Cost(std::size_t count, std::size_t longest, std::size_t sum) const {
    return options_.padded ? count * longest : sum;
  }

  BatcherOptions options_;
  Seq next_seq_ = 0;
  std::map<Seq, Queued> queue_;                        // in arrival order
  std::set<std::pair<std::size_t, Seq>> by_length_;    // (tokens, arrival)
  std::multimap<Clock::time_point, Seq> by_deadline_;  // finite deadlines only
  std::unordered_map<std::uint64_t, std::vector<Span>> by_request_;
  std::size_t queued_tokens_ = 0;
};

}  // namespace ember::worker

#endif  // EMBER_WORKER_BATCHER_H_
