// The soak's health lines read back (see soak_health.hpp). No GPU here.

#include "bench/soak/soak_health.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "resident/measure/plots.hpp"
#include "resident/measure/report.hpp"

namespace resident::bench {

using nlohmann::json;

namespace {

constexpr double gap_factor = 2.5;  // a gap: lines further apart than this many intervals
constexpr std::size_t listed = 5;   // spans listed by name in the text (the rest counted)

/// Throws "<path>:<line>: <what>".
[[noreturn]] void bad_line(const std::string& path, std::size_t line, const std::string& what) {
  throw std::invalid_argument(path + ":" + std::to_string(line) + ": " + what);
}

/// A whole number field `key` of `o`, named `name` in errors.
std::uint64_t whole(const json& o, const char* key, const std::string& name,
                    const std::string& path, std::size_t line) {
  if (!o.contains(key) || !o[key].is_number_unsigned()) {
    bad_line(path, line, "'" + name + "." + key + "' must be a whole number");
  }
  return o[key].get<std::uint64_t>();
}

/// A number field, or `fallback` when absent or null.
double number_or(const json& o, const char* key, double fallback) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return fallback;
  const double v = o[key].get<double>();
  return std::isfinite(v) ? v : fallback;
}

/// The loops of a line: each top-level object that holds counters.
std::vector<std::string> loops_of(const json& line) {
  std::vector<std::string> names;
  for (const auto& [key, value] : line.items()) {
    if (value.is_object() && value.contains("processed") && value.contains("last_seq")) {
      names.push_back(key);
    }
  }
  return names;
}

health_counters counters_of(const json& o, const std::string& name, const std::string& path,
                            std::size_t line) {
  health_counters c;
  c.processed = whole(o, "processed", name, path, line);
  c.dropped = whole(o, "dropped", name, path, line);
  c.unaccounted = whole(o, "unaccounted", name, path, line);
  c.last_seq = whole(o, "last_seq", name, path, line);
  c.deadline_misses =
      o.contains("deadline_misses") ? whole(o, "deadline_misses", name, path, line) : 0;
  c.max_response_us = number_or(o, "max_response_us", 0.0);
  return c;
}

/// The latest whole minutes a line reports, filed once per series and minute.
void add_minutes(const json& line, health_log& log) {
  if (!line.contains("latest_minute") || !line["latest_minute"].is_object()) return;
  for (const auto& [series, m] : line["latest_minute"].items()) {
    if (!m.is_object() || !m.contains("minute") || !m["minute"].is_number_integer()) continue;
    minute_summary s;
    s.minute = m["minute"].get<int>();
    s.n = m.contains("n") && m["n"].is_number_unsigned() ? m["n"].get<std::uint64_t>() : 0;
    s.p50_us = number_or(m, "p50_us", 0.0);
    s.p90_us = number_or(m, "p90_us", 0.0);
    s.p99_us = number_or(m, "p99_us", 0.0);
    s.p999_us = number_or(m, "p999_us", 0.0);
    s.max_us = number_or(m, "max_us", 0.0);
    s.tail_share = number_or(m, "tail_share", 0.0);
    log.minutes[series][s.minute] = s;
  }
}

/// One parsed line into a point of `log` (the first line names the loops).
void add_point(const json& line, health_log& log, std::size_t number) {
  const std::string& path = log.path;
  if (!line.is_object() || !line.contains("t_s") || !line["t_s"].is_number() ||
      !std::isfinite(line["t_s"].get<double>())) {
    bad_line(path, number, "not a health line (a JSON object with a number 't_s')");
  }
  health_point p;
  p.t_s = line["t_s"].get<double>();
  if (!log.points.empty() && !(p.t_s > log.points.back().t_s)) {
    bad_line(path, number, "'t_s' " + line["t_s"].dump() + " is not after the line before's");
  }
  const std::vector<std::string> names = loops_of(line);
  if (log.points.empty()) {
    log.loops = names;
  } else if (names != log.loops) {
    bad_line(path, number, "its loops differ from the first line's");
  }
  for (const auto& name : names) {
    health_counters c = counters_of(line[name], name, path, number);
    const std::string sensor = name + "_sensor";  // the loop's sensor thread, where it has one
    if (line.contains(sensor) && line[sensor].is_object() &&
        line[sensor].contains("late_releases")) {
      c.sensor_late =
          static_cast<std::int64_t>(whole(line[sensor], "late_releases", sensor, path, number));
    }
    p.loops.push_back(c);
  }
  p.rss_bytes = number_or(line, "rss_bytes", -1.0);
  p.free_device_bytes = number_or(line, "free_device_bytes", -1.0);
  if (line.contains("mailbox_checked")) {
    p.outputs_checked = whole(line, "mailbox_checked", "line", path, number);
    p.output_mismatches = whole(line, "mailbox_mismatches", "line", path, number);
  }
  if (line.contains("camera_screens") && line["camera_screens"].is_object()) {
    p.screens_checked = whole(line["camera_screens"], "checked", "camera_screens", path, number);
    p.screen_mismatches =
        whole(line["camera_screens"], "mismatches", "camera_screens", path, number);
  }
  if (line.contains("warmup_s") && line["warmup_s"].is_number()) {
    log.warmup_s = line["warmup_s"].get<double>();
  }
  add_minutes(line, log);
  log.points.push_back(std::move(p));
}

}  // namespace

