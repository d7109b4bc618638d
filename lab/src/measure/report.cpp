#include "resident/measure/report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace resident::measure {

namespace detail {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_us(double value) { return printf_string("%.2f", value); }

namespace {

std::string format_g(double value) { return printf_string("%g", value); }

// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * magnitude;
}

}  // namespace

axis choose_axis(double min, double max, axis_scale scale) {
  if (min > max) std::swap(min, max);
  axis a;
  a.log = min > 0.0 &&
          (scale == axis_scale::log || (scale == axis_scale::automatic && max / min > 100.0));
  if (a.log) {
    // Whole decades, so the ticks are 1, 10, 100 ... (with 2 and 5 between when there are
    // only a couple of decades and the axis would otherwise have too few labels).
    const int lo_exp = static_cast<int>(std::floor(std::log10(min)));
    int hi_exp = static_cast<int>(std::ceil(std::log10(max)));
    if (hi_exp == lo_exp) ++hi_exp;
    a.lo = std::pow(10.0, lo_exp);
    a.hi = std::pow(10.0, hi_exp);
    for (int e = lo_exp; e <= hi_exp; ++e) {
      const double decade = std::pow(10.0, e);
      a.ticks.push_back(decade);
      if (hi_exp - lo_exp <= 2 && e < hi_exp) {
        a.ticks.push_back(2.0 * decade);
        a.ticks.push_back(5.0 * decade);
      }
    }
    return a;
  }
  if (!(max > min)) {  // one value: widen so it sits mid-axis
    const double pad = min == 0.0 ? 1.0 : std::abs(min) * 0.05;
    min -= pad;
    max += pad;
  }
  const double step = nice_step((max - min) / 5.0);
  a.lo = std::floor(min / step) * step;
  a.hi = std::ceil(max / step) * step;
  for (int k = 0;; ++k) {
    const double t = a.lo + k * step;
    if (t > a.hi + step * 1e-9) break;
    // Snap to the step so 0.30000000000000004 does not leak into a label.
    a.ticks.push_back(std::round(t / step) * step);
  }
  return a;
}

double axis_position(const axis& a, double value, double x0, double x1) {
  double f = 0.0;
  if (a.log) {
    const double v = std::clamp(value, a.lo, a.hi);
    f = (std::log10(v) - std::log10(a.lo)) / (std::log10(a.hi) - std::log10(a.lo));
  } else {
    f = (std::clamp(value, a.lo, a.hi) - a.lo) / (a.hi - a.lo);
  }
  return x0 + f * (x1 - x0);
}

