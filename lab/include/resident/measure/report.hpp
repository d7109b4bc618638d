#pragma once
// Reports from receipts: a plain-text table for terminals and one self-contained HTML page
// (inline CSS and SVG; no scripts, no external resources) with a box plot per configuration.

#include <nlohmann/json.hpp>

#include <cstdio>
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
/// settings (a key/value table, nested objects as nested tables); per (workload, contention)
/// group of its latency results a table and an SVG box plot on one axis with one box per result
/// (a mode that ran more than once in the group is labelled "mode (run k of n)"); its targets
/// (settings.targets) as a table of verdicts; a table of every other result's fields. Tables sit
/// in a horizontally scrolling box so the page keeps its width. All text is escaped.
[[nodiscard]] std::string render_html(const std::vector<receipt>& receipts,
                                      const report_options& options = {});

namespace detail {

[[nodiscard]] std::string html_escape(std::string_view text);

/// The HTML class of the box every report table sits in: it scrolls horizontally when the table
/// is wider than the page.
inline constexpr const char* table_scroll_class = "table-scroll";
/// The reports' style sheet (render_html's; bench camera's page adds its own rules after it):
/// page, tables (table_scroll_class included), box plots.
inline constexpr const char* page_css = R"(body{font-family:system-ui,sans-serif;color:#222}
body{margin:2em auto;max-width:1100px;padding:0 1em}
h1{font-size:1.5em}h3{font-size:1.05em;margin-top:1.5em}
h2{font-size:1.25em;border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.4em 0 .8em}
th,td{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.meta th{background:none;color:#555;font-weight:normal}
table.kv,table.list{margin:0}table.kv>tbody>tr>th{background:none;color:#555;font-weight:normal}
td.met{color:#176d2c;font-weight:bold}td.missed{color:#b00;font-weight:bold}
code{font-family:ui-monospace,monospace;font-size:.9em;word-break:break-all}
.legend{color:#555;font-size:.9em}
figure{margin:.4em 0 1.2em}
svg{display:block;max-width:100%;height:auto}
svg text{font-size:12px;fill:#222}
svg .axis,svg .tick{stroke:#444}svg .grid{stroke:#e6e6e6}
svg .whisker,svg .cap{stroke:#333}
svg .box{stroke:#333;fill-opacity:.6}
svg .median{stroke:#000;stroke-width:2}
svg .mean{fill:#fff;stroke:#000}
svg .extreme{stroke:#b00;stroke-width:1.5;fill:none}
.table-scroll{overflow-x:auto;max-width:100%})";

/// A JSON value as HTML (escaped): an object becomes a key/value table (nested objects nested
/// tables), an array of objects a table with the union of their keys as columns and one row per
/// element, a flat array its values separated by commas, a scalar its text. Keys of a top-level
/// object listed in `skip` are left out (e.g. the targets a report shows as their own table).
[[nodiscard]] std::string value_html(const nlohmann::json& value,
                                     const std::vector<std::string>& skip = {});

/// Labels for the results of one group, given their modes in order: a mode that occurs once
/// keeps its name, one that occurs n > 1 times becomes "mode (run k of n)" at its k-th
/// occurrence, so repeated runs can be told apart.
[[nodiscard]] std::vector<std::string> run_labels(const std::vector<std::string>& modes);
/// printf-style text of any length: the buffer is sized by a first snprintf, so a value of any
/// magnitude (1e300 with "%.2f" is 303 characters) is printed whole, never cut or overrun.
template <typename... Args>
[[nodiscard]] std::string printf_string(const char* format, Args... args) {
  const int n = std::snprintf(nullptr, 0, format, args...);
  if (n <= 0) return {};
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  (void)std::snprintf(out.data(), out.size(), format, args...);
  out.resize(static_cast<std::size_t>(n));
  return out;
}
/// An SVG coordinate with one decimal: enough for pixels, short enough to read.
[[nodiscard]] std::string px(double v);
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
  std::string label;    // the mode (or run_labels' label)
  box_values values;    // µs
  std::size_t color{};  // palette index, so a mode keeps its colour across groups
};
/// The SVG box plot of one group on one axis: one horizontal box per entry, top to bottom; the
/// left margin grows with the longest label.
[[nodiscard]] std::string box_plot_svg(const std::vector<plot_box>& boxes,
                                       axis_scale scale = axis_scale::automatic);

}  // namespace detail

}  // namespace resident::measure
