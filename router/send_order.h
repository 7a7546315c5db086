// The requests sent to a model's workers, oldest first, each with its send time: what the
// dispatcher's hedging walks (router/dispatcher.h). Sends happen in time order, so appending
// keeps the order and the due ones are always at the front. A ring that keeps its capacity, so
// once warm a dispatch costs no allocation (tests/router_allocation_test.cpp).
#ifndef EMBER_ROUTER_SEND_ORDER_H_
#define EMBER_ROUTER_SEND_ORDER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::router {

class SendOrder {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    Clock::time_point sent;
    std::uint64_t id = 0;
  };

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // The oldest entry; requires !empty().
  const Entry& front() const { return ring_[head_]; }
  void pop() {
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }
  void push(Entry entry) {
    if (size_ == ring_.size()) Grow();
    ring_[(head_ + size_) % ring_.size()] = entry;
    ++size_;
  }

 private:
  void Grow() {
    std::vector<Entry> bigger(ring_.empty() ? 64 : 2 * ring_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(bigger);
    head_ = 0;
  }

  std::vector<Entry> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_SEND_ORDER_H_
