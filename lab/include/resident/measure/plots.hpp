#pragma once
// Plots for HTML reports besides report.hpp's box plots: a latency over time and a histogram, as
// inline SVG (no scripts), and the reductions behind them, small enough for a receipt to carry
// (a bench keeps these in its results instead of every sample, so a report can be drawn again
// from the receipt alone).
//
//   time_buckets b = bucket_series(t_s, latency_us, 400);   // min / mean / max per bucket
//   histogram h = make_histogram(latency_us, 60);
//   html << series_svg({.title = "while", .buckets = b}) << histogram_svg({.data = h});

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace resident::measure {

/// The style rules series_svg and histogram_svg draw with (smaller text, grid, band, mean line,
/// points, bars): a page adds them after report.hpp's detail::page_css.
inline constexpr const char* plot_css =
    R"(svg text{font-size:11px}svg text.title{font-size:12px;font-weight:bold}svg .grid{stroke:#eee}
svg .band{fill-opacity:.28;stroke:none}svg .mean-line{fill:none;stroke-width:1.2}
svg .point{fill-opacity:.8}svg .bar{fill-opacity:.75}
)";

/// Consecutive samples in groups: each group's first time, smallest, mean and largest value.
struct time_buckets {
  std::vector<double> t;
  std::vector<double> min;
  std::vector<double> mean;
  std::vector<double> max;
};

/// `values[i]` taken at `times[i]`, in order, as at most `buckets` groups of consecutive samples
/// (sizes differ by at most one), so a spike survives in its group's max. Fewer samples than
/// buckets: one group per sample. Throws std::invalid_argument when the sizes differ or
/// `buckets` is 0.
[[nodiscard]] time_buckets bucket_series(std::span<const double> times,
                                         std::span<const double> values, std::size_t buckets);

/// Equal-width bins from `lo` to `hi`.
struct histogram {
  double lo{};
  double hi{};
  std::vector<std::uint64_t> counts;
};

/// `bins` equal bins spanning [min, max] of `values`; max falls in the last bin. When every
/// value is equal there is one bin holding them all. Empty `values`: no bins. Throws
/// std::invalid_argument when `bins` is 0 or a value is not finite.
[[nodiscard]] histogram make_histogram(std::span<const double> values, std::size_t bins);

/// {"t": [...], "min": [...], "mean": [...], "max": [...]} and {"lo", "hi", "counts"}; the
/// readers return nothing for JSON of another shape (a receipt from another version).
[[nodiscard]] nlohmann::json to_json(const time_buckets& b);
[[nodiscard]] nlohmann::json to_json(const histogram& h);
[[nodiscard]] std::optional<time_buckets> buckets_from_json(const nlohmann::json& j);
[[nodiscard]] std::optional<histogram> histogram_from_json(const nlohmann::json& j);

/// A fixed stretch of a plot's value axis, so that plots drawn side by side (one per mode) share
/// one scale and can be compared by eye.
struct plot_range {
  double lo{};
  double hi{};
};

/// A latency over time: the band from each bucket's min to its max, a line through the means,
/// and single points (for runs with few samples, e.g. one per marked frame). Buckets closer than
/// 3 px are drawn merged (min of the mins, max of the maxes, mean of the means), vertices in
/// whole pixels.
struct series_plot {
  std::string title;
  std::string x_label{"time (s)"};
  std::string y_label{"latency (\xC2\xB5s)"};
  time_buckets buckets;
  std::vector<double> points_x;  // drawn as dots; same size as points_y
  std::vector<double> points_y;
  std::size_t color{};  // palette index (report.hpp's detail::palette_color)
  /// The latency axis: nullopt spans this plot's own values; a range (e.g. the union over the
  /// plots of one group, see value_extent) fixes it, and values outside it sit on its edge.
  std::optional<plot_range> y_range;
};
[[nodiscard]] std::string series_svg(const series_plot& plot);

/// A histogram's bars over its value axis; counts on a logarithmic axis by default, so a tail
/// of a few samples stays visible beside a peak of thousands.
struct histogram_plot {
  std::string title;
  std::string x_label{"latency (\xC2\xB5s)"};
  histogram data;
  bool log_counts{true};
  std::size_t color{};
  /// The value axis: nullopt spans this histogram's bins; a range fixes it (bars outside it are
  /// clipped to its edge).
  std::optional<plot_range> x_range;
  /// The count at the top of the count axis: nullopt is this histogram's largest bin; a shared
  /// value makes bar heights comparable across plots (a larger bin is drawn at the top).
  std::optional<std::uint64_t> max_count;
};
[[nodiscard]] std::string histogram_svg(const histogram_plot& plot);

/// What a plot spans on its own value axis: a series' band edges and points, a histogram's
/// [lo, hi]; nullopt when there is nothing to draw.
[[nodiscard]] std::optional<plot_range> value_extent(const series_plot& plot);
[[nodiscard]] std::optional<plot_range> value_extent(const histogram& data);
/// The smallest range holding both (nullopt only when both are).
[[nodiscard]] std::optional<plot_range> unite(const std::optional<plot_range>& a,
                                              const std::optional<plot_range>& b);

}  // namespace resident::measure
