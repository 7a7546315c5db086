#include "worker/batcher.h"

#include <algorithm>
#include <numeric>

namespace ember::worker {

Batcher::Batcher(BatcherOptions options) : options_(std::move(options)) {
  options_.max_batch_size = std::max<std::size_t>(options_.max_batch_size, 1);
  if (options_.max_batch_tokens == 0) options_.max_batch_tokens = SIZE_MAX;
  std::sort(options_.preferred_batch_sizes.begin(), options_.preferred_batch_sizes.end());
}

bool Batcher::Add(const std::vector<BatchItem>& items) {
  if (queue_.size() + items.size() > options_.max_queue) return false;
  queue_.insert(queue_.end(), items.begin(), items.end());
  return true;
}

bool Batcher::ShouldLeave(Clock::time_point now) const {
  if (queue_.empty()) return false;
  if (now - queue_.front().enqueued >= options_.max_queue_delay) return true;
  if (queue_.size() >= options_.max_batch_size) return true;
  for (std::size_t preferred : options_.preferred_batch_sizes) {
    if (preferred <= queue_.size()) return true;
  }
  // Full by tokens: everything waiting already fills the budget.
  std::size_t longest = 0, sum = 0;
  for (const auto& item : queue_) {
    longest = std::max(longest, item.tokens);
    sum += item.tokens;
  }
  return Cost(queue_.size(), longest, sum) >= options_.max_batch_tokens;
}

std::optional<std::vector<BatchItem>> Batcher::Next(Clock::time_point now,
                                                    Clock::time_point* wake) {
  if (ShouldLeave(now)) return Take();
  *wake = queue_.empty() ? Clock::time_point::max()
                         : queue_.front().enqueued + options_.max_queue_delay;
  return std::nullopt;
}

std::vector<BatchItem> Batcher::Take() {
  if (queue_.empty()) return {};
  // Largest allowed size: max_batch_size, or the largest preferred size that
  // fits when the queue cannot fill a whole batch.
  std::size_t limit = std::min(options_.max_batch_size, queue_.size());
  if (limit < options_.max_batch_size) {
    for (auto it = options_.preferred_batch_sizes.rbegin();
         it != options_.preferred_batch_sizes.rend(); ++it) {
      if (*it <= limit) {
        limit = *it;
        break;
      }
    }
  }
  // Queue positions sorted by length; grow a window around the oldest item
  // (position 0), each step taking the neighbour closest in length.
  std::vector<std::size_t> order(queue_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    return queue_[a].tokens < queue_[b].tokens;
  });
  const std::size_t pivot =
      static_cast<std::size_t>(std::find(order.begin(), order.end(), 0) - order.begin());
  std::size_t lo = pivot, hi = pivot + 1;  // window [lo, hi) in `order`
  std::size_t longest = queue_[0].tokens, sum = queue_[0].tokens;
  const std::size_t anchor = queue_[0].tokens;
  while (hi - lo < limit) {
    const bool can_lo = lo > 0;
    const bool can_hi = hi < order.size();
    if (!can_lo && !can_hi) break;
    const std::size_t lo_gap = can_lo ? anchor - queue_[order[lo - 1]].tokens : SIZE_MAX;
    const std::size_t hi_gap = can_hi ? queue_[order[hi]].tokens - anchor : SIZE_MAX;
    const bool take_lo = lo_gap <= hi_gap;
    const std::size_t next = take_lo ? order[lo - 1] : order[hi];
    const std::size_t new_longest = std::max(longest, queue_[next].tokens);
    if (Cost(hi - lo + 1, new_longest, sum + queue_[next].tokens) > options_.max_batch_tokens) {
      // A shorter neighbour may still fit where the longer one does not.
      const std::size_t shorter = can_lo ? queue_[order[lo - 1]].tokens : 0;
      if (!take_lo && can_lo &&
          Cost(hi - lo + 1, longest, sum + shorter) <= options_.max_batch_tokens) {
        sum += shorter;
        --lo;
        continue;
      }
      break;
    }
    longest = new_longest;
    sum += queue_[next].tokens;
    take_lo ? --lo : ++hi;
  }
  std::vector<std::size_t> chosen(order.begin() + static_cast<std::ptrdiff_t>(lo),
                                  order.begin() + static_cast<std::ptrdiff_t>(hi));
  std::sort(chosen.begin(), chosen.end());
  std::vector<BatchItem> batch;
  batch.reserve(chosen.size());
  for (std::size_t i : chosen) batch.push_back(queue_[i]);
  // Remove the chosen positions, keeping the rest in arrival order.
  std::size_t next_chosen = 0, out = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    if (next_chosen < chosen.size() && chosen[next_chosen] == i) {
      ++next_chosen;
      continue;
    }
    queue_[out++] = queue_[i];
  }
  queue_.resize(out);
  return batch;
}

std::vector<BatchItem> Batcher::TakeExpired(Clock::time_point now) {
  std::vector<BatchItem> expired;
  std::erase_if(queue_, [&](const BatchItem& item) {
    if (item.deadline > now) return false;
    expired.push_back(item);
    return true;
  });
  return expired;
}

std::size_t Batcher::Remove(std::uint64_t request) {
  return std::erase_if(queue_, [&](const BatchItem& item) { return item.request == request; });
}

}  // namespace ember::worker
