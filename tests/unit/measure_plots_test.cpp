// The reports' time series and histograms: the reductions a receipt carries (a spike survives
// bucketing, every sample lands in one bin) and the SVG drawn from them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "resident/measure/plots.hpp"

namespace resident::measure {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(bucket_series, groups_consecutive_samples_and_keeps_a_spike_in_its_max) {
  const std::vector<double> t{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> v{5, 5, 5, 5, 90, 5, 5, 5, 5, 8};
  const time_buckets b = bucket_series(t, v, 3);
  ASSERT_EQ(b.t.size(), 3U);
  EXPECT_THAT(b.t, ElementsAre(0.0, 3.0, 6.0));  // groups of 3, 3 and 4 samples
  EXPECT_THAT(b.max, ElementsAre(5.0, 90.0, 8.0));
  EXPECT_THAT(b.min, ElementsAre(5.0, 5.0, 5.0));
  EXPECT_DOUBLE_EQ(b.mean[1], 100.0 / 3.0);
  EXPECT_DOUBLE_EQ(b.mean[2], 23.0 / 4.0);
}

TEST(bucket_series, fewer_samples_than_buckets_keeps_each_sample) {
  const std::vector<double> t{0.5, 1.5};
  const std::vector<double> v{3, 4};
  const time_buckets b = bucket_series(t, v, 400);
  EXPECT_THAT(b.t, ElementsAre(0.5, 1.5));
  EXPECT_THAT(b.mean, ElementsAre(3.0, 4.0));
  EXPECT_TRUE(bucket_series({}, {}, 10).t.empty());
}

TEST(bucket_series, refuses_mismatched_sizes_and_zero_buckets) {
  const std::vector<double> two{1, 2};
  const std::vector<double> one{1};
  EXPECT_THROW((void)bucket_series(two, one, 4), std::invalid_argument);
  EXPECT_THROW((void)bucket_series(two, two, 0), std::invalid_argument);
}

TEST(make_histogram, every_sample_lands_in_one_bin_and_the_max_in_the_last) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(30.0, 45.0);
  std::vector<double> v(5000);
  for (auto& x : v) x = u(rng);
  v.push_back(120.0);
  const histogram h = make_histogram(v, 60);
  ASSERT_EQ(h.counts.size(), 60U);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}), v.size());
  EXPECT_DOUBLE_EQ(h.hi, 120.0);
  EXPECT_EQ(h.counts.back(), 1U);
}

TEST(make_histogram, equal_values_make_one_bin_and_no_values_none) {
  const std::vector<double> same{4.0, 4.0, 4.0};
  const histogram h = make_histogram(same, 10);
  EXPECT_THAT(h.counts, ElementsAre(3U));
  EXPECT_DOUBLE_EQ(h.lo, 4.0);
  EXPECT_TRUE(make_histogram({}, 10).counts.empty());
}

TEST(make_histogram, refuses_zero_bins_and_non_finite_values) {
  const std::vector<double> bad{1.0, std::numeric_limits<double>::quiet_NaN()};
  EXPECT_THROW((void)make_histogram(bad, 4), std::invalid_argument);
  const std::vector<double> fine{1.0};
  EXPECT_THROW((void)make_histogram(fine, 0), std::invalid_argument);
}

TEST(plot_json, round_trips_and_refuses_other_shapes) {
  const std::vector<double> t{0, 1, 2, 3};
  const std::vector<double> v{1, 2, 3, 4};
  const time_buckets b = bucket_series(t, v, 2);
  const auto b2 = buckets_from_json(to_json(b));
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(b2->max, b.max);
  const histogram h = make_histogram(v, 3);
  const auto h2 = histogram_from_json(to_json(h));
  ASSERT_TRUE(h2.has_value());
  EXPECT_EQ(h2->counts, h.counts);
  EXPECT_FALSE(buckets_from_json(nlohmann::json{{"t", {1, 2}}, {"min", {1}}}).has_value());
  EXPECT_FALSE(histogram_from_json(nlohmann::json::array()).has_value());
}

TEST(series_svg, draws_a_band_a_mean_line_and_points_with_an_escaped_title) {
  series_plot p;
  p.title = "while <1080p>";
  const std::vector<double> t{0, 1, 2, 3};
  const std::vector<double> v{30, 31, 29, 40};
  p.buckets = bucket_series(t, v, 4);
  p.points_x = {0.5, 1.5};
  p.points_y = {33, 34};
  const std::string svg = series_svg(p);
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("class=\"band\""));
  EXPECT_THAT(svg, HasSubstr("class=\"mean-line\""));
  EXPECT_EQ(count(svg, "<circle"), 2U);
  EXPECT_THAT(svg, HasSubstr("while &lt;1080p&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("<1080p>")));
}

TEST(series_svg, says_so_when_there_is_nothing_to_draw) {
  series_plot p;
  p.title = "tail";
  EXPECT_THAT(series_svg(p), HasSubstr("no samples"));
}

TEST(histogram_svg, draws_one_bar_per_non_empty_bin) {
  histogram_plot p;
  p.title = "host-graph";
  p.data = {10.0, 20.0, {5, 0, 1000, 0, 1}};
  const std::string svg = histogram_svg(p);
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 3U);
  EXPECT_THAT(svg, HasSubstr("samples (log scale)"));
  p.data.counts.clear();
  EXPECT_THAT(histogram_svg(p), HasSubstr("no samples"));
}

}  // namespace
}  // namespace resident::measure
