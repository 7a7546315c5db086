// Prometheus metric primitives: a fixed-bucket histogram and a writer for the
// text exposition format (version 0.0.4). Plain values, no locking: one
// thread owns them (the router thread) and publishes rendered text.
#ifndef EMBER_COMMON_METRICS_H_
#define EMBER_COMMON_METRICS_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Counts observations into cumulative `le` buckets, as Prometheus expects.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending

  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // Observations <= bounds()[i] (not cumulative; the writer sums them).
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // one per bound; beyond the last: only in count_
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

// Bucket bounds: latency in seconds (0.5 ms .. 30 s) and batch sizes (1 .. 1024).
std::vector<double> LatencyBuckets();
std::vector<double> BatchSizeBuckets();

// Builds exposition text. HELP and TYPE are written once per family, before
// its first sample, so samples of one family must be written together.
class TextWriter {
 public:
  void Counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  void Gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  void Histogram(std::string_view name, std::string_view help, const Labels& labels,
                 const metrics::Histogram& histogram);

  const std::string& text() const { return text_; }

 private:
  void Header(std::string_view name, std::string_view help, std::string_view type);
  void Sample(std::string_view name, const Labels& labels, double value);

  std::string text_;
  std::set<std::string, std::less<>> families_;
};

// A label value with \, " and newline escaped, as the format requires.
std::string EscapeLabel(std::string_view value);

}  // namespace ember::metrics

#endif  // EMBER_COMMON_METRICS_H_
