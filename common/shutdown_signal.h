// Turns SIGINT/SIGTERM into a flag that event loops poll.
//
// Construct it in main() before starting any thread: it blocks both signals
// in the calling thread (and so in every thread started later) and waits for
// them on a thread of its own, so no handler runs in an arbitrary thread and
// no global state is needed.
#ifndef EMBER_COMMON_SHUTDOWN_SIGNAL_H_
#define EMBER_COMMON_SHUTDOWN_SIGNAL_H_

#include <atomic>
#include <thread>

namespace ember {

class ShutdownSignal {
 public:
  ShutdownSignal();
  ~ShutdownSignal();
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

  // True once SIGINT or SIGTERM arrived (or Request() was called).
  bool requested() const { return requested_.load(std::memory_order_relaxed); }
  void Request() { requested_.store(true, std::memory_order_relaxed); }

  // The flag itself, for components that take a stop token.
  const std::atomic<bool>& flag() const { return requested_; }

 private:
  std::atomic<bool> requested_{false};
  std::atomic<bool> done_{false};
  std::thread waiter_;
};

}  // namespace ember

#endif  // EMBER_COMMON_SHUTDOWN_SIGNAL_H_