bool is_health_log(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return false;
  const json line = json::parse(first, nullptr, false);
  return line.is_object() && line.contains("t_s");
}

health_log read_health_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot read");
  health_log log;
  log.path = path;
  std::string text;
  std::size_t number = 0;
  std::optional<std::pair<std::size_t, std::string>> unparsed;  // the last line that did not parse
  while (std::getline(in, text)) {
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (unparsed) bad_line(path, unparsed->first, "not valid JSON: " + unparsed->second);
    const json line = json::parse(text, nullptr, false);
    if (line.is_discarded()) {
      unparsed.emplace(number, text.size() > 40 ? text.substr(0, 37) + "..." : text);
      continue;
    }
    add_point(line, log, number);
  }
  // A line that did not parse is a writer killed mid-line only where it is the last one.
  log.torn_last_line = unparsed.has_value();
  if (log.points.empty()) throw std::invalid_argument(path + ": no complete health line");
  return log;
}

namespace {

/// Spans [from, to] of consecutive windows for which `in(i)` holds (window i: line i-1 to i).
template <class Pred>
json spans(const std::vector<health_point>& pts, Pred in) {
  json out = json::array();
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (!in(i)) continue;
    if (!out.empty() && out.back()["to_s"].get<double>() == pts[i - 1].t_s) {
      out.back()["to_s"] = pts[i].t_s;
    } else {
      out.push_back({{"from_s", pts[i - 1].t_s}, {"to_s", pts[i].t_s}});
    }
  }
  return out;
}

/// The median spacing of the lines (0 with one line).
double interval_of(const std::vector<health_point>& pts) {
  std::vector<double> d;
  for (std::size_t i = 1; i < pts.size(); ++i) d.push_back(pts[i].t_s - pts[i - 1].t_s);
  if (d.empty()) return 0;
  std::ranges::nth_element(d, d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2));
  return d[d.size() / 2];
}

/// Spans of windows in which loop `k` processed nothing, longer than ten of its mean sample
/// periods over the lines (so a loop slower than the lines, a 1 Hz camera watched every 0.5 s,
/// is not stalled between two frames); all of them where it processed nothing at all.
json stalls_of(const std::vector<health_point>& pts, std::size_t k) {
  const auto at = [&](std::size_t i) -> const health_counters& { return pts[i].loops[k]; };
  const json all =
      spans(pts, [&](std::size_t i) { return at(i).processed <= at(i - 1).processed; });
  const std::uint64_t first = at(0).processed;
  const std::uint64_t last = at(pts.size() - 1).processed;
  if (last <= first) return all;
  const double period = (pts.back().t_s - pts.front().t_s) / static_cast<double>(last - first);
  json out = json::array();
  for (const auto& s : all) {
    if (s["to_s"].get<double>() - s["from_s"].get<double>() > 10 * period) out.push_back(s);
  }
  return out;
}

