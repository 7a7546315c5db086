#include "worker/batcher.h"

#include <algorithm>
#include <iterator>

namespace ember::worker {

Batcher::Batcher(BatcherOptions options) : options_(std::move(options)) {
  options_.max_batch_size = std::max<std::size_t>(options_.max_batch_size, 1);
  if (options_.max_batch_tokens == 0) options_.max_batch_tokens = SIZE_MAX;
  std::sort(options_.preferred_batch_sizes.begin(), options_.preferred_batch_sizes.end());
}

bool Batcher::Add(const std::vector<BatchItem>& items) {
  if (queue_.size() + items.size() > options_.max_queue) return false;
  if (items.empty()) return true;
  for (const BatchItem& item : items) {
    const Seq seq = next_seq_++;
    auto deadline = item.deadline == Clock::time_point::max()
                        ? by_deadline_.end()
                        : by_deadline_.emplace(item.deadline, seq);
    queue_.emplace_hint(queue_.end(), seq, Queued{item, deadline});
    by_length_.emplace(item.tokens, seq);
    queued_tokens_ += item.tokens;
    // A request's items come in one Add, so they extend its last span.
    auto& spans = by_request_[item.request];
    if (!spans.empty() && spans.back().first + spans.back().count == seq) {
      ++spans.back().count;
      ++spans.back().live;
    } else {
      spans.push_back({seq, 1, 1});
    }
  }
  return true;
}

void Batcher::Erase(std::map<Seq, Queued>::iterator it) {
  const BatchItem& item = it->second.item;
  by_length_.erase({item.tokens, it->first});
  if (it->second.deadline != by_deadline_.end()) by_deadline_.erase(it->second.deadline);
  queued_tokens_ -= item.tokens;
  auto request = by_request_.find(item.request);
  if (request != by_request_.end()) {
    auto& spans = request->second;
    for (auto span = spans.begin(); span != spans.end(); ++span) {
      if (it->first >= span->first && it->first < span->first + span->count) {
        if (--span->live == 0) spans.erase(span);
        break;
      }
    }
    if (spans.empty()) by_request_.erase(request);
  }
  queue_.erase(it);
}

bool Batcher::Full() const {
  if (queue_.empty()) return false;
  if (queue_.size() >= options_.max_batch_size) return true;
  return Cost(queue_.size(), by_length_.rbegin()->first, queued_tokens_) >=
         options_.max_batch_tokens;
}

bool Batcher::Formed() const {
  if (!options_.preferred_batch_sizes.empty() &&
      options_.preferred_batch_sizes.front() <= queue_.size()) {
    return true;
  }
  return Full();
}

bool Batcher::ShouldLeave(Clock::time_point now) const {
  if (queue_.empty()) return false;
  if (now - queue_.begin()->second.item.enqueued >= options_.max_queue_delay) return true;
  return Formed();
}

std::optional<std::vector<BatchItem>> Batcher::Next(Clock::time_point now,
                                                    Clock::time_point* wake) {
  if (ShouldLeave(now)) return Take();
  *wake = queue_.empty() ? Clock::time_point::max()
                         : queue_.begin()->second.item.enqueued + options_.max_queue_delay;
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
  // Grow a window [lo, hi) of the length index around the oldest text (the first of its
  // length, since it is the oldest), each step taking the neighbour closest in length.
  const auto& [oldest, first] = *queue_.begin();
  const std::size_t anchor = first.item.tokens;
  auto lo = by_length_.find({anchor, oldest});
  auto hi = std::next(lo);
  std::size_t count = 1, longest = anchor, sum = anchor;
  while (count < limit) {
    const bool can_lo = lo != by_length_.begin();
    const bool can_hi = hi != by_length_.end();
    if (!can_lo && !can_hi) break;
    const std::size_t lower = can_lo ? std::prev(lo)->first : 0;
    const std::size_t lo_gap = can_lo ? anchor - lower : SIZE_MAX;
    const std::size_t hi_gap = can_hi ? hi->first - anchor : SIZE_MAX;
    const bool take_lo = lo_gap <= hi_gap;
    const std::size_t tokens = take_lo ? lower : hi->first;
    const std::size_t new_longest = std::max(longest, tokens);
    if (Cost(count + 1, new_longest, sum + tokens) > options_.max_batch_tokens) {
      // A shorter neighbour may still fit where the longer one does not.
      if (!take_lo && can_lo &&
          Cost(count + 1, longest, sum + lower) <= options_.max_batch_tokens) {
        sum += lower;
        --lo;
        ++count;
        continue;
      }
      break;
    }
    longest = new_longest;
    sum += tokens;
    take_lo ? --lo : ++hi;
    ++count;
  }
  std::vector<Seq> chosen;
  chosen.reserve(count);
  for (auto it = lo; it != hi; ++it) chosen.push_back(it->second);
  std::sort(chosen.begin(), chosen.end());  // the batch in arrival order
  std::vector<BatchItem> batch;
  batch.reserve(chosen.size());
  for (Seq seq : chosen) {
    auto it = queue_.find(seq);
    batch.push_back(it->second.item);
    Erase(it);
  }
  return batch;
}

std::vector<BatchItem> Batcher::TakeExpired(Clock::time_point now) {
  std::vector<Seq> seqs;
  for (auto it = by_deadline_.begin(); it != by_deadline_.end() && it->first <= now; ++it) {
    seqs.push_back(it->second);
  }
  std::sort(seqs.begin(), seqs.end());
  std::vector<BatchItem> expired;
  expired.reserve(seqs.size());
  for (Seq seq : seqs) {
    auto it = queue_.find(seq);
    expired.push_back(it->second.item);
    Erase(it);
  }
  return expired;
}

std::size_t Batcher::Remove(std::uint64_t request) {
  auto found = by_request_.find(request);
  if (found == by_request_.end()) return 0;
  const std::vector<Span> spans = found->second;  // Erase edits the original
  std::size_t removed = 0;
  for (const Span& span : spans) {
    for (auto it = queue_.lower_bound(span.first);
         it != queue_.end() && it->first < span.first + span.count;) {
      Erase(it++);
      ++removed;
    }
  }
  return removed;
}

}  // namespace ember::worker
