// summarize() and percentile_sorted() against hand-computed values.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "resident/measure/statistics.hpp"

namespace resident::measure {
namespace {

TEST(statistics, four_values) {
  const std::vector<double> v{1, 2, 3, 4};
  const summary s = summarize(v);
  EXPECT_EQ(s.n, 4U);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);  // 10 / 4
  // p50: h = 3 * 0.5 = 1.5 -> 2 + 0.5 * (3 - 2) = 2.5
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  // p25: h = 0.75 -> 1 + 0.75 = 1.75; p75: h = 2.25 -> 3 + 0.25 = 3.25
  EXPECT_DOUBLE_EQ(s.p25, 1.75);
  EXPECT_DOUBLE_EQ(s.p75, 3.25);
  // p99: h = 2.97 -> 3 + 0.97 = 3.97; p99.9: h = 2.997 -> 3.997
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  EXPECT_DOUBLE_EQ(s.p999, 3.997);
  // population variance: (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(s.jitter, 3.0);
  // IQR = 1.5, fences 1.75 - 2.25 = -0.5 and 3.25 + 2.25 = 5.5: whiskers reach min and max
  EXPECT_DOUBLE_EQ(s.whisker_low, 1.0);
  EXPECT_DOUBLE_EQ(s.whisker_high, 4.0);
}

TEST(statistics, a_single_value_is_every_statistic) {
  const std::vector<double> v{7.5};
  const summary s = summarize(v);
  EXPECT_EQ(s.n, 1U);
  for (const double x :
       {s.mean, s.p25, s.p50, s.p75, s.p99, s.p999, s.min, s.max, s.whisker_low, s.whisker_high}) {
    EXPECT_DOUBLE_EQ(x, 7.5);
  }
  EXPECT_DOUBLE_EQ(s.stddev, 0.0);
  EXPECT_DOUBLE_EQ(s.jitter, 0.0);
}

TEST(statistics, one_to_a_thousand) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  const summary s = summarize(v);
  EXPECT_EQ(s.n, 1000U);
  EXPECT_DOUBLE_EQ(s.mean, 500.5);  // 1000 * 1001 / 2 / 1000
  // p50: h = 999 * 0.5 = 499.5 -> x[499] = 500, x[500] = 501 -> 500.5
  EXPECT_DOUBLE_EQ(s.p50, 500.5);
  // p99: h = 999 * 0.99 = 989.01 -> x[989] = 990 + 0.01 * 1 = 990.01
  EXPECT_NEAR(s.p99, 990.01, 1e-9);
  // p99.9: h = 999 * 0.999 = 998.001 -> x[998] = 999 + 0.001 = 999.001
  EXPECT_NEAR(s.p999, 999.001, 1e-9);
  // p25: h = 249.75 -> 250.75; p75: h = 749.25 -> 750.25
  EXPECT_NEAR(s.p25, 250.75, 1e-9);
  EXPECT_NEAR(s.p75, 750.25, 1e-9);
  // population variance of 1..N = (N^2 - 1) / 12 = 999999 / 12 = 83333.25
  EXPECT_NEAR(s.stddev, std::sqrt(83333.25), 1e-9);
  EXPECT_DOUBLE_EQ(s.jitter, 999.0);
}

TEST(statistics, tukey_whiskers_exclude_an_outlier_that_max_keeps) {
  // sorted: 10 11 12 13 14 15 16 17 18 100 (n = 10)
  const std::vector<double> v{10, 11, 12, 13, 14, 15, 16, 17, 18, 100};
  const summary s = summarize(v);
  // p25: h = 9 * 0.25 = 2.25 -> 12.25; p75: h = 6.75 -> 16.75; IQR = 4.5
  EXPECT_DOUBLE_EQ(s.p25, 12.25);
  EXPECT_DOUBLE_EQ(s.p75, 16.75);
  // fences: 12.25 - 6.75 = 5.5 and 16.75 + 6.75 = 23.5
  EXPECT_DOUBLE_EQ(s.whisker_low, 10.0);   // smallest sample >= 5.5
  EXPECT_DOUBLE_EQ(s.whisker_high, 18.0);  // largest sample <= 23.5: 100 is an outlier
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.jitter, 90.0);  // 100 - 10
  EXPECT_DOUBLE_EQ(s.mean, 22.6);    // (10 + ... + 18 = 126, + 100 = 226) / 10
}