/// One loop's part of the summary: its last counters and what the windows show.
json loop_summary(const health_log& log, std::size_t k) {
  const auto& pts = log.points;
  const auto at = [&](std::size_t i) -> const health_counters& { return pts[i].loops[k]; };
  const health_counters& last = at(pts.size() - 1);
  json unaccounted_at = nullptr;
  std::size_t unaccounted_lines = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (at(i).unaccounted == 0) continue;
    if (unaccounted_lines++ == 0) unaccounted_at = pts[i].t_s;
  }
  const json stalls = stalls_of(pts, k);
  const json back = spans(pts, [&](std::size_t i) {
    return at(i).processed < at(i - 1).processed || at(i).dropped < at(i - 1).dropped ||
           at(i).last_seq < at(i - 1).last_seq;
  });
  // Drop windows, largest first, each with whether the sensor thread was late in it.
  std::vector<std::pair<std::uint64_t, std::size_t>> drops;
  std::size_t late_drop_windows = 0;
  bool sensor = false;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (at(i).dropped <= at(i - 1).dropped) continue;
    drops.emplace_back(at(i).dropped - at(i - 1).dropped, i);
    if (at(i).sensor_late >= 0 && at(i - 1).sensor_late >= 0) {
      sensor = true;
      if (at(i).sensor_late > at(i - 1).sensor_late) ++late_drop_windows;
    }
  }
  std::ranges::sort(drops, std::greater<>());
  json largest = json::array();
  for (std::size_t j = 0; j < std::min(drops.size(), listed); ++j) {
    const std::size_t i = drops[j].second;
    largest.push_back(
        {{"from_s", pts[i - 1].t_s}, {"to_s", pts[i].t_s}, {"dropped", drops[j].first}});
  }
  json out = {{"processed", last.processed},
              {"dropped", last.dropped},
              {"unaccounted", last.unaccounted},
              {"deadline_misses", last.deadline_misses},
              {"max_response_us", last.max_response_us},
              {"unaccounted_lines", unaccounted_lines},
              {"first_unaccounted_s", unaccounted_at},
              {"stalls", stalls},
              {"went_back", back},
              {"drop_windows", drops.size()},
              {"windows", pts.size() - 1},
              {"largest_drops", largest}};
  if (sensor) out["drop_windows_with_late_sensor"] = late_drop_windows;
  return out;
}

/// Host RSS growth and free device memory moved from the first line at or after `warmup_s` to
/// the last; nulls where no line is past the warm-up or a line lacks the figure.
json memory_summary(const std::vector<health_point>& pts, double warmup_s) {
  const auto warm =
      std::ranges::find_if(pts, [&](const health_point& p) { return p.t_s >= warmup_s; });
  json out = {{"warmup_s", warmup_s},
              {"from_s", nullptr},
              {"rss_growth_bytes", nullptr},
              {"free_device_moved_bytes", nullptr}};
  if (warm == pts.end()) return out;
  const health_point& last = pts.back();
  out["from_s"] = warm->t_s;
  if (warm->rss_bytes >= 0 && last.rss_bytes >= 0) {
    out["rss_growth_bytes"] = static_cast<std::int64_t>(last.rss_bytes - warm->rss_bytes);
  }
  if (warm->free_device_bytes >= 0 && last.free_device_bytes >= 0) {
    out["free_device_moved_bytes"] =
        static_cast<std::int64_t>(warm->free_device_bytes - last.free_device_bytes);
  }
  return out;
}

/// Per latency series: the minutes the lines gave, their p99 range and drift as bench soak
/// judges it (minutes after the warm-up that the lines' span filled).
json latency_summary(const health_log& log, double warmup_s) {
  json out = json::object();
  for (const auto& [series, by_minute] : log.minutes) {
    std::vector<minute_summary> m;
    for (const auto& [minute, s] : by_minute) m.push_back(s);
    if (m.empty()) continue;
    double lo = m.front().p99_us;  // (no views here: clang 14 with libstdc++ 12, the fuzz build)
    double hi = lo;
    for (const auto& one : m) {
      lo = std::min(lo, one.p99_us);
      hi = std::max(hi, one.p99_us);
    }
    const auto drift = p99_drift(m, warmup_s, log.points.back().t_s);
    out[series] = {{"first_minute", m.front().minute},
                   {"last_minute", m.back().minute},
                   {"minutes", m.size()},
                   {"p99_min_us", lo},
                   {"p99_max_us", hi},
                   {"p99_drift", drift ? json(*drift) : json(nullptr)}};
  }
  return out;
}