std::optional<box_values> box_from_result(const nlohmann::json& result) {
  if (!result.is_object()) return std::nullopt;
  const auto number = [&](const char* key) -> std::optional<double> {
    const auto it = result.find(key);
    if (it == result.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  const auto min = number("min_us");
  const auto max = number("max_us");
  const auto p50 = number("p50_us");
  const auto mean = number("mean_us");
  if (!min || !max || !p50 || !mean) return std::nullopt;
  box_values v;
  v.min = *min;
  v.max = *max;
  v.p50 = *p50;
  v.mean = *mean;
  v.p25 = number("p25_us").value_or(v.p50);
  v.p75 = number("p75_us").value_or(v.p50);
  v.whisker_low = number("whisker_low_us").value_or(v.min);
  v.whisker_high = number("whisker_high_us").value_or(v.max);
  return v;
}

box_values box_positions(const axis& a, const box_values& v, double x0, double x1) {
  const auto x = [&](double value) { return axis_position(a, value, x0, x1); };
  return {x(v.min),  x(v.whisker_low), x(v.p25),          x(v.p50),
          x(v.mean), x(v.p75),         x(v.whisker_high), x(v.max)};
}

namespace {

constexpr std::array<const char*, 10> palette = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                 "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                                 "#9c755f", "#bab0ac"};

}  // namespace

const char* palette_color(std::size_t index) noexcept { return palette[index % palette.size()]; }

std::string px(double v) { return printf_string("%.1f", v); }

namespace {

std::string line(const char* cls, double x1, double y1, double x2, double y2) {
  return std::string("<line class=\"") + cls + "\" x1=\"" + px(x1) + "\" y1=\"" + px(y1) +
         "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\"/>";
}

// Characters of UTF-8 text (one per code point).
std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// A small x: min and max, drawn apart from the whisker caps so outliers stand out.
std::string cross(double x, double y) {
  constexpr double r = 4.0;
  return "<path class=\"extreme\" d=\"M" + px(x - r) + " " + px(y - r) + "L" + px(x + r) + " " +
         px(y + r) + "M" + px(x - r) + " " + px(y + r) + "L" + px(x + r) + " " + px(y - r) + "\"/>";
}

}  // namespace

std::string box_plot_svg(const std::vector<plot_box>& boxes, axis_scale scale) {
  constexpr double width = 760.0;
  // Left of the plot; mode labels end just before it (about 7 px a character at 12 px).
  std::size_t longest = 0;
  for (const auto& b : boxes) longest = std::max(longest, code_points(b.label));
  const double x0 = std::max(160.0, 16.0 + 7.0 * static_cast<double>(longest));
  constexpr double x1 = width - 24.0;
  constexpr double top = 10.0;
  constexpr double row = 36.0;
  constexpr double half_box = 10.0;
  const double axis_y = top + row * static_cast<double>(boxes.size()) + 4.0;
  const double height = axis_y + 44.0;

  double lo = 0.0;
  double hi = 0.0;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    lo = i == 0 ? boxes[i].values.min : std::min(lo, boxes[i].values.min);
    hi = i == 0 ? boxes[i].values.max : std::max(hi, boxes[i].values.max);
  }
  const axis a = choose_axis(lo, hi, scale);

  std::ostringstream svg;
  svg << "<svg width=\"" << px(width) << "\" height=\"" << px(height) << "\" viewBox=\"0 0 "
      << px(width) << " " << px(height) << "\" role=\"img\" aria-label=\"latency box plot\">\n";
  for (const double t : a.ticks) {
    const double x = axis_position(a, t, x0, x1);
    svg << line("grid", x, top, x, axis_y) << "\n";
  }
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const plot_box& b = boxes[i];
    const box_values& v = b.values;
    const box_values p = box_positions(a, v, x0, x1);
    const double cy = top + row * (static_cast<double>(i) + 0.5);
    svg << "<g class=\"mode\"><title>"
        << html_escape(b.label + ": min " + format_us(v.min) + ", whisker " +
                       format_us(v.whisker_low) + ", p25 " + format_us(v.p25) + ", median " +
                       format_us(v.p50) + ", mean " + format_us(v.mean) + ", p75 " +
                       format_us(v.p75) + ", whisker " + format_us(v.whisker_high) + ", max " +
                       format_us(v.max) + " \xC2\xB5s")
        << "</title>\n";
    svg << "<text class=\"label\" x=\"" << px(x0 - 8.0) << "\" y=\"" << px(cy + 4.0)
        << "\" text-anchor=\"end\">" << html_escape(b.label) << "</text>\n";
    svg << line("whisker", p.whisker_low, cy, p.p25, cy)
        << line("whisker", p.p75, cy, p.whisker_high, cy)
        << line("cap", p.whisker_low, cy - 6.0, p.whisker_low, cy + 6.0)
        << line("cap", p.whisker_high, cy - 6.0, p.whisker_high, cy + 6.0) << "\n";
    svg << "<rect class=\"box\" x=\"" << px(p.p25) << "\" y=\"" << px(cy - half_box)
        << "\" width=\"" << px(std::max(p.p75 - p.p25, 1.0)) << "\" height=\"" << px(2.0 * half_box)
        << "\" fill=\"" << palette[b.color % palette.size()] << "\"/>\n";
    svg << line("median", p.p50, cy - half_box, p.p50, cy + half_box) << "\n";
    svg << "<polygon class=\"mean\" points=\"" << px(p.mean) << "," << px(cy - 6.0) << " "
        << px(p.mean + 6.0) << "," << px(cy) << " " << px(p.mean) << "," << px(cy + 6.0) << " "
        << px(p.mean - 6.0) << "," << px(cy) << "\"/>\n";
    svg << cross(p.min, cy) << cross(p.max, cy) << "\n</g>\n";
  }
  svg << line("axis", x0, axis_y, x1, axis_y) << "\n";
  for (const double t : a.ticks) {
    const double x = axis_position(a, t, x0, x1);
    svg << line("tick", x, axis_y, x, axis_y + 5.0) << "<text x=\"" << px(x) << "\" y=\""
        << px(axis_y + 18.0) << "\" text-anchor=\"middle\">" << format_g(t) << "</text>\n";
  }
  svg << "<text class=\"axis-label\" x=\"" << px((x0 + x1) / 2.0) << "\" y=\"" << px(axis_y + 36.0)
      << "\" text-anchor=\"middle\">latency (&#181;s" << (a.log ? ", log scale" : "")
      << ")</text>\n</svg>";
  return svg.str();
}

}  // namespace detail