TEST(statistics, low_outlier_is_beyond_the_lower_whisker) {
  // sorted: 1 50 51 52 53 54 (n = 6): p25 h = 1.25 -> 50.25, p75 h = 3.75 -> 52.75, IQR 2.5
  // fences 50.25 - 3.75 = 46.5 and 52.75 + 3.75 = 56.5
  const summary s = summarize(std::vector<double>{54, 1, 53, 50, 52, 51});
  EXPECT_DOUBLE_EQ(s.whisker_low, 50.0);
  EXPECT_DOUBLE_EQ(s.whisker_high, 54.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
}

TEST(statistics, whiskers_never_cross_into_the_box) {
  // sorted 0 10 10 10: p25 h = 0.75 -> 7.5, p75 = 10, IQR 2.5, lower fence 3.75. The first
  // sample above the fence is 10 > p25, so the whisker is clamped to the box edge.
  const summary s = summarize(std::vector<double>{10, 0, 10, 10});
  EXPECT_DOUBLE_EQ(s.p25, 7.5);
  EXPECT_DOUBLE_EQ(s.whisker_low, 7.5);
  EXPECT_DOUBLE_EQ(s.min, 0.0);
  EXPECT_LE(s.min, s.whisker_low);
  EXPECT_LE(s.whisker_low, s.p25);
  EXPECT_LE(s.p75, s.whisker_high);
  EXPECT_LE(s.whisker_high, s.max);
}

TEST(statistics, jitter_is_max_minus_min) {
  const summary s = summarize(std::vector<double>{5.25, 3.0, 9.5, 4.0});
  EXPECT_DOUBLE_EQ(s.min, 3.0);
  EXPECT_DOUBLE_EQ(s.max, 9.5);
  EXPECT_DOUBLE_EQ(s.jitter, 6.5);
}

TEST(statistics, unsorted_input_gives_the_sorted_answer_and_is_not_modified) {
  std::vector<double> v{4, 1, 3, 2};
  const summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p25, 1.75);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_EQ(v, (std::vector<double>{4, 1, 3, 2}));
}

TEST(statistics, mean_and_stddev_survive_a_large_common_offset) {
  // 1e9 + {1, 2, 3, 4}: the naive sum-of-squares formula loses every digit here.
  const std::vector<double> v{1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4};
  const summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.mean, 1e9 + 2.5);
  EXPECT_NEAR(s.stddev, std::sqrt(1.25), 1e-6);
}

TEST(statistics, empty_input_throws) {
  EXPECT_THROW((void)summarize(std::vector<double>{}), std::invalid_argument);
  EXPECT_THROW((void)percentile_sorted(std::vector<double>{}, 0.5), std::invalid_argument);
}

TEST(statistics, non_finite_input_throws) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW((void)summarize(std::vector<double>{1.0, nan}), std::invalid_argument);
  EXPECT_THROW((void)summarize(std::vector<double>{inf}), std::invalid_argument);
}

TEST(statistics, percentile_end_points_and_range) {
  const std::vector<double> sorted{1, 2, 4, 8};
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 1.0), 8.0);
  // q = 0.5: h = 1.5 -> 2 + 0.5 * (4 - 2) = 3
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0.5), 3.0);
  // q = 0.9: h = 2.7 -> 4 + 0.7 * 4 = 6.8
  EXPECT_DOUBLE_EQ(percentile_sorted(sorted, 0.9), 6.8);
  EXPECT_THROW((void)percentile_sorted(sorted, -0.01), std::invalid_argument);
  EXPECT_THROW((void)percentile_sorted(sorted, 1.01), std::invalid_argument);
  EXPECT_THROW((void)percentile_sorted(sorted, std::numeric_limits<double>::quiet_NaN()),
               std::invalid_argument);
}

}  // namespace
}  // namespace resident::measure