json judgments_of(const json& s) {
  json j = json::array();
  bool accounted = true;
  bool progressed = true;
  bool monotonic = true;
  for (const auto& [name, loop] : s["loops"].items()) {
    accounted = accounted && loop["unaccounted_lines"].get<std::size_t>() == 0;
    progressed = progressed && loop["stalls"].empty();
    monotonic = monotonic && loop["went_back"].empty();
  }
  const auto& c = s["checks"];
  const std::uint64_t wrong =
      c["output_mismatches"].get<std::uint64_t>() + c["screen_mismatches"].get<std::uint64_t>();
  j.push_back(soak_judgment("every line accounts for every sample", accounted, accounted));
  j.push_back(soak_judgment("no wrong output and no screen mismatch", wrong == 0, wrong));
  j.push_back(
      soak_judgment("every loop processed samples in every window", progressed, progressed));
  j.push_back(soak_judgment("counters never went back", monotonic, monotonic));
  j.push_back(soak_judgment("no gap longer than 2.5 intervals between lines", s["gaps"].empty(),
                            s["gaps"].size()));
  const auto& m = s["memory"];
  if (m["rss_growth_bytes"].is_number()) {
    j.push_back(rss_growth_judgment(m["rss_growth_bytes"].get<std::int64_t>()));
  }
  if (m["free_device_moved_bytes"].is_number()) {
    j.push_back(device_memory_judgment(m["free_device_moved_bytes"].get<std::int64_t>()));
  }
  // The host's view of a loop ("<loop>_host": publish -> seen, host clock) adds the host
  // threads' wake-ups; bench soak reports its drift beside the loop's own and judges only that.
  for (const auto& [series, l] : s["latency"].items()) {
    if (!l["p99_drift"].is_number() || series.ends_with("_host")) continue;
    j.push_back(
        drift_judgment(series + " per-minute p99 drifts <= 5%", l["p99_drift"].get<double>()));
  }
  return j;
}

}  // namespace

json health_summary(const health_log& log, double warmup_s) {
  const auto& pts = log.points;
  const double warm = log.warmup_s.value_or(warmup_s);
  const double interval = interval_of(pts);
  json s = {{"path", log.path},
            {"lines", pts.size()},
            {"torn_last_line", log.torn_last_line},
            {"first_s", pts.front().t_s},
            {"last_s", pts.back().t_s},
            {"interval_s", interval}};
  s["gaps"] = interval > 0 ? spans(pts,
                                   [&](std::size_t i) {
                                     return pts[i].t_s - pts[i - 1].t_s > gap_factor * interval;
                                   })
                           : json::array();
  s["loops"] = json::object();
  for (std::size_t k = 0; k < log.loops.size(); ++k)
    s["loops"][log.loops[k]] = loop_summary(log, k);
  const health_point& last = pts.back();
  s["checks"] = {{"outputs_checked", last.outputs_checked},
                 {"output_mismatches", last.output_mismatches},
                 {"screens_checked", last.screens_checked},
                 {"screen_mismatches", last.screen_mismatches}};
  // The sensor threads' late releases so far, over the loops whose lines give them.
  std::int64_t late = -1;
  for (const health_counters& c : last.loops) {
    if (c.sensor_late >= 0) late = std::max<std::int64_t>(late, 0) + c.sensor_late;
  }
  if (late >= 0) s["sensor_late_releases"] = late;
  s["memory"] = memory_summary(pts, warm);
  s["latency"] = latency_summary(log, warm);
  s["judgments"] = judgments_of(s);
  return s;
}

namespace {

std::string seconds(double t) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << t;
  return o.str();
}