namespace {

using detail::format_us;
using detail::html_escape;
using detail::printf_string;
using nlohmann::json;

// A latency result names its configuration; fixed-cost results (bench overhead) name a cost.
bool is_latency_result(const json& r) {
  return r.is_object() && r.contains("mean_us") && r.contains("workload");
}

std::string text_field(const json& r, const char* key) {
  const auto it = r.find(key);
  if (it == r.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The object `key` of `j`, or an empty object when there is none (its fields then show "-").
const json& object_at(const json& j, const char* key) {
  static const json none = json::object();
  const auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : none;
}

std::string us_field(const json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number() ? format_us(it->get<double>()) : "-";
}

// A generic value: integers exactly, other numbers with two decimals unless that would hide
// them (a relative error of 3e-8 is not 0.00), strings bare, the rest as compact JSON.
std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d == 0.0 || std::abs(d) >= 0.01) return format_us(d);
    return printf_string("%.3g", d);
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string count_field(const json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number() ? value_text(*it) : "-";
}

std::string cuda_version(int v) {
  if (v <= 0) return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string describe_device(const device_record& d) {
  if (d.name.empty()) return "no GPU recorded";
  std::string text = d.name + ", " + std::to_string(d.sm_count) + " SMs, compute capability " +
                     d.compute_capability + ", driver " + d.driver + ", CUDA runtime " +
                     cuda_version(d.cuda_runtime);
  if (!d.sm_clock_mhz_seen.empty()) {
    text += ", SM clocks seen ";
    for (std::size_t i = 0; i < d.sm_clock_mhz_seen.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(d.sm_clock_mhz_seen[i]);
    }
    text += " MHz";
  }
  return text;
}

std::string describe_host(const host_record& h) {
  if (h.cpus == 0 && h.kernel.empty() && h.cpu_model.empty()) return "no host recorded";
  std::string text = std::to_string(h.cpus) + " CPUs, kernel " + h.kernel;
  if (!h.cpu_model.empty()) text += ", " + h.cpu_model;
  return text;
}

// ---- text --------------------------------------------------------------------------------------

// Terminal columns of UTF-8 text (one per code point; no wide characters expected).
std::size_t display_width(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string render_columns(const std::vector<std::string>& header, const std::vector<bool>& right,
                           const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) widths[c] = display_width(header[c]);
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(r[c]));
    }
  }
  std::string out;
  const auto emit = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(widths[c] - display_width(cells[c]), ' ');
      if (c > 0) text += "  ";
      text += right[c] ? pad + cells[c] : cells[c] + pad;
    }
    text.erase(text.find_last_not_of(' ') + 1);
    out += text + "\n";
  };
  emit(header);
  for (const auto& r : rows) emit(r);
  return out;
}

// Groups of latency results by (workload, contention), in order of first appearance.
struct latency_group {
  std::string workload;
  std::string contention;
  std::vector<const json*> results;
};

std::vector<latency_group> group_latency_results(const json& results) {
  std::vector<latency_group> groups;
  for (const auto& r : results) {
    if (!is_latency_result(r)) continue;
    const std::string workload = text_field(r, "workload");
    const std::string contention = text_field(r, "contention");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const latency_group& g) {
      return g.workload == workload && g.contention == contention;
    });
    if (it == groups.end()) {
      groups.push_back({workload, contention, {}});
      it = std::prev(groups.end());
    }
    it->results.push_back(&r);
  }
  return groups;
}

// The slowest samples a result lists (measurement.slowest: bench loops and bench io), each
// against the sample before it on the same loop: which part of the path grew. "-" where a
// sample has no such split (no device stamps for it or its predecessor) and in the loop column
// of a one-loop bench.
constexpr std::size_t slowest_shown = 3;
const std::vector<std::string> slowest_header = {
    "mode",     "workload", "contention",     "loop",          "sample",
    "latency",  "previous", "release>detect", "detect>commit", "commit>seen",
    "poll gap", "publish",  "late",           "last read"};
constexpr std::size_t slowest_text_columns = 3;  // left-aligned

// `mode`: the result's mode as the report labels it.
std::vector<std::vector<std::string>> slowest_rows(const json& r, const std::string& mode) {
  std::vector<std::vector<std::string>> rows;
  const auto m = r.find("measurement");
  if (m == r.end() || !m->is_object()) return rows;
  const auto slow = m->find("slowest");
  if (slow == m->end() || !slow->is_array()) return rows;
  for (std::size_t i = 0; i < slow->size() && i < slowest_shown; ++i) {
    const json& s = (*slow)[i];
    const json& split = object_at(s, "vs_previous_us");
    rows.push_back({mode, text_field(r, "workload"), text_field(r, "contention"),
                    count_field(s, "loop"), count_field(s, "sample"), us_field(s, "latency_us"),
                    us_field(s, "previous_latency_us"), us_field(split, "release_to_detect"),
                    us_field(split, "detect_to_commit"), us_field(split, "commit_to_seen"),
                    us_field(s, "poll_gap_us"), us_field(s, "publish_us"),
                    us_field(s, "release_late_us"), us_field(s, "handler_last_read_us")});
  }
  return rows;
}

