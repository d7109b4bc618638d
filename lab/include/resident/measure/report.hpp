#pragma once
// Reports from receipts: a plain-text table for terminals and one self-contained HTML page
// (inline CSS and SVG; no scripts, no external resources) with a box plot per configuration.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resident/measure/receipt.hpp"

namespace resident::measure {

/// The latency axis of the box plots. automatic: logarithmic when the group's smallest min is
/// positive and its largest max is more than 100 times that (a linear axis would squash every
/// box against the left edge), linear otherwise. log falls back to linear when min <= 0.
enum class axis_scale { automatic, linear, log };

struct report_options {
  axis_scale scale{axis_scale::automatic};
};

/// One row per latency result (a result object with "mean_us"): benchmark, mode, workload,
/// contention, n, mean, p50, p99, p99.9, max, jitter (µs), processed, dropped, in aligned
/// columns, after one header line per receipt. Other results are listed as key=value lines.
[[nodiscard]] std::string render_text(const std::vector<receipt>& receipts);

/// One HTML page: per receipt its benchmark, command, git commit, start time, device, host and
/// settings; per (workload, contention) group of its latency results a table and an SVG box
/// plot with one box per mode; a table of every other result's fields. All text is escaped.
[[nodiscard]] std::string render_html(const std::vector<receipt>& receipts,
                                      const report_options& options = {});

namespace detail {

[[nodiscard]] std::string html_escape(std::string_view text);
/// Microseconds as the report prints them: two decimals ("12.34").
[[nodiscard]] std::string format_us(double value);

struct axis {
  double lo{};
  double hi{};
  bool log{};
  std::vector<double> ticks;  // ascending, within [lo, hi]
};
/// An axis covering [min, max] with round tick values (see axis_scale for the log rule).
[[nodiscard]] axis choose_axis(double min, double max, axis_scale scale = axis_scale::automatic);
/// `value`'s position on `a` drawn from pixel x0 (at a.lo) to x1 (at a.hi).
[[nodiscard]] double axis_position(const axis& a, double value, double x0, double x1);

/// What one box shows, in µs, or its pixel positions.
struct box_values {
  double min{}, whisker_low{}, p25{}, p50{}, mean{}, p75{}, whisker_high{}, max{};
};
/// From a latency result: needs min_us, max_us, p50_us and mean_us as numbers; without quartiles
/// (p25_us, p75_us) the box is flat at the median, without whiskers they reach min and max.
[[nodiscard]] std::optional<box_values> box_from_result(const nlohmann::json& result);
[[nodiscard]] box_values box_positions(const axis& a, const box_values& v, double x0, double x1);

/// The plots' colour `index` (wrapping around a palette of ten), so a mode keeps its colour
/// across plots.
[[nodiscard]] const char* palette_color(std::size_t index) noexcept;

struct plot_box {
  std::string label;    // the mode
  box_values values;    // µs
  std::size_t color{};  // palette index, so a mode keeps its colour across groups
};
/// The SVG box plot of one group: one horizontal box per entry, top to bottom.
[[nodiscard]] std::string box_plot_svg(const std::vector<plot_box>& boxes,
                                       axis_scale scale = axis_scale::automatic);

}  // namespace detail

}  // namespace resident::measure
