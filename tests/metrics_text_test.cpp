// Prometheus text rendering alone: counters, gauges, histogram buckets.
#include <gtest/gtest.h>

#include "common/metrics.h"

namespace ember::metrics {
namespace {

TEST(MetricsTextTest, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 5.0, 50.0}) h.Observe(v);
  TextWriter out;
  out.Histogram("x_seconds", "X.", {{"model", "m"}}, h);
  EXPECT_EQ(out.text(),
            "# HELP x_seconds X.\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{model=\"m\",le=\"0.1\"} 2\n"
            "x_seconds_bucket{model=\"m\",le=\"1\"} 3\n"
            "x_seconds_bucket{model=\"m\",le=\"10\"} 4\n"
            "x_seconds_bucket{model=\"m\",le=\"+Inf\"} 5\n"
            "x_seconds_sum{model=\"m\"} 55.65\n"
            "x_seconds_count{model=\"m\"} 5\n");
}

TEST(MetricsTextTest, HeaderOncePerFamilyAndEscapedLabels) {
  TextWriter out;
  out.Counter("c_total", "C.", {{"k", "a\"b\\c\nd"}}, 3);
  out.Counter("c_total", "C.", {{"k", "e"}}, 4);
  out.Gauge("g", "G.", {}, 0.25);
  EXPECT_EQ(out.text(),
            "# HELP c_total C.\n"
            "# TYPE c_total counter\n"
            "c_total{k=\"a\\\"b\\\\c\\nd\"} 3\n"
            "c_total{k=\"e\"} 4\n"
            "# HELP g G.\n"
            "# TYPE g gauge\n"
            "g 0.25\n");
}

}  // namespace
}  // namespace ember::metrics