/// "a-b s, c-d s and 3 more" for a list of spans.
std::string span_list(const json& spans_json) {
  std::string out;
  for (std::size_t i = 0; i < std::min(spans_json.size(), listed); ++i) {
    if (i > 0) out += ", ";
    out += seconds(spans_json[i]["from_s"].get<double>()) + "-" +
           seconds(spans_json[i]["to_s"].get<double>()) + " s";
  }
  if (spans_json.size() > listed)
    out += " and " + std::to_string(spans_json.size() - listed) + " more";
  return out;
}

std::string bytes_text(std::int64_t b) {
  std::ostringstream o;
  o << std::setprecision(4);
  if (std::abs(b) < 1024) {
    o << b << " B";
  } else if (std::abs(b) < (1 << 20)) {
    o << static_cast<double>(b) / 1024 << " KiB";
  } else {
    o << static_cast<double>(b) / (1 << 20) << " MiB";
  }
  std::string text = b > 0 ? "+" : "";  // (not "+" + str: GCC 12 -Wrestrict)
  text += o.str();
  return text;
}

void loop_text(std::ostringstream& out, const std::string& name, const json& l) {
  out << name << ": processed " << l["processed"] << ", dropped " << l["dropped"]
      << ", unaccounted " << l["unaccounted"] << ", deadline misses " << l["deadline_misses"]
      << ", max response " << measure::detail::format_us(l["max_response_us"].get<double>())
      << " us\n";
  if (l["unaccounted_lines"].get<std::size_t>() > 0) {
    out << "  samples unaccounted in " << l["unaccounted_lines"] << " lines, first at "
        << seconds(l["first_unaccounted_s"].get<double>()) << " s\n";
  }
  if (!l["stalls"].empty()) out << "  processed nothing in " << span_list(l["stalls"]) << "\n";
  if (!l["went_back"].empty())
    out << "  counters went back in " << span_list(l["went_back"]) << "\n";
  out << "  drops in " << l["drop_windows"] << " of " << l["windows"] << " windows";
  if (!l["largest_drops"].empty()) {
    out << "; largest:";
    const char* sep = " ";
    for (const auto& d : l["largest_drops"]) {
      out << sep << d["dropped"] << " in " << seconds(d["from_s"].get<double>()) << "-"
          << seconds(d["to_s"].get<double>()) << " s";
      sep = ", ";
    }
  }
  if (l.contains("drop_windows_with_late_sensor")) {
    out << "; the sensor thread released late in " << l["drop_windows_with_late_sensor"]
        << " of the windows with drops";
  }
  out << "\n";
}

}  // namespace

std::string health_report_text(const health_log& log) {
  const json s = health_summary(log);
  std::ostringstream out;
  out << "health lines: " << log.path << ": " << s["lines"] << " lines, t "
      << seconds(s["first_s"].get<double>()) << "-" << seconds(s["last_s"].get<double>())
      << " s, one every " << seconds(s["interval_s"].get<double>()) << " s"
      << (log.torn_last_line ? "; the last line was cut short and is left out" : "") << "\n";
  if (!s["gaps"].empty()) out << "  no line in " << span_list(s["gaps"]) << "\n";
  for (const auto& [name, l] : s["loops"].items()) loop_text(out, name, l);
  const auto& c = s["checks"];
  out << "checks: " << c["outputs_checked"] << " outputs checked, " << c["output_mismatches"]
      << " wrong; " << c["screens_checked"] << " screens checked, " << c["screen_mismatches"]
      << " mismatches\n";
  const auto& m = s["memory"];
  if (m["from_s"].is_number()) {
    out << "memory after warm-up (from t " << seconds(m["from_s"].get<double>()) << " s): host RSS "
        << (m["rss_growth_bytes"].is_number()
                ? bytes_text(m["rss_growth_bytes"].get<std::int64_t>())
                : std::string("?"))
        << ", free device memory moved "
        << (m["free_device_moved_bytes"].is_number()
                ? bytes_text(m["free_device_moved_bytes"].get<std::int64_t>())
                : std::string("?"))
        << "\n";
  } else {
    out << "memory: no line after the " << seconds(m["warmup_s"].get<double>()) << " s warm-up\n";
  }
  for (const auto& [series, l] : s["latency"].items()) {
    out << "latest minutes' p99, " << series << ": "
        << measure::detail::format_us(l["p99_min_us"].get<double>()) << "-"
        << measure::detail::format_us(l["p99_max_us"].get<double>()) << " us over minutes "
        << l["first_minute"] << "-" << l["last_minute"];
    if (l["p99_drift"].is_number()) {
      out << ", drift " << std::setprecision(3) << 100 * l["p99_drift"].get<double>()
          << " % over the whole minutes after the warm-up";
    }
    out << "\n";
  }
  for (const auto& j : s["judgments"]) {
    out << (j["ok"].get<bool>() ? "  ok    " : "  MISS  ") << j["check"].get<std::string>() << " ("
        << j["value"].dump() << ")\n";
  }
  return out.str();
}