// Co-scheduling results (bench reef): one row per policy, with the RT tail against the
// exclusive policy, the preemption latency, the BE throughput against the sequential policy and
// where the RT gemm blocks landed.
bool is_policy_result(const json& r) {
  return is_latency_result(r) && r.contains("policy") && r.contains("be") && r["be"].is_object();
}

std::string ratio_field(const json& r, const char* key) {
  const auto it = r.find(key);
  if (it == r.end() || !it->is_number()) return "-";
  return printf_string("%.3fx", it->get<double>());
}

// "RT duty": the share of the run the RT loop held the preempt word up (rt_word_up), what a
// policy that stops BE work on the word can never give to BE. "in-loop p99": the device's part
// of the latency (detect -> commit), free of the host's noise; "undisturbed / exclusive": the
// p99 ratio without the samples the sensor or actuator thread may have stretched.
const std::vector<std::string> policy_header = {
    "policy",      "RT p99",          "RT p99 / exclusive",  "undisturbed / exclusive",
    "in-loop p99", "RT duty",         "preemption p50",      "preemption p99",
    "BE GFLOP/s",  "BE / sequential", "crowded RT launches", "late RT items"};
constexpr std::size_t policy_text_columns = 1;

std::vector<std::string> policy_row(const json& r) {
  const json& be = object_at(r, "be");
  // Policies without BE work (exclusive) have no BE throughput to show.
  const bool has_be =
      be.contains("sequences") && be["sequences"].is_number() && be["sequences"].get<double>() > 0;
  return {text_field(r, "policy"),
          us_field(r, "p99_us"),
          ratio_field(r, "rt_p99_over_exclusive"),
          ratio_field(r, "rt_undisturbed_p99_over_exclusive"),
          us_field(object_at(object_at(r, "measurement"), "in_loop_us"), "p99_us"),
          count_field(object_at(r, "rt_word_up"), "duty"),
          us_field(object_at(r, "preemption_latency"), "p50_us"),
          us_field(object_at(r, "preemption_latency"), "p99_us"),
          has_be ? us_field(be, "gflops") : std::string("-"),
          has_be ? ratio_field(r, "be_gflops_over_sequential") : std::string("-"),
          count_field(object_at(r, "rt_placement"), "crowded_launches"),
          count_field(r, "rt_late_items")};
}

// One co-scheduling row per policy result of the receipt (none for other benches).
std::vector<std::vector<std::string>> policy_rows_of(const receipt& rc) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : rc.results) {
    if (is_policy_result(r)) rows.push_back(policy_row(r));
  }
  return rows;
}

// Serving results (python -m resident.bench.disb): one row per policy, the RT model's latency
// from the sensor's publish to the actuator's sighting, the BE inferences beside it, and how
// fast BE work left at each raise of the preempt word.
bool is_serving_result(const json& r) {
  return r.is_object() && r.contains("policy") && r.contains("be_inferences_per_s") &&
         r.contains("latency_us") && r["latency_us"].is_object();
}

const std::vector<std::string> serving_header = {
    "policy",          "workload",           "RT p50",
    "RT p99",          "RT p99.9",           "RT max",
    "deadline misses", "RT p99 / exclusive", "priority / RT p99",
    "BE inferences/s", "BE / sequential",    "preemption p50",
    "preemption p99",  "wrong outputs"};
constexpr std::size_t serving_text_columns = 2;  // policy and workload, left-aligned

std::vector<std::string> serving_row(const json& r) {
  const json& rt = object_at(r, "latency_us");
  const json& pre = object_at(r, "preemption_latency_us");
  // The workload (one RT and one or three BE models), "/poisson" for Poisson RT arrivals: a
  // merged receipt holds each policy once per workload.
  std::string workload = text_field(r, "workload");
  if (text_field(r, "arrivals") == "poisson") workload += "/poisson";
  return {text_field(r, "policy"),
          workload,
          us_field(rt, "p50"),
          us_field(rt, "p99"),
          us_field(rt, "p99_9"),
          us_field(rt, "max"),
          count_field(r, "deadline_misses"),
          ratio_field(r, "rt_p99_over_exclusive"),
          ratio_field(r, "priority_p99_over_rt_p99"),
          count_field(r, "be_inferences_per_s"),
          ratio_field(r, "be_throughput_over_sequential"),
          us_field(pre, "p50"),
          us_field(pre, "p99"),
          count_field(r, "wrong_outputs")};
}

std::vector<std::vector<std::string>> serving_rows_of(const receipt& rc) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : rc.results) {
    if (is_serving_result(r)) rows.push_back(serving_row(r));
  }
  return rows;
}

// One evaluated target of a receipt (settings.targets: name, value, target or limit, met).
struct target_row {
  std::optional<bool> met;  // nullopt: not judged (a configuration it needs did not run)
  std::string name;
  std::string value;   // "not run" without one
  std::string target;  // "-" without one
  std::vector<std::string> notes;
};

