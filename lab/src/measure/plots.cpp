#include "resident/measure/plots.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "resident/measure/report.hpp"

namespace resident::measure {

time_buckets bucket_series(std::span<const double> times, std::span<const double> values,
                           std::size_t buckets) {
  if (times.size() != values.size()) {
    throw std::invalid_argument("bucket_series: " + std::to_string(times.size()) + " times for " +
                                std::to_string(values.size()) + " values");
  }
  if (buckets == 0) throw std::invalid_argument("bucket_series: buckets must be at least 1");
  time_buckets out;
  const std::size_t n = values.size();
  const std::size_t groups = std::min(buckets, n);
  for (std::size_t g = 0; g < groups; ++g) {
    // Group g holds samples [g n / groups, (g + 1) n / groups): sizes differ by at most one.
    const std::size_t begin = g * n / groups;
    const std::size_t end = (g + 1) * n / groups;
    double lo = values[begin];
    double hi = values[begin];
    double sum = 0.0;
    for (std::size_t i = begin; i < end; ++i) {
      lo = std::min(lo, values[i]);
      hi = std::max(hi, values[i]);
      sum += values[i];
    }
    out.t.push_back(times[begin]);
    out.min.push_back(lo);
    out.mean.push_back(sum / static_cast<double>(end - begin));
    out.max.push_back(hi);
  }
  return out;
}

histogram make_histogram(std::span<const double> values, std::size_t bins) {
  if (bins == 0) throw std::invalid_argument("make_histogram: bins must be at least 1");
  histogram h;
  if (values.empty()) return h;
  h.lo = values[0];
  h.hi = values[0];
  for (const double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("make_histogram: a value is not finite");
    h.lo = std::min(h.lo, v);
    h.hi = std::max(h.hi, v);
  }
  if (!(h.hi > h.lo)) {
    h.counts = {values.size()};
    return h;
  }
  h.counts.assign(bins, 0);
  const double width = (h.hi - h.lo) / static_cast<double>(bins);
  for (const double v : values) {
    const auto bin = static_cast<std::size_t>((v - h.lo) / width);
    ++h.counts[std::min(bin, bins - 1)];
  }
  return h;
}

nlohmann::json to_json(const time_buckets& b) {
  return {{"t", b.t}, {"min", b.min}, {"mean", b.mean}, {"max", b.max}};
}

nlohmann::json to_json(const histogram& h) {
  return {{"lo", h.lo}, {"hi", h.hi}, {"counts", h.counts}};
}

std::optional<time_buckets> buckets_from_json(const nlohmann::json& j) {
  try {
    time_buckets b;
    b.t = j.at("t").get<std::vector<double>>();
    b.min = j.at("min").get<std::vector<double>>();
    b.mean = j.at("mean").get<std::vector<double>>();
    b.max = j.at("max").get<std::vector<double>>();
    const std::size_t n = b.t.size();
    if (b.min.size() != n || b.mean.size() != n || b.max.size() != n) return std::nullopt;
    return b;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::optional<histogram> histogram_from_json(const nlohmann::json& j) {
  try {
    histogram h;
    h.lo = j.at("lo").get<double>();
    h.hi = j.at("hi").get<double>();
    h.counts = j.at("counts").get<std::vector<std::uint64_t>>();
    return h;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

namespace {

using detail::axis;
using detail::axis_position;
using detail::choose_axis;
using detail::html_escape;
using detail::printf_string;
using detail::px;

/// A data vertex's coordinate: whole pixels (a series is drawn at most one bucket per 3 px).
std::string vertex(double v) { return printf_string("%.0f", v); }

/// `b` with groups of consecutive buckets merged so that at most `at_most` remain: each group's
/// first time, smallest min, largest max and the mean of its means. Unchanged when small enough.
time_buckets coarsen(const time_buckets& b, std::size_t at_most) {
  if (at_most == 0 || b.t.size() <= at_most) return b;
  const std::size_t k = (b.t.size() + at_most - 1) / at_most;
  time_buckets out;
  for (std::size_t i = 0; i < b.t.size(); i += k) {
    const std::size_t end = std::min(b.t.size(), i + k);
    double lo = b.min[i];
    double hi = b.max[i];
    double sum = 0;
    for (std::size_t j = i; j < end; ++j) {
      lo = std::min(lo, b.min[j]);
      hi = std::max(hi, b.max[j]);
      sum += b.mean[j];
    }
    out.t.push_back(b.t[i]);
    out.min.push_back(lo);
    out.max.push_back(hi);
    out.mean.push_back(sum / static_cast<double>(end - i));
  }
  return out;
}

std::string label(double v) { return printf_string("%g", v); }

// The frame every plot shares: size, margins and the two axes' pixel ranges.
struct frame {
  double width{480.0};
  double height{210.0};
  double left{58.0};
  double right{12.0};
  double top{24.0};
  double bottom{40.0};
  [[nodiscard]] double x0() const { return left; }
  [[nodiscard]] double x1() const { return width - right; }
  [[nodiscard]] double y0() const { return height - bottom; }  // the bottom of the plot area
  [[nodiscard]] double y1() const { return top; }
};

void open_svg(std::ostringstream& svg, const frame& f, const std::string& title, const char* what) {
  svg << "<svg width=\"" << px(f.width) << "\" height=\"" << px(f.height) << "\" viewBox=\"0 0 "
      << px(f.width) << " " << px(f.height) << "\" role=\"img\" aria-label=\"" << what << ": "
      << html_escape(title) << "\">\n";
  svg << "<text class=\"title\" x=\"" << px(f.x0()) << "\" y=\"15\">" << html_escape(title)
      << "</text>\n";
}

// Grid lines and tick labels of a horizontal axis `a` along the bottom, and its label.
void x_axis(std::ostringstream& svg, const frame& f, const axis& a, const std::string& name) {
  for (const double t : a.ticks) {
    const double x = axis_position(a, t, f.x0(), f.x1());
    svg << "<line class=\"grid\" x1=\"" << px(x) << "\" y1=\"" << px(f.y1()) << "\" x2=\"" << px(x)
        << "\" y2=\"" << px(f.y0()) << "\"/><text x=\"" << px(x) << "\" y=\"" << px(f.y0() + 15.0)
        << "\" text-anchor=\"middle\">" << label(t) << "</text>\n";
  }
  svg << "<line class=\"axis\" x1=\"" << px(f.x0()) << "\" y1=\"" << px(f.y0()) << "\" x2=\""
      << px(f.x1()) << "\" y2=\"" << px(f.y0()) << "\"/>\n";
  svg << "<text class=\"axis-label\" x=\"" << px((f.x0() + f.x1()) / 2.0) << "\" y=\""
      << px(f.height - 6.0) << "\" text-anchor=\"middle\">" << html_escape(name) << "</text>\n";
}

// The same for a vertical axis along the left edge; `ticks` are (value, text) pairs.
void y_axis(std::ostringstream& svg, const frame& f,
            const std::vector<std::pair<double, std::string>>& ticks, const std::string& name) {
  for (const auto& [y, text] : ticks) {
    svg << "<line class=\"grid\" x1=\"" << px(f.x0()) << "\" y1=\"" << px(y) << "\" x2=\""
        << px(f.x1()) << "\" y2=\"" << px(y) << "\"/><text x=\"" << px(f.x0() - 5.0) << "\" y=\""
        << px(y + 4.0) << "\" text-anchor=\"end\">" << text << "</text>\n";
  }
  svg << "<line class=\"axis\" x1=\"" << px(f.x0()) << "\" y1=\"" << px(f.y1()) << "\" x2=\""
      << px(f.x0()) << "\" y2=\"" << px(f.y0()) << "\"/>\n";
  const double mid = (f.y0() + f.y1()) / 2.0;
  svg << "<text class=\"axis-label\" x=\"12\" y=\"" << px(mid) << "\" text-anchor=\"middle\" "
      << "transform=\"rotate(-90 12 " << px(mid) << ")\">" << html_escape(name) << "</text>\n";
}

// [lo, hi] over every band edge and point of a series plot (nullopt: nothing to draw).
std::optional<std::pair<double, double>> extent(const std::vector<double>& a,
                                                const std::vector<double>& b) {
  if (a.empty() && b.empty()) return std::nullopt;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const auto* v : {&a, &b}) {
    for (const double x : *v) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  return std::make_pair(lo, hi);
}

// [lo, hi], widened when it is a single value so that it has a width to draw bars in.
plot_range with_width(double lo, double hi) {
  if (hi > lo) return {lo, hi};
  return {lo, lo + std::max(std::abs(lo) * 0.01, 1e-3)};
}

std::string no_data(const frame& f, const std::string& title, const char* what) {
  std::ostringstream svg;
  open_svg(svg, f, title, what);
  svg << "<text x=\"" << px(f.width / 2.0) << "\" y=\"" << px(f.height / 2.0)
      << "\" text-anchor=\"middle\">no samples</text>\n</svg>";
  return svg.str();
}

}  // namespace

std::string series_svg(const series_plot& p) {
  const frame f;
  // No more buckets than the plot can show apart (3 px each): a spike survives in its group's
  // max, and the page stays small.
  const time_buckets b = coarsen(p.buckets, static_cast<std::size_t>((f.x1() - f.x0()) / 3.0));
  std::vector<double> ys = b.min;
  ys.insert(ys.end(), b.max.begin(), b.max.end());
  const auto xs = extent(b.t, p.points_x);
  auto yr = extent(ys, p.points_y);
  if (!xs || !yr || p.points_x.size() != p.points_y.size()) return no_data(f, p.title, "series");
  if (p.y_range) yr = std::make_pair(p.y_range->lo, p.y_range->hi);
  const axis ax = choose_axis(xs->first, xs->second, axis_scale::linear);
  const axis ay = choose_axis(yr->first, yr->second, axis_scale::linear);
  const auto x = [&](double v) { return axis_position(ax, v, f.x0(), f.x1()); };
  const auto y = [&](double v) { return axis_position(ay, v, f.y0(), f.y1()); };
  const char* color = detail::palette_color(p.color);

  std::ostringstream svg;
  open_svg(svg, f, p.title, "latency over time");
  std::vector<std::pair<double, std::string>> ticks;
  for (const double t : ay.ticks) ticks.emplace_back(y(t), label(t));
  y_axis(svg, f, ticks, p.y_label);
  x_axis(svg, f, ax, p.x_label);
  if (!b.t.empty()) {
    // The band: along the maxima, then back along the minima.
    svg << "<polygon class=\"band\" fill=\"" << color << "\" points=\"";
    for (std::size_t i = 0; i < b.t.size(); ++i)
      svg << vertex(x(b.t[i])) << "," << vertex(y(b.max[i])) << " ";
    for (std::size_t i = b.t.size(); i-- > 0;)
      svg << vertex(x(b.t[i])) << "," << vertex(y(b.min[i])) << " ";
    svg << "\"/>\n<polyline class=\"mean-line\" stroke=\"" << color << "\" points=\"";
    for (std::size_t i = 0; i < b.t.size(); ++i) {
      svg << vertex(x(b.t[i])) << "," << vertex(y(b.mean[i])) << (i + 1 < b.t.size() ? " " : "");
    }
    svg << "\"/>\n";
  }
  // One fill for the whole group: a page holds thousands of these elements.
  svg << "<g fill=\"" << color << "\">";
  for (std::size_t i = 0; i < p.points_x.size(); ++i) {
    svg << "<circle class=\"point\" cx=\"" << vertex(x(p.points_x[i])) << "\" cy=\""
        << vertex(y(p.points_y[i])) << "\" r=\"2.2\"/>";
    if (i % 8 == 7) svg << "\n";
  }
  svg << "</g>\n</svg>";
  return svg.str();
}

std::string histogram_svg(const histogram_plot& p) {
  const frame f;
  const histogram& h = p.data;
  if (h.counts.empty()) return no_data(f, p.title, "histogram");
  const std::uint64_t top =
      p.max_count.value_or(*std::max_element(h.counts.begin(), h.counts.end()));
  const plot_range own = with_width(h.lo, h.hi);
  const double lo = own.lo;
  const double hi = own.hi;
  const plot_range shown = p.x_range ? with_width(p.x_range->lo, p.x_range->hi) : own;
  const axis ax = choose_axis(shown.lo, shown.hi, axis_scale::linear);
  const auto x = [&](double v) { return axis_position(ax, v, f.x0(), f.x1()); };
  // Counts: log10(1 + count) on a log axis (a single sample still shows), linear otherwise.
  const auto scaled = [&](double c) { return p.log_counts ? std::log10(1.0 + c) : c; };
  const double full = std::max(scaled(static_cast<double>(top)), 1e-9);
  const auto y = [&](double c) {
    return std::max(f.y1(), f.y0() - (f.y0() - f.y1()) * scaled(c) / full);
  };

  std::ostringstream svg;
  open_svg(svg, f, p.title, "histogram");
  std::vector<std::pair<double, std::string>> ticks;
  if (p.log_counts) {
    for (double c = 1.0; c <= static_cast<double>(top); c *= 10.0)
      ticks.emplace_back(y(c), label(c));
  } else {
    for (const double t : choose_axis(0.0, static_cast<double>(top), axis_scale::linear).ticks) {
      if (t <= static_cast<double>(top)) ticks.emplace_back(y(t), label(t));
    }
  }
  y_axis(svg, f, ticks, p.log_counts ? "samples (log scale)" : "samples");
  x_axis(svg, f, ax, p.x_label);
  const char* color = detail::palette_color(p.color);
  const double width = (hi - lo) / static_cast<double>(h.counts.size());
  svg << "<g fill=\"" << color << "\">\n";  // one fill for every bar
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] == 0) continue;
    const double left = x(lo + width * static_cast<double>(i));
    const double right = x(lo + width * static_cast<double>(i + 1));
    const double y_top = y(static_cast<double>(h.counts[i]));
    svg << "<rect class=\"bar\" x=\"" << px(left) << "\" y=\"" << px(y_top) << "\" width=\""
        << px(std::max(right - left, 1.0)) << "\" height=\"" << px(f.y0() - y_top) << "\"><title>"
        << detail::format_us(lo + width * i) << " - " << detail::format_us(lo + width * (i + 1))
        << ": " << h.counts[i] << "</title></rect>\n";
  }
  svg << "</g></svg>";
  return svg.str();
}

std::optional<plot_range> value_extent(const series_plot& plot) {
  std::vector<double> ys = plot.buckets.min;
  ys.insert(ys.end(), plot.buckets.max.begin(), plot.buckets.max.end());
  const auto e = extent(ys, plot.points_y);
  if (!e) return std::nullopt;
  return plot_range{e->first, e->second};
}

std::optional<plot_range> value_extent(const histogram& data) {
  if (data.counts.empty()) return std::nullopt;
  return plot_range{data.lo, data.hi};
}

std::optional<plot_range> unite(const std::optional<plot_range>& a,
                                const std::optional<plot_range>& b) {
  if (!a) return b;
  if (!b) return a;
  return plot_range{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
}

}  // namespace resident::measure
