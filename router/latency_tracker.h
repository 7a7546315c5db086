// One worker's response times, as the balancing policies and operators see
// them: a plain EWMA, a peak-sensitive EWMA (as in Finagle and linkerd: jumps
// up to a slow sample at once, decays with time), and a window of recent
// samples for percentiles.
#ifndef EMBER_ROUTER_LATENCY_TRACKER_H_
#define EMBER_ROUTER_LATENCY_TRACKER_H_

#include <array>
#include <chrono>
#include <cstddef>

namespace ember::router {

// The last kWindow response times, for percentiles. Recording one is a store.
class LatencyWindow {
 public:
  static constexpr std::size_t kWindow = 256;

  void Record(double ms) {
    window_[samples_ % kWindow] = static_cast<float>(ms);
    ++samples_;
  }
  std::size_t samples() const { return samples_; }
  // Percentile q in [0, 1] of the last kWindow samples, in milliseconds; 0 when empty.
  double PercentileMs(double q) const;

 private:
  std::array<float, kWindow> window_{};
  std::size_t samples_ = 0;
};

class LatencyTracker {
 public:
  using Clock = std::chrono::steady_clock;

  // `decay` is the peak EWMA's time constant: after `decay` without samples
  // an old peak has faded to 1/e of its excess.
  explicit LatencyTracker(std::chrono::milliseconds decay = std::chrono::seconds(2));

  void Record(std::chrono::microseconds latency, Clock::time_point now);

  bool empty() const { return window_.samples() == 0; }
  std::size_t samples() const { return window_.samples(); }
  // Plain EWMA (weight 0.2 per sample), in milliseconds; 0 when empty.
  double ewma_ms() const { return ewma_ms_; }
  // Peak EWMA in milliseconds as of `now`; 0 when empty.
  double PeakEwmaMs(Clock::time_point now) const;
  // Percentile q in [0, 1] of the last kWindow samples, in milliseconds.
  double PercentileMs(double q) const { return window_.PercentileMs(q); }

  static constexpr std::size_t kWindow = LatencyWindow::kWindow;

 private:
  double decay_ms_;
  double ewma_ms_ = 0;
  double peak_ms_ = 0;
  Clock::time_point peak_at_{};
  LatencyWindow window_;
};

}  // namespace ember::router

#endif  // EMBER_ROUTER_LATENCY_TRACKER_H_