// The receipt's targets as rows, or none when settings.targets is not a list.
std::vector<target_row> target_rows(const receipt& rc) {
  std::vector<target_row> rows;
  const auto t = rc.settings.find("targets");
  if (t == rc.settings.end() || !t->is_array()) return rows;
  const auto number = [](const nlohmann::json& v) {
    if (!v.is_number()) return std::string("-");
    return printf_string("%.4g", v.get<double>());
  };
  for (const auto& x : *t) {
    if (!x.is_object()) continue;
    target_row row;
    // met: true, false, or null (not judged: a configuration it needs did not run).
    if (const auto met = x.find("met"); met != x.end() && met->is_boolean()) {
      row.met = met->get<bool>();
    }
    row.name = x.value("name", std::string("?"));
    row.value = x.contains("value") && !x["value"].is_null() ? number(x["value"]) : "not run";
    row.target = x.contains("target")  ? value_text(x["target"])
                 : x.contains("limit") ? value_text(x["limit"])
                                       : "-";
    // Context beside a ratio target: the same ratio without the host's share (bench reef).
    if (x.contains("undisturbed")) row.notes.push_back("undisturbed " + number(x["undisturbed"]));
    if (x.contains("in_loop")) row.notes.push_back("in-loop " + number(x["in_loop"]));
    // ... and beside a preemption latency judged from an early raise, the wait after the sample.
    if (x.contains("after_sample")) {
      row.notes.push_back("from the sample " + number(x["after_sample"]));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

// The targets one line each, for the text report.
std::vector<std::string> target_lines(const receipt& rc) {
  std::vector<std::string> lines;
  for (const auto& row : target_rows(rc)) {
    std::string line = !row.met ? "-       " : *row.met ? "met     " : "missed  ";
    line += row.name + ": " + row.value + " (target " + row.target + ")";
    for (const auto& note : row.notes) line += "; " + note;
    lines.push_back(std::move(line));
  }
  return lines;
}

constexpr const char* slowest_note =
    "slowest samples, each against the sample before it on the same loop: how much each part "
    "of the path grew (release>detect, detect>commit from device stamps; commit>seen at the "
    "actuator), the first sighting's poll gap, the sensor's publish time, how late it released "
    "against its schedule, and the handler's last read of host memory (the one that found the "
    "sample)";

}  // namespace

std::string render_text(const std::vector<receipt>& receipts) {
  if (receipts.empty()) return "no receipts\n";
  std::string out;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<std::string>> slow_rows;
  std::string others;
  std::string policies;  // co-scheduling tables and targets, per receipt
  for (const receipt& rc : receipts) {
    const auto policy_rows = policy_rows_of(rc);
    if (!policy_rows.empty()) {
      std::vector<bool> right(policy_header.size(), true);
      for (std::size_t c = 0; c < policy_text_columns; ++c) right[c] = false;
      policies += "\n" + rc.benchmark + ": co-scheduling (\xC2\xB5s)\n";
      policies += render_columns(policy_header, right, policy_rows);
    }
    if (const auto serving = serving_rows_of(rc); !serving.empty()) {
      std::vector<bool> right(serving_header.size(), true);
      std::fill_n(right.begin(), serving_text_columns, false);
      policies += "\n" + rc.benchmark + ": serving (\xC2\xB5s)\n";
      policies += render_columns(serving_header, right, serving);
    }
    for (const auto& line : target_lines(rc)) policies += line + "\n";
    out += rc.benchmark + ": git " + rc.git_commit + ", started " + rc.started_at + ", " +
           describe_device(rc.device) + "; " + describe_host(rc.host) +
           "\n  command: " + rc.command + "\n";
    for (const auto& r : rc.results) {
      if (is_latency_result(r)) {
        rows.push_back({rc.benchmark, text_field(r, "mode"), text_field(r, "workload"),
                        text_field(r, "contention"), count_field(r, "n"), us_field(r, "mean_us"),
                        us_field(r, "p50_us"), us_field(r, "p99_us"), us_field(r, "p999_us"),
                        us_field(r, "max_us"), us_field(r, "jitter_us"),
                        count_field(r, "processed"), count_field(r, "dropped"),
                        count_field(r, "disturbed"), us_field(r, "undisturbed_jitter_us")});
        for (auto& row : slowest_rows(r, text_field(r, "mode"))) {
          slow_rows.push_back(std::move(row));
        }
        continue;
      }
      if (is_serving_result(r)) continue;  // its row in the serving table says it
      // Appends piece by piece: "literal" + temporary trips a GCC 12 -Wrestrict false positive.
      others += rc.benchmark;
      others += ':';
      if (r.is_object()) {
        for (const auto& [key, value] : r.items()) {
          others.append(" ").append(key).append("=").append(value_text(value));
        }
      } else {
        others.append(" ").append(value_text(r));
      }
      others += '\n';
    }
  }
  if (!rows.empty()) {
    out += "\nlatency in \xC2\xB5s\n";
    out +=
        render_columns({"benchmark", "mode", "workload", "contention", "n", "mean", "p50", "p99",
                        "p99.9", "max", "jitter", "processed", "dropped", "disturbed", "jitter*"},
                       {false, false, false, false, true, true, true, true, true, true, true, true,
                        true, true, true},
                       rows);
    out +=
        "\njitter*: over the samples that neither measuring thread disturbed (`disturbed` counts "
        "the others; - when the receipt predates the count)\n";
  }
  if (!slow_rows.empty()) {
    out += "\n";
    out += slowest_note;
    out += " (\xC2\xB5s)\n";
    std::vector<bool> right(slowest_header.size(), true);
    for (std::size_t c = 0; c < slowest_text_columns; ++c) right[c] = false;
    out += render_columns(slowest_header, right, slow_rows);
  }
  out += policies;
  if (!others.empty()) out += "\n" + others;
  return out;
}

// ---- HTML --------------------------------------------------------------------------------------

namespace detail {

namespace {

// No element is an object or an array: the array reads as a list of words.
bool is_flat(const json& array) {
  return std::none_of(array.begin(), array.end(),
                      [](const json& e) { return e.is_object() || e.is_array(); });
}

void value_cell(std::ostringstream& html, const json& v);

// An object as a key/value table, without the keys in `skip`.
void object_table(std::ostringstream& html, const json& object,
                  const std::vector<std::string>& skip) {
  html << "<table class=\"kv\"><tbody>\n";
  for (const auto& [key, value] : object.items()) {
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    html << "<tr><th>" << html_escape(key) << "</th><td>";
    value_cell(html, value);
    html << "</td></tr>\n";
  }
  html << "</tbody></table>\n";
}

// An array of objects: one row per element, the union of their keys as columns (in order of
// first appearance), and a "value" column for elements that are not objects.
void array_table(std::ostringstream& html, const json& array) {
  std::vector<std::string> columns;
  bool bare = false;
  for (const auto& e : array) {
    if (!e.is_object()) {
      bare = true;
      continue;
    }
    for (const auto& [key, value] : e.items()) {
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    }
  }
  html << "<table class=\"list\">\n<thead><tr>";
  for (const auto& c : columns) html << "<th>" << html_escape(c) << "</th>";
  if (bare) html << "<th>value</th>";
  html << "</tr></thead>\n<tbody>\n";
  for (const auto& e : array) {
    html << "<tr>";
    for (const auto& c : columns) {
      const auto it = e.is_object() ? e.find(c) : e.end();
      if (it == e.end()) {
        html << "<td></td>";
        continue;
      }
      html << (it->is_number() ? "<td class=\"num\">" : "<td>");
      value_cell(html, *it);
      html << "</td>";
    }
    if (bare) {
      html << "<td>";
      if (!e.is_object()) value_cell(html, e);
      html << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</tbody>\n</table>\n";
}

void value_cell(std::ostringstream& html, const json& v) {
  if ((v.is_object() || v.is_array()) && v.empty()) {
    html << "(empty)";
  } else if (v.is_object()) {
    object_table(html, v, {});
  } else if (v.is_array() && !is_flat(v)) {
    array_table(html, v);
  } else if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : v) parts.push_back(value_text(e));
    html << html_escape(joined(parts, ", "));
  } else {
    html << html_escape(value_text(v));
  }
}

}  // namespace

std::string value_html(const json& value, const std::vector<std::string>& skip) {
  std::ostringstream html;
  if (value.is_object() && !value.empty()) {
    object_table(html, value, skip);
  } else {
    value_cell(html, value);
  }
  return html.str();
}

std::vector<std::string> run_labels(const std::vector<std::string>& modes) {
  std::map<std::string, std::size_t> total;
  for (const auto& m : modes) ++total[m];
  std::map<std::string, std::size_t> seen;
  std::vector<std::string> labels;
  labels.reserve(modes.size());
  for (const auto& m : modes) {
    const std::size_t n = total[m];
    if (n < 2) {
      labels.push_back(m);
      continue;
    }
    labels.push_back(m + " (run " + std::to_string(++seen[m]) + " of " + std::to_string(n) + ")");
  }
  return labels;
}

}  // namespace detail

namespace {

// Every table sits in a box that scrolls sideways when the table is wider than the page.
void open_scroll(std::ostringstream& html) {
  html << "<div class=\"" << detail::table_scroll_class << "\">\n";
}
void close_scroll(std::ostringstream& html) { html << "</div>\n"; }

void meta_row(std::ostringstream& html, const char* name, const std::string& value,
              bool code = false) {
  html << "<tr><th>" << name << "</th><td>" << (code ? "<code>" : "") << html_escape(value)
       << (code ? "</code>" : "") << "</td></tr>\n";
}

// `labels`: each result's mode as detail::run_labels names it.
void latency_table(std::ostringstream& html, const latency_group& g,
                   const std::vector<std::string>& labels) {
  static constexpr std::array<std::pair<const char*, const char*>, 9> times = {{
      {"mean_us", "mean"},
      {"p50_us", "p50"},
      {"p99_us", "p99"},
      {"p999_us", "p99.9"},
      {"max_us", "max"},
      {"min_us", "min"},
      {"stddev_us", "stddev"},
      {"jitter_us", "jitter"},
      {"undisturbed_jitter_us", "jitter*"},
  }};
  static constexpr std::array<const char*, 4> counters = {"processed", "dropped", "repeated",
                                                          "disturbed"};
  open_scroll(html);
  html << "<table class=\"results\">\n<thead><tr><th>mode</th><th class=\"num\">n</th>";
  for (const auto& [key, name] : times) html << "<th class=\"num\">" << name << " (&#181;s)</th>";
  for (const char* name : counters) html << "<th class=\"num\">" << name << "</th>";
  html << "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const json& r = *g.results[i];
    html << "<tr><td>" << html_escape(labels[i]) << "</td><td class=\"num\">"
         << html_escape(count_field(r, "n")) << "</td>";
    for (const auto& [key, name] : times) {
      html << "<td class=\"num\">" << us_field(r, key) << "</td>";
    }
    for (const char* key : counters) {
      html << "<td class=\"num\">" << html_escape(count_field(r, key)) << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

void other_results_table(std::ostringstream& html, const std::vector<const json*>& results) {
  std::vector<std::string> columns;  // union of the keys, in order of first appearance
  bool bare_values = false;
  for (const json* r : results) {
    if (!r->is_object()) {
      bare_values = true;
      continue;
    }
    for (const auto& [key, value] : r->items()) {
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    }
  }
  if (bare_values) columns.emplace_back("value");
  open_scroll(html);
  html << "<table class=\"results\">\n<thead><tr>";
  for (const auto& c : columns) html << "<th>" << html_escape(c) << "</th>";
  html << "</tr></thead>\n<tbody>\n";
  for (const json* r : results) {
    html << "<tr>";
    for (const auto& c : columns) {
      std::string cell;
      bool number = false;
      if (!r->is_object()) {
        if (bare_values && c == columns.back()) cell = value_text(*r);
      } else if (const auto it = r->find(c); it != r->end()) {
        cell = value_text(*it);
        number = it->is_number();
      }
      html << (number ? "<td class=\"num\">" : "<td>") << html_escape(cell) << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

// A table of preformatted rows: the first `text_columns` columns left-aligned, the rest numbers.
void rows_table(std::ostringstream& html, const std::vector<std::string>& header,
                std::size_t text_columns, const std::vector<std::vector<std::string>>& rows) {
  open_scroll(html);
  html << "<table class=\"results\">\n<thead><tr>";
  for (std::size_t c = 0; c < header.size(); ++c) {
    html << (c < text_columns ? "<th>" : "<th class=\"num\">") << html_escape(header[c]) << "</th>";
  }
  html << "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    html << "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c) {
      html << (c < text_columns ? "<td>" : "<td class=\"num\">") << html_escape(row[c]) << "</td>";
    }
    html << "</tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

// The targets: a verdict, the name, the measured value, the target and any context beside it.
void targets_table(std::ostringstream& html, const std::vector<target_row>& rows) {
  html << "<h3>targets</h3>\n";
  open_scroll(html);
  html << "<table class=\"targets\">\n<thead><tr><th>verdict</th><th>name</th><th "
          "class=\"num\">value</th><th class=\"num\">target</th><th>notes</th></tr></thead>\n"
          "<tbody>\n";
  for (const auto& row : rows) {
    const char* verdict = !row.met ? "not judged" : *row.met ? "met" : "missed";
    const char* cls = !row.met ? "unjudged" : *row.met ? "met" : "missed";
    html << "<tr><td class=\"" << cls << "\">" << verdict << "</td><td>" << html_escape(row.name)
         << "</td><td class=\"num\">" << html_escape(row.value) << "</td><td class=\"num\">"
         << html_escape(row.target) << "</td><td>" << html_escape(joined(row.notes, "; "))
         << "</td></tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

// Command, commit, start time, device, host and the settings (a key/value table; the targets
// left out when `targets_shown`, since they get their own table).
void receipt_header(std::ostringstream& html, const receipt& rc, bool targets_shown) {
  open_scroll(html);
  html << "<table class=\"meta\">\n";
  meta_row(html, "command", rc.command, true);
  meta_row(html, "git commit", rc.git_commit, true);
  meta_row(html, "started at", rc.started_at);
  meta_row(html, "device", describe_device(rc.device));
  meta_row(html, "host", describe_host(rc.host));
  const std::vector<std::string> skip =
      targets_shown ? std::vector<std::string>{"targets"} : std::vector<std::string>{};
  bool any_setting = !rc.settings.is_object() && !rc.settings.is_null();
  if (rc.settings.is_object()) {
    for (const auto& [key, value] : rc.settings.items()) {
      if (std::find(skip.begin(), skip.end(), key) == skip.end()) any_setting = true;
    }
  }
  if (any_setting) {
    html << "<tr><th>settings</th><td>" << detail::value_html(rc.settings, skip) << "</td></tr>\n";
  }
  html << "</table>\n";
  close_scroll(html);
}

// One (workload, contention) group: its table, its box plot on one axis and its slowest samples.
// `colors`: one per mode for the whole receipt, so a mode looks the same in every plot.
void latency_group_html(std::ostringstream& html, const latency_group& g,
                        std::map<std::string, std::size_t>& colors, const report_options& options) {
  html << "<h3>workload " << html_escape(g.workload) << ", contention " << html_escape(g.contention)
       << "</h3>\n";
  std::vector<std::string> modes;
  for (const json* r : g.results) modes.push_back(text_field(*r, "mode"));
  const std::vector<std::string> labels = detail::run_labels(modes);
  latency_table(html, g, labels);
  std::vector<detail::plot_box> boxes;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const auto values = detail::box_from_result(*g.results[i]);
    if (!values) continue;
    const std::size_t color = colors.emplace(modes[i], colors.size()).first->second;
    boxes.push_back({labels[i], *values, color});
  }
  if (!boxes.empty()) {
    html << "<figure>\n" << detail::box_plot_svg(boxes, options.scale) << "\n</figure>\n";
  }
  std::vector<std::vector<std::string>> slow;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    for (auto& row : slowest_rows(*g.results[i], labels[i])) slow.push_back(std::move(row));
  }
  if (!slow.empty()) {
    html << "<p class=\"legend\">" << html_escape(slowest_note) << " (&#181;s).</p>\n";
    rows_table(html, slowest_header, slowest_text_columns, slow);
  }
}

void render_receipt(std::ostringstream& html, const receipt& rc, const report_options& options) {
  html << "<section class=\"receipt\">\n<h2>" << html_escape(rc.benchmark) << "</h2>\n";
  const auto targets = target_rows(rc);
  receipt_header(html, rc, !targets.empty());
  std::map<std::string, std::size_t> colors;
  for (const auto& g : group_latency_results(rc.results)) {
    latency_group_html(html, g, colors, options);
  }
  if (const auto policy_rows = policy_rows_of(rc); !policy_rows.empty()) {
    html << "<h3>co-scheduling</h3>\n";
    rows_table(html, policy_header, policy_text_columns, policy_rows);
  }
  if (const auto serving = serving_rows_of(rc); !serving.empty()) {
    html << "<h3>serving</h3>\n";
    rows_table(html, serving_header, serving_text_columns, serving);
  }
  if (!targets.empty()) targets_table(html, targets);
  std::vector<const json*> others;
  for (const auto& r : rc.results) {
    if (!is_latency_result(r)) others.push_back(&r);
  }
  if (!others.empty()) {
    html << "<h3>results</h3>\n";
    other_results_table(html, others);
  }
  html << "</section>\n";
}

}  // namespace

std::string render_html(const std::vector<receipt>& receipts, const report_options& options) {
  std::string title = "resident benchmark report";
  for (std::size_t i = 0; i < receipts.size(); ++i) {
    title += (i == 0 ? ": " : ", ") + receipts[i].benchmark;
  }
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
       << html_escape(title) << "</title>\n<style>\n"
       << detail::page_css << "\n</style>\n</head>\n<body>\n<h1>" << html_escape(title)
       << "</h1>\n";
  html << "<p class=\"legend\">Box plots: the box spans p25 to p75, the bar is the median, the "
          "diamond the mean; whiskers reach the furthest samples within 1.5 IQR of the box "
          "(Tukey); red crosses mark min and max. Times in &#181;s; the axis is logarithmic when "
          "a group's max is more than 100 times its min. Compare modes only within one "
          "receipt (one process run). A mode that ran more than once in a group is labelled "
          "<em>run k of n</em>, in the receipt's order. jitter*: max &#8722; min over the samples "
          "that neither measuring thread (sensor, actuator) was disturbed around; "
          "<em>disturbed</em> counts the others.</p>\n";
  if (receipts.empty()) html << "<p>No receipts.</p>\n";
  for (const receipt& rc : receipts) render_receipt(html, rc, options);
  html << "</body>\n</html>\n";
  return html.str();
}

}  // namespace resident::measure
