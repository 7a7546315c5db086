#include "common/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ember::metrics {
namespace {

std::string FormatValue(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  // Integers print exactly (counters); others with enough digits to round-trip.
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}

void Histogram::Observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  if (it != bounds_.end()) ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  ++count_;
  sum_ += value;
}

std::vector<double> LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

std::vector<double> BatchSizeBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}; }

std::string EscapeLabel(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void TextWriter::Header(std::string_view name, std::string_view help, std::string_view type) {
  if (families_.contains(name)) return;
  families_.emplace(name);
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  text_ += help;
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void TextWriter::Sample(std::string_view name, const Labels& labels, double value) {
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) text_ += ',';
      text_ += labels[i].first + "=\"" + EscapeLabel(labels[i].second) + '"';
    }
    text_ += '}';
  }
  text_ += ' ';
  text_ += FormatValue(value);
  text_ += '\n';
}

void TextWriter::Counter(std::string_view name, std::string_view help, const Labels& labels,
                         double value) {
  Header(name, help, "counter");
  Sample(name, labels, value);
}

void TextWriter::Gauge(std::string_view name, std::string_view help, const Labels& labels,
                       double value) {
  Header(name, help, "gauge");
  Sample(name, labels, value);
}

void TextWriter::Histogram(std::string_view name, std::string_view help, const Labels& labels,
                           const metrics::Histogram& histogram) {
  Header(name, help, "histogram");
  const std::string base(name);
  std::uint64_t cumulative = 0;
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  for (std::size_t i = 0; i < histogram.bounds().size(); ++i) {
    cumulative += histogram.counts()[i];
    with_le.back().second = FormatValue(histogram.bounds()[i]);
    Sample(base + "_bucket", with_le, static_cast<double>(cumulative));
  }
  with_le.back().second = "+Inf";
  Sample(base + "_bucket", with_le, static_cast<double>(histogram.count()));
  Sample(base + "_sum", labels, histogram.sum());
  Sample(base + "_count", labels, static_cast<double>(histogram.count()));
}

}  // namespace ember::metrics
