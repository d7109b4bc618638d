// The reports' time series and histograms: the reductions a receipt carries (a spike survives
// bucketing, every sample lands in one bin) and the SVG drawn from them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
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

// 1,000 buckets in a 480-px plot are drawn as at most one per 3 px, and a one-bucket spike
// still reaches the top of the band.
TEST(series_svg, draws_dense_buckets_merged_and_keeps_a_spike) {
  time_buckets b;
  for (int i = 0; i < 1000; ++i) {
    b.t.push_back(i * 0.01);
    b.min.push_back(10.0);
    b.mean.push_back(11.0);
    b.max.push_back(i == 637 ? 90.0 : 12.0);
  }
  // Fields set one by one: GCC 12 warns (-Wmissing-field-initializers) at a designated
  // initializer that leaves members to their defaults.
  series_plot plot;
  plot.title = "dense";
  plot.buckets = b;
  const std::string svg = series_svg(plot);
  const auto band = svg.find("<polygon");
  ASSERT_NE(band, std::string::npos);
  const std::string points = svg.substr(band, svg.find("/>", band) - band);
  const auto vertices = static_cast<std::size_t>(std::count(points.begin(), points.end(), ','));
  EXPECT_LE(vertices, 2U * 137U);
  EXPECT_GE(vertices, 2U * 100U);
  plot.y_range = plot_range{0.0, 100.0};
  const auto spiked = series_svg(plot);
  plot.buckets.max[637] = 12.0;
  const auto flat = series_svg(plot);
  EXPECT_NE(spiked, flat) << "the spike's bucket is drawn";
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

// The texts of the tick labels drawn with `anchor` (series: "end" for the latency axis; both
// plots: "middle" for the horizontal axis), in order.
std::vector<std::string> tick_labels(const std::string& svg, const std::string& anchor) {
  std::vector<std::string> labels;
  const std::string open = "text-anchor=\"" + anchor + "\">";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto begin = at + open.size();
    labels.push_back(svg.substr(begin, svg.find("</text>", begin) - begin));
  }
  return labels;
}

series_plot ramp(double base, double height) {
  series_plot p;
  const std::vector<double> t{0, 1, 2, 3};
  const std::vector<double> v{base, base + height / 2, base + height, base};
  p.buckets = bucket_series(t, v, 4);
  return p;
}

TEST(series_svg, plots_given_one_range_draw_the_same_latency_axis) {
  series_plot a = ramp(30, 10);
  series_plot b = ramp(100, 90);
  // On their own axes the two plots label different values.
  EXPECT_NE(tick_labels(series_svg(a), "end"), tick_labels(series_svg(b), "end"));
  const auto shared = unite(value_extent(a), value_extent(b));
  ASSERT_TRUE(shared.has_value());
  EXPECT_DOUBLE_EQ(shared->lo, 30.0);
  EXPECT_DOUBLE_EQ(shared->hi, 190.0);
  a.y_range = shared;
  b.y_range = shared;
  const auto labels = tick_labels(series_svg(a), "end");
  EXPECT_EQ(labels, tick_labels(series_svg(b), "end"));
  EXPECT_EQ(labels.front(), "0");
  EXPECT_EQ(labels.back(), "200");
  // Points count towards the extent; nothing to draw has none.
  series_plot points;
  points.points_x = {1.0};
  points.points_y = {7.5};
  EXPECT_DOUBLE_EQ(value_extent(points)->lo, 7.5);
  EXPECT_FALSE(value_extent(series_plot{}).has_value());
  EXPECT_FALSE(unite(std::nullopt, std::nullopt).has_value());
}

TEST(histogram_svg, histograms_given_one_range_and_count_share_both_axes) {
  histogram_plot a;
  a.data = {10.0, 20.0, {1000, 3}};
  histogram_plot b;
  b.data = {40.0, 60.0, {10, 1}};
  EXPECT_NE(tick_labels(histogram_svg(a), "middle"), tick_labels(histogram_svg(b), "middle"));
  // On its own count axis each histogram's largest bin reaches the top of the plot.
  EXPECT_THAT(histogram_svg(b), HasSubstr("y=\"24.0\""));
  const auto shared = unite(value_extent(a.data), value_extent(b.data));
  ASSERT_TRUE(shared.has_value());
  EXPECT_DOUBLE_EQ(shared->lo, 10.0);
  EXPECT_DOUBLE_EQ(shared->hi, 60.0);
  for (auto* p : {&a, &b}) {
    p->x_range = shared;
    p->max_count = 1000;
  }
  const std::string sa = histogram_svg(a);
  const std::string sb = histogram_svg(b);
  EXPECT_EQ(tick_labels(sa, "middle"), tick_labels(sb, "middle"));
  EXPECT_THAT(sa, HasSubstr("y=\"24.0\""));       // 1000 of 1000: the top
  EXPECT_THAT(sb, Not(HasSubstr("y=\"24.0\"")));  // 10 of 1000: lower
  EXPECT_EQ(count(sb, "<rect class=\"bar\""), 2U);
  EXPECT_FALSE(value_extent(histogram{}).has_value());
}

}  // namespace
}  // namespace resident::measure
