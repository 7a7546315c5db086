#include "router/latency_tracker.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace ember::router {
namespace {

constexpr double kEwmaWeight = 0.2;

double Millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

LatencyTracker::LatencyTracker(std::chrono::milliseconds decay)
    : decay_ms_(static_cast<double>(std::max<std::int64_t>(decay.count(), 1))) {}

void LatencyTracker::Record(std::chrono::microseconds latency, Clock::time_point now) {
  const double ms = static_cast<double>(latency.count()) / 1000.0;
  const bool first = empty();
  ewma_ms_ = first ? ms : ewma_ms_ + kEwmaWeight * (ms - ewma_ms_);
  // Peak EWMA: a slower sample takes effect at once; a faster one is blended
  // in with a weight that grows with the time since the last sample.
  const double current = PeakEwmaMs(now);
  if (first || ms > current) {
    peak_ms_ = ms;
  } else {
    const double w = std::exp(-Millis(now - peak_at_) / decay_ms_);
    peak_ms_ = current * w + ms * (1 - w);
  }
  peak_at_ = now;
  window_.Record(ms);
}

double LatencyTracker::PeakEwmaMs(Clock::time_point now) const {
  if (empty()) return 0;
  // Without new samples the peak decays towards the plain EWMA, so a worker
  // that was slow once is tried again eventually.
  const double w = std::exp(-std::max(0.0, Millis(now - peak_at_)) / decay_ms_);
  return ewma_ms_ + (peak_ms_ - ewma_ms_) * w;
}

double LatencyWindow::PercentileMs(double q) const {
  const std::size_t n = std::min(samples_, kWindow);
  if (n == 0) return 0;
  std::array<float, kWindow> sorted = window_;  // on the stack: no allocation
  const auto k =
      static_cast<std::size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1) + 0.5);
  const auto end = sorted.begin() + static_cast<std::ptrdiff_t>(n);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), end);
  return sorted[k];
}

}  // namespace ember::router
