// resident bench camera's text table and HTML page (see camera_report.hpp).

#include "bench/camera/camera_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "resident/measure/plots.hpp"
#include "resident/measure/report.hpp"

namespace resident::bench {

namespace {

using measure::detail::format_us;
using measure::detail::html_escape;
using measure::detail::printf_string;
using nlohmann::json;

// ---- shared ------------------------------------------------------------------------------------

std::string text(const json& r, const char* key) {
  const auto it = r.find(key);
  if (it == r.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string number(const json& r, const char* key, int digits = 2) {
  const auto it = r.find(key);
  if (it == r.end() || !it->is_number()) return "-";
  if (it->is_number_integer() || it->is_number_unsigned()) return it->dump();
  return printf_string("%.*f", digits, it->get<double>());
}

std::string level_name(const std::string& contention) {
  return contention == "none"     ? "quiet"
         : contention == "stress" ? "under host contention"
                                  : contention;
}

std::string display_name(const std::string& display) {
  if (display == "vrr240-flip") return "240 Hz variable refresh, flip";
  if (display == "vrr240-front") return "240 Hz variable refresh, front buffer";
  if (display == "fixed60-flip") return "fixed 60 Hz, flip";
  return display;
}

/// A mode's colour in every plot of the page.
std::size_t mode_color(const std::string& mode) {
  static const std::map<std::string, std::size_t> colors{
      {"cpu-hostmem", 3}, {"host-graph", 1}, {"while", 0}, {"tail", 2}, {"eager", 4}};
  const auto it = colors.find(mode);
  return it == colors.end() ? 5 : it->second;
}

// Every table sits in a box that scrolls sideways when the table is wider than the page.
void open_scroll(std::ostringstream& html) {
  html << "<div class=\"" << measure::detail::table_scroll_class << "\">\n";
}
void close_scroll(std::ostringstream& html) { html << "</div>\n"; }

/// Latency results of one kind grouped by (workload, contention), in order of appearance.
struct result_group {
  std::string workload;
  std::string contention;
  std::vector<const json*> results;
};

std::vector<result_group> groups_of(const json& results, const std::string& kind) {
  std::vector<result_group> groups;
  for (const auto& r : results) {
    if (r.value("kind", "") != kind) continue;
    const std::string w = text(r, "workload");
    const std::string c = text(r, "contention");
    auto it = std::find_if(groups.begin(), groups.end(), [&](const result_group& g) {
      return g.workload == w && g.contention == c;
    });
    if (it == groups.end()) it = groups.insert(groups.end(), result_group{w, c, {}});
    it->results.push_back(&r);
  }
  return groups;
}

std::string verdict_word(const json& t) { return t.value("met", false) ? "met" : "missed"; }

std::string limit_text(const json& t) {
  return text(t, "op") + " " + number(t, "target") +
         (t.value("unit", "") == "ratio" ? "" : " " + t.value("unit", ""));
}

// ---- text ------------------------------------------------------------------------------------

void latency_rows(std::ostringstream& os, const json& results, const std::string& kind) {
  bool any = false;
  for (const auto& r : results) {
    if (r.value("kind", "") != kind) continue;
    if (!any) {
      os << "\n" << kind << " latency (us; each statistic the median over the runs)\n";
      os << printf_string("%-20s %-8s %-12s %4s %7s %10s %10s %10s %10s %10s %10s %8s\n",
                          "workload", "contend", "mode", "runs", "n", "mean", "p50", "p99", "p99.9",
                          "max", "J", "dropped");
      any = true;
    }
    os << printf_string(
        "%-20s %-8s %-12s %4zu %7s %10s %10s %10s %10s %10s %10s %8s%s\n",
        text(r, "workload").c_str(), text(r, "contention").c_str(), text(r, "mode").c_str(),
        r.value("runs", json::array()).size(), number(r, "n").c_str(), number(r, "mean_us").c_str(),
        number(r, "p50_us").c_str(), number(r, "p99_us").c_str(), number(r, "p999_us").c_str(),
        number(r, "max_us").c_str(), number(r, "jitter_us").c_str(), number(r, "dropped").c_str(),
        r.value("errors", json::array()).empty() ? "" : "  ERRORS");
  }
}

void other_rows(std::ostringstream& os, const json& results) {
  bool ops = false;
  bool quality = false;
  for (const auto& r : results) {
    const std::string kind = r.value("kind", "");
    if (kind == "operator") {
      if (!ops) os << "\noperators (device time per launch, us)\n";
      ops = true;
      os << printf_string("  %-20s %-6s p50 %9s  p99 %9s\n", text(r, "operator").c_str(),
                          text(r, "resolution").c_str(), number(r, "p50_us").c_str(),
                          number(r, "p99_us").c_str());
    } else if (kind == "demosaic_quality") {
      if (!quality) os << "\ndemosaic PSNR against the photograph (dB)\n";
      quality = true;
      os << "  " << text(r, "photo") << ": malvar " << number(r, "psnr_malvar_db") << ", bilinear "
         << number(r, "psnr_bilinear_db") << ", npp " << number(r, "psnr_npp_db") << "\n";
    }
  }
}

}  // namespace

std::string camera_table(const measure::receipt& receipt) {
  std::ostringstream os;
  latency_rows(os, receipt.results, "software");
  latency_rows(os, receipt.results, "photon");
  other_rows(os, receipt.results);
  const json& s = receipt.settings;
  if (s.contains("targets")) {
    os << "\ntargets\n";
    for (const auto& t : s["targets"]) {
      os << "  " << (t.value("met", false) ? "met    " : "MISSED ") << text(t, "name") << ": "
         << number(t, "value") << " (" << limit_text(t) << ")";
      if (t.contains("note")) os << "; " << text(t, "note");
      os << "\n";
    }
    for (const auto& t : s.value("targets_not_judged", json::array())) {
      os << "  -      " << text(t, "name") << ": not judged (" << text(t, "why") << ")\n";
    }
  }
  if (!s.value("ratios", json::array()).empty()) {
    os << "\nratios (reported, not targeted)\n";
    for (const auto& r : s["ratios"]) {
      os << "  " << text(r, "name") << ": " << number(r, "value") << " ("
         << number(r, "host_graph_us") << " / " << number(r, "gpu_resident_us") << " us";
      if (r.contains("paper")) os << "; paper " << number(r, "paper", 1);
      os << ")\n";
    }
  }
  return os.str();
}

namespace {

// ---- HTML ------------------------------------------------------------------------------------

// Rules after measure::detail::page_css and measure::plot_css: a wider page, plots side by side.
constexpr const char* style = R"(body{max-width:1200px}h3{margin-top:1.6em}
code{font-size:.85em;word-break:normal}figure{margin:.4em 0 1em}
.plots{display:flex;flex-wrap:wrap;gap:.6em}
)";

void meta(std::ostringstream& html, const measure::receipt& rc) {
  const auto& d = rc.device;
  std::string device = d.name.empty()
                           ? "not recorded"
                           : d.name + ", " + std::to_string(d.sm_count) +
                                 " SMs, compute capability " + d.compute_capability + ", driver " +
                                 d.driver + ", CUDA runtime " + std::to_string(d.cuda_runtime);
  if (!d.sm_clock_mhz_seen.empty()) {
    device += ", SM clocks seen";
    for (const int c : d.sm_clock_mhz_seen) {
      device += ' ';  // appended apart: GCC 12 misreads `" " + to_string(c)` (-Wrestrict)
      device += std::to_string(c);
    }
    device += " MHz";
  }
  const auto row = [&](const char* name, const std::string& value) {
    html << "<tr><th>" << name << "</th><td>" << html_escape(value) << "</td></tr>\n";
  };
  open_scroll(html);
  html << "<table class=\"meta\">\n";
  row("command", rc.command);
  row("git commit", rc.git_commit);
  row("started at", rc.started_at);
  row("device", device);
  row("host", std::to_string(rc.host.cpus) + " CPUs, kernel " + rc.host.kernel +
                  (rc.host.cpu_model.empty() ? "" : ", " + rc.host.cpu_model));
  html << "</table>\n";
  close_scroll(html);
}

void targets_section(std::ostringstream& html, const json& s) {
  html << "<h2>Targets</h2>\n<p class=\"legend\">Each target as the camera pipeline's design "
          "states it, judged on this receipt. A J target is judged on the median of the "
          "configuration's runs in this one process run (every run's value beside it).</p>\n";
  open_scroll(html);
  html << "<table>\n<thead><tr><th>verdict</th><th>target</th><th class=\"num\">measured</th>"
          "<th>limit</th><th>runs</th><th>note</th></tr></thead>\n<tbody>\n";
  for (const auto& t : s.value("targets", json::array())) {
    std::string runs;
    for (const auto& v : t.value("run_values", json::array())) {
      runs += (runs.empty() ? "" : ", ") + format_us(v.get<double>());
    }
    std::string note = t.value("note", "");
    if (note.empty() && t.contains("frames_per_run")) {
      note = number(t, "frames_per_run") + " frames in the shortest run";
    }
    if (t.contains("malvar_p50_us")) {
      note = "Malvar " + format_us(t["malvar_p50_us"].get<double>()) + " \xC2\xB5s, NPP " +
             format_us(t["npp_p50_us"].get<double>()) + " \xC2\xB5s";
    }
    const std::string verdict = verdict_word(t);
    html << "<tr><td class=\"" << verdict << "\">" << verdict << "</td><td>"
         << html_escape(text(t, "name")) << "</td><td class=\"num\">" << number(t, "value")
         << "</td><td>" << html_escape(limit_text(t)) << "</td><td>" << html_escape(runs)
         << "</td><td>" << html_escape(note) << "</td></tr>\n";
  }
  for (const auto& t : s.value("targets_not_judged", json::array())) {
    html << "<tr><td>not judged</td><td>" << html_escape(text(t, "name"))
         << "</td><td></td><td></td><td></td><td>" << html_escape(text(t, "why")) << "</td></tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
  if (s.value("ratios", json::array()).empty()) return;
  html << "<h3>Ratios, reported (not targeted: this machine's host noise sets them)</h3>\n";
  open_scroll(html);
  html << "<table>\n<thead><tr><th>ratio</th><th class=\"num\">value</th><th class=\"num\">"
          "host-graph (&#181;s)</th><th class=\"num\">GPU-resident (&#181;s)</th><th class=\"num\">"
          "paper</th></tr></thead>\n<tbody>\n";
  for (const auto& r : s["ratios"]) {
    html << "<tr><td>" << html_escape(text(r, "name")) << "</td><td class=\"num\">"
         << number(r, "value") << "</td><td class=\"num\">" << number(r, "host_graph_us")
         << "</td><td class=\"num\">" << number(r, "gpu_resident_us") << "</td><td class=\"num\">"
         << number(r, "paper", 1) << "</td></tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

// Each result's mode as the page labels it: "mode (run k of n)" where a mode occurs n > 1 times
// in the group (measure::detail::run_labels).
std::vector<std::string> labels_of(const result_group& g) {
  std::vector<std::string> modes;
  for (const json* r : g.results) modes.push_back(text(*r, "mode"));
  return measure::detail::run_labels(modes);
}

void latency_table(std::ostringstream& html, const result_group& g, bool photon) {
  static const std::vector<std::pair<const char*, const char*>> software_cols = {
      {"mean_us", "mean"}, {"p50_us", "p50"}, {"p99_us", "p99"}, {"p999_us", "p99.9"},
      {"max_us", "max"},   {"min_us", "min"}, {"jitter_us", "J"}};
  static const std::vector<std::pair<const char*, const char*>> photon_cols = {{"mean_us", "mean"},
                                                                               {"min_us", "min"},
                                                                               {"p50_us", "p50"},
                                                                               {"max_us", "max"},
                                                                               {"jitter_us", "J"}};
  static const std::vector<std::pair<const char*, const char*>> counts = {
      {"produced", "produced"},   {"processed", "processed"},
      {"dropped", "dropped"},     {"repeated", "repeated"},
      {"corrupt", "corrupt"},     {"rewritten", "of which rewritten"},
      {"displayed", "displayed"}, {"late_sensor_frames", "late sensor"}};
  const auto& cols = photon ? photon_cols : software_cols;
  const std::vector<std::string> labels = labels_of(g);
  open_scroll(html);
  html << "<table>\n<thead><tr><th>mode</th><th class=\"num\">runs</th><th class=\"num\">n</th>";
  for (const auto& [key, name] : cols) html << "<th class=\"num\">" << name << " (&#181;s)</th>";
  for (const auto& [key, name] : counts) html << "<th class=\"num\">" << name << "</th>";
  if (photon) html << "<th class=\"num\">marked</th>";
  html << "<th>errors</th></tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const json* r = g.results[i];
    html << "<tr><td>" << html_escape(labels[i]) << "</td><td class=\"num\">"
         << r->value("runs", json::array()).size() << "</td><td class=\"num\">" << number(*r, "n")
         << "</td>";
    for (const auto& [key, name] : cols) html << "<td class=\"num\">" << number(*r, key) << "</td>";
    for (const auto& [key, name] : counts) {
      html << "<td class=\"num\">" << number(*r, key) << "</td>";
    }
    if (photon) html << "<td class=\"num\">" << number(*r, "marked") << "</td>";
    std::string errors;
    for (const auto& e : r->value("errors", json::array())) errors += e.get<std::string>() + " ";
    html << "<td>" << html_escape(errors) << "</td></tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

// A plot's title: the result's label, and which of its runs the plot draws when it has several
// (the statistics are medians over the runs; the plots show one run).
std::string plot_title(const json& r, const std::string& label) {
  const auto runs = r.value("runs", json::array()).size();
  if (runs < 2) return label;
  const std::string plotted = number(r, "plotted_run") + " of " + std::to_string(runs);
  return label == text(r, "mode") ? label + " (run " + plotted + ")"
                                  : label + ", plotted run " + plotted;
}

// Per result its latency over time, every one on the group's shared latency axis.
std::vector<measure::series_plot> series_plots(const result_group& g, bool photon,
                                               const std::vector<std::string>& labels) {
  std::vector<measure::series_plot> plots;
  std::optional<measure::plot_range> shared;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const json& r = *g.results[i];
    measure::series_plot p;
    p.title = plot_title(r, labels[i]);
    p.color = mode_color(text(r, "mode"));
    if (photon && r.contains("points")) {
      p.x_label = "frame start (s)";
      p.points_x = r["points"].value("t", std::vector<double>{});
      p.points_y = r["points"].value("us", std::vector<double>{});
    } else if (r.contains("series")) {
      p.x_label = "frame start (s); band: min to max of each bucket, line: mean";
      if (auto b = measure::buckets_from_json(r["series"])) p.buckets = std::move(*b);
    }
    shared = measure::unite(shared, measure::value_extent(p));
    plots.push_back(std::move(p));
  }
  for (auto& p : plots) p.y_range = shared;
  return plots;
}

// Per result its histogram, every one on the group's shared latency axis and count axis.
std::vector<measure::histogram_plot> histogram_plots(const result_group& g,
                                                     const std::vector<std::string>& labels) {
  std::vector<measure::histogram_plot> plots;
  std::optional<measure::plot_range> shared;
  std::uint64_t top = 0;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const json& r = *g.results[i];
    measure::histogram_plot h;
    h.title = plot_title(r, labels[i]);
    h.color = mode_color(text(r, "mode"));
    if (r.contains("histogram")) {
      if (auto d = measure::histogram_from_json(r["histogram"])) h.data = std::move(*d);
    }
    shared = measure::unite(shared, measure::value_extent(h.data));
    for (const auto c : h.data.counts) top = std::max(top, c);
    plots.push_back(std::move(h));
  }
  for (auto& h : plots) {
    h.x_range = shared;
    h.max_count = top;
  }
  return plots;
}

void group_plots(std::ostringstream& html, const result_group& g, bool photon) {
  const std::vector<std::string> labels = labels_of(g);
  std::vector<measure::detail::plot_box> boxes;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    if (const auto v = measure::detail::box_from_result(*g.results[i])) {
      boxes.push_back({labels[i], *v, mode_color(text(*g.results[i], "mode"))});
    }
  }
  if (!boxes.empty()) {
    html << "<figure>\n" << measure::detail::box_plot_svg(boxes) << "\n</figure>\n";
  }
  html << "<div class=\"plots\">\n";
  for (const auto& p : series_plots(g, photon, labels)) {
    html << "<figure>" << measure::series_svg(p) << "</figure>\n";
  }
  html << "</div>\n<div class=\"plots\">\n";
  for (const auto& h : histogram_plots(g, labels)) {
    html << "<figure>" << measure::histogram_svg(h) << "</figure>\n";
  }
  html << "</div>\n";
}

/// The plotted run's stage breakdown of a result (null when it has none).
const json& plotted_stages(const json& r) {
  static const json none;
  const auto plotted = r.value("plotted_run", std::size_t{1});
  const auto& all = r.find("runs");
  if (all == r.end() || plotted == 0 || plotted > all->size()) return none;
  const auto& run = (*all)[plotted - 1];
  const auto it = run.find("stages");
  return it == run.end() ? none : *it;
}

/// Per mode, the plotted run's late frames (more than late_margin_us over the median) and the
/// stage each waited in; bunched: landed right after the frame before (the sensor's thread).
void late_table(std::ostringstream& html, const result_group& g) {
  std::ostringstream rows;
  double margin = 0;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const json& st = plotted_stages(*g.results[i]);
    if (st.is_null() || !st.contains("late")) continue;
    const json& late = st["late"];
    margin = late.value("margin_us", 0.0);
    rows << "<tr><td>" << html_escape(text(*g.results[i], "mode")) << "</td><td>"
         << late.value("frames", 0) << " of " << st.value("n", 0) << "</td>";
    for (const char* s : {"queue", "sighting", "controller", "dag"}) {
      rows << "<td>" << late["by_stage"].value(s, 0) << "</td>";
    }
    rows << "<td>" << late.value("bunched", 0) << "</td><td>" << late.value("sensor_late", 0)
         << "</td></tr>\n";
  }
  if (rows.str().empty()) return;
  html << "<table><tr><th>mode</th><th>late frames</th><th>queue</th><th>sighting</th>"
          "<th>controller</th><th>DAG</th><th>bunched</th><th>sensor late</th></tr>\n"
       << rows.str() << "</table><p class=\"legend\">Late: arrival &#8594; scanout more than "
       << measure::detail::format_us(margin)
       << " &#181;s over the run's median; each is counted under the stage most above its own "
          "median. Bunched: it landed less than half the usual gap after the frame before; "
          "sensor late: the emulated sensor's thread enqueued it late.</p>\n";
}

/// One stacked bar per mode: the p50 of each stage of the plotted run (queue, sighting,
/// controller, DAG), on one axis; the slowest frames' stages in a table below.
void stage_bars(std::ostringstream& html, const result_group& g) {
  static constexpr std::array<const char*, 4> stages = {"queue", "sighting", "controller", "dag"};
  static constexpr std::array<const char*, 4> colours = {"#9467bd", "#ff7f0e", "#2ca02c",
                                                         "#1f77b4"};
  std::vector<std::pair<std::string, std::array<double, 4>>> bars;
  double widest = 0;
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const json& st = plotted_stages(*g.results[i]);
    if (st.is_null() || !st.contains("stages_us")) continue;
    std::array<double, 4> v{};
    for (std::size_t k = 0; k < stages.size(); ++k) {
      v[k] = st["stages_us"].value(stages[k], json::object()).value("p50", 0.0);
    }
    widest = std::max(widest, v[0] + v[1] + v[2] + v[3]);
    bars.emplace_back(text(*g.results[i], "mode"), v);
  }
  if (bars.empty() || widest <= 0) return;
  constexpr double left = 110;
  constexpr double width = 520;
  constexpr double row = 22;
  const double height = row * static_cast<double>(bars.size()) + 40;
  html << "<figure><svg width=\"" << left + width + 20 << "\" height=\"" << height
       << "\" viewBox=\"0 0 " << left + width + 20 << " " << height << "\">\n";
  for (std::size_t b = 0; b < bars.size(); ++b) {
    const double y = 8 + row * static_cast<double>(b);
    html << "<text x=\"4\" y=\"" << y + 14 << "\">" << html_escape(bars[b].first) << "</text>";
    double x = left;
    for (std::size_t k = 0; k < stages.size(); ++k) {
      const double w = width * bars[b].second[k] / widest;
      html << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w
           << "\" height=\"16\" fill=\"" << colours[k] << "\"><title>" << stages[k] << " "
           << measure::detail::format_us(bars[b].second[k]) << " &#181;s</title></rect>";
      x += w;
    }
    html << "\n";
  }
  const double legend_y = height - 10;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const double x = left + 130.0 * static_cast<double>(k);
    html << "<rect x=\"" << x << "\" y=\"" << legend_y - 10 << "\" width=\"10\" height=\"10\" "
         << "fill=\"" << colours[k] << "\"/><text x=\"" << x + 14 << "\" y=\"" << legend_y << "\">"
         << stages[k] << "</text>";
  }
  html << "\n</svg><figcaption class=\"legend\">Where a frame's time goes, p50 of each stage "
          "(device clock, the plotted run), full bar "
       << measure::detail::format_us(widest)
       << " &#181;s: queue (landed while the loop was busy with an earlier frame), sighting "
          "(the handler seeing it), controller (releasing the DAG), DAG (the operators and the "
          "egress). The receipt lists each run's slowest frames with these stages, the sensor "
          "thread's lateness and the gap since the frame before.</figcaption></figure>\n";
  late_table(html, g);
}

void latency_section(std::ostringstream& html, const json& results, bool photon) {
  const auto groups = groups_of(results, photon ? "photon" : "software");
  if (groups.empty()) return;
  if (photon) {
    html << "<h2>Photon to display</h2>\n<p class=\"legend\">60 Hz sensor, 1080p RAW12, a "
            "marked frame (the LED lit from the frame's start) every fourth frame. Latency: "
            "the LED's switch-on to the photodiode seeing the lit probe in the scanned-out "
            "buffer, both on the device clock. One dot per marked frame seen.</p>\n";
  } else {
    html << "<h2>Software processing latency</h2>\n<p class=\"legend\">Per processed frame: "
            "the frame's metadata record landing in GPU memory to the scanout buffer written "
            "(device clock). Over time: the run is cut into buckets of consecutive frames; the "
            "band spans each bucket's min to max, the line its mean. Histograms count frames "
            "on a log axis so that a tail of a few frames stays visible.</p>\n";
  }
  for (const auto& g : groups) {
    const std::string title =
        photon ? display_name(g.results.front()->value("display", "")) : g.workload;
    html << "<h3>" << html_escape(title + ", " + level_name(g.contention)) << "</h3>\n";
    if (photon && g.results.front()->value("display", "") == "fixed60-flip") {
      html << "<p class=\"legend\">Vblank quantization: with a fixed 60 Hz clock a flip waits "
              "for the next vblank, so a frame ready just after one waits almost a whole "
              "16.7 ms period; latency then spreads over a refresh period whatever mode made "
              "the frame. The variable-refresh display starts a scanout as soon as a flip "
              "arrives (no faster than 240 Hz).</p>\n";
    }
    latency_table(html, g, photon);
    if (!photon) stage_bars(html, g);
    group_plots(html, g, photon);
  }
}

void operators_section(std::ostringstream& html, const json& results) {
  std::vector<std::string> names;
  std::vector<std::string> resolutions;
  std::map<std::pair<std::string, std::string>, const json*> at;
  for (const auto& r : results) {
    if (r.value("kind", "") != "operator") continue;
    const std::string n = text(r, "operator");
    const std::string res = text(r, "resolution");
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    if (std::find(resolutions.begin(), resolutions.end(), res) == resolutions.end()) {
      resolutions.push_back(res);
    }
    at[{n, res}] = &r;
  }
  if (names.empty()) return;
  html << "<h2>Per-operator device times</h2>\n<p class=\"legend\">Each operator alone, one "
          "launch at a time between two CUDA events on its own stream (kernel time plus the "
          "gaps between its kernels); p50 and p99 over the timed launches, in &#181;s.</p>\n";
  open_scroll(html);
  html << "<table>\n<thead><tr><th>operator</th>";
  for (const auto& res : resolutions) {
    html << "<th class=\"num\">" << html_escape(res) << " p50</th><th class=\"num\">"
         << html_escape(res) << " p99</th>";
  }
  html << "<th>checked</th></tr></thead>\n<tbody>\n";
  for (const auto& n : names) {
    html << "<tr><td>" << html_escape(n) << "</td>";
    std::string checked;
    for (const auto& res : resolutions) {
      const auto it = at.find({n, res});
      const json none = json::object();
      const json& r = it == at.end() ? none : *it->second;
      html << "<td class=\"num\">" << number(r, "p50_us") << "</td><td class=\"num\">"
           << number(r, "p99_us") << "</td>";
      if (it != at.end()) checked = text(r, "checked");
    }
    html << "<td>" << html_escape(checked) << "</td></tr>\n";
  }
  html << "</tbody>\n</table>\n";
  close_scroll(html);
}

void quality_section(std::ostringstream& html, const json& results) {
  std::vector<const json*> rows;
  for (const auto& r : results) {
    if (r.value("kind", "") == "demosaic_quality") rows.push_back(&r);
  }
  if (rows.empty()) return;
  html << "<h2>Demosaic: ours against NPP</h2>\n<p class=\"legend\">Each photograph mosaiced "
          "(RGGB, 12 bits, no black level or cast), demosaiced on the GPU and compared with "
          "the original: PSNR over every pixel and colour in the photograph's 8-bit units "
          "(peak 255). Times: the operators table above (same run).</p>\n";
  open_scroll(html);
  html << "<table>\n<thead><tr><th>photograph</th><th class=\"num\">size</th><th class=\"num\">"
          "Malvar (dB)</th><th class=\"num\">bilinear (dB)</th><th class=\"num\">NPP bilinear "
          "(dB)</th><th class=\"num\">Malvar &#8722; bilinear</th></tr></thead>\n<tbody>\n";
  std::array<double, 3> sum{};
  std::size_t npp = 0;
  for (const json* r : rows) {
    const double m = (*r)["psnr_malvar_db"].get<double>();
    const double b = (*r)["psnr_bilinear_db"].get<double>();
    sum[0] += m;
    sum[1] += b;
    if ((*r)["psnr_npp_db"].is_number()) {
      sum[2] += (*r)["psnr_npp_db"].get<double>();
      ++npp;
    }
    html << "<tr><td>" << html_escape(text(*r, "photo")) << "</td><td class=\"num\">"
         << number(*r, "width") << "&#215;" << number(*r, "height") << "</td><td class=\"num\">"
         << format_us(m) << "</td><td class=\"num\">" << format_us(b) << "</td><td class=\"num\">"
         << number(*r, "psnr_npp_db") << "</td><td class=\"num\">" << format_us(m - b)
         << "</td></tr>\n";
  }
  const double n = static_cast<double>(rows.size());
  html << "<tr><th>mean</th><td></td><td class=\"num\">" << format_us(sum[0] / n)
       << "</td><td class=\"num\">" << format_us(sum[1] / n) << "</td><td class=\"num\">"
       << (npp == rows.size() ? format_us(sum[2] / n) : "-") << "</td><td class=\"num\">"
       << format_us((sum[0] - sum[1]) / n) << "</td></tr>\n</tbody>\n</table>\n";
  close_scroll(html);
}

}  // namespace