namespace {

/// A line chart of (x, y) points.
std::string line_chart(std::vector<double> x, std::vector<double> y, const std::string& title,
                       const std::string& x_label, const std::string& y_label, std::size_t color) {
  measure::series_plot plot;
  plot.title = title;
  plot.x_label = x_label;
  plot.y_label = y_label;
  plot.color = color;
  plot.buckets.t = std::move(x);
  plot.buckets.min = y;
  plot.buckets.mean = y;
  plot.buckets.max = std::move(y);
  return "<figure>" + measure::series_svg(plot) + "</figure>\n";
}

}  // namespace

std::string health_report_html(const health_log& log) {
  const std::string text = health_report_text(log);
  namespace d = measure::detail;
  const auto& pts = log.points;
  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>soak health</title><style>"
       << d::page_css << measure::plot_css << "</style></head><body>\n<h1>soak health lines</h1>\n"
       << "<p><code>" << d::html_escape(log.path) << "</code></p>\n";
  for (std::size_t k = 0; k < log.loops.size(); ++k) {
    std::vector<double> t;
    std::vector<double> rate;
    std::vector<double> dropped;
    for (std::size_t i = 1; i < pts.size(); ++i) {
      const double dt = pts[i].t_s - pts[i - 1].t_s;
      t.push_back(pts[i].t_s);
      rate.push_back(
          static_cast<double>(pts[i].loops[k].processed -
                              std::min(pts[i].loops[k].processed, pts[i - 1].loops[k].processed)) /
          dt);
      dropped.push_back(
          static_cast<double>(pts[i].loops[k].dropped -
                              std::min(pts[i].loops[k].dropped, pts[i - 1].loops[k].dropped)));
    }
    if (t.empty()) continue;
    html << line_chart(t, rate, log.loops[k] + ": samples processed per second", "time (s)",
                       "samples/s", k)
         << line_chart(std::move(t), std::move(dropped),
                       log.loops[k] + ": samples dropped per window", "time (s)", "dropped", k);
  }
  std::vector<double> t;
  std::vector<double> rss;
  std::vector<double> t_free;
  std::vector<double> free;
  for (const auto& p : pts) {
    if (p.rss_bytes >= 0) {
      t.push_back(p.t_s);
      rss.push_back(p.rss_bytes / (1 << 20));
    }
    if (p.free_device_bytes >= 0) {
      t_free.push_back(p.t_s);
      free.push_back(p.free_device_bytes / (1 << 20));
    }
  }
  if (!t.empty())
    html << line_chart(std::move(t), std::move(rss), "host RSS", "time (s)", "MiB", 2);
  if (!t_free.empty()) {
    html << line_chart(std::move(t_free), std::move(free), "free device memory", "time (s)", "MiB",
                       3);
  }
  std::size_t color = 0;
  for (const auto& [series, by_minute] : log.minutes) {
    std::vector<double> minute;
    std::vector<double> p99;
    for (const auto& [m, s] : by_minute) {
      minute.push_back(m);
      p99.push_back(s.p99_us);
    }
    html << line_chart(std::move(minute), std::move(p99), series + ": p99 of each whole minute",
                       "minute of the run", "latency (\xC2\xB5s)", color++);
  }
  html << "<h2>Summary</h2>\n<pre>" << d::html_escape(text) << "</pre>\n</body></html>\n";
  return html.str();
}

}  // namespace resident::bench