std::string render_camera_report(const measure::receipt& rc) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       << "<title>resident bench camera</title>\n<style>\n"
       << measure::detail::page_css << measure::plot_css << style
       << "\n</style>\n</head>\n<body>\n<h1>resident bench camera</h1>\n";
  html << "<p class=\"legend\">The camera-to-display pipeline (emulated sensor bridge, CSI-2 "
          "reconstruction, ISP, demosaic, gamma egress, emulated display) in each execution "
          "mode, all in this one process run: cpu-hostmem is CPU-driven without GPUDirect, "
          "host-graph CPU-driven with GPUDirect, while and tail GPU-resident. Compare modes "
          "only within one receipt. Box plots: box p25 to p75, bar the median, diamond the "
          "mean, whiskers 1.5 IQR, red crosses min and max. Within a group the modes' plots "
          "share one latency axis (histograms also one count axis), so they compare by eye; a "
          "mode that ran more than once in a group is labelled run k of n.</p>\n";
  meta(html, rc);
  targets_section(html, rc.settings);
  latency_section(html, rc.results, false);
  latency_section(html, rc.results, true);
  operators_section(html, rc.results);
  quality_section(html, rc.results);
  json settings = rc.settings;
  for (const char* k : {"targets", "targets_not_judged", "ratios"}) settings.erase(k);
  html << "<h2>Settings</h2>\n";
  open_scroll(html);
  html << measure::detail::value_html(settings);
  close_scroll(html);
  html << "</body>\n</html>\n";
  return html.str();
}

std::string camera_result_key(const nlohmann::json& result) {
  if (result.value("kind", "") != "software" || result.contains("pipeline")) {
    return measure::string_fields_key(result, {"checked"});
  }
  // A software run recorded before results named their pipeline ran the unfused chain: a re-run
  // of it (pipeline "unfused") replaces it.
  nlohmann::json named = result;
  named["pipeline"] = "unfused";
  return measure::string_fields_key(named, {"checked"});
}

}  // namespace resident::bench
