// The soak receipt as text and as an HTML page: bench soak's closing table and what
// `resident report` prints and draws for a soak receipt (see soak_bench.hpp). No GPU here.

#include <algorithm>
#include <iomanip>
#include <map>
#include <ranges>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/soak/soak_bench.hpp"
#include "resident/measure/plots.hpp"
#include "resident/measure/report.hpp"

namespace resident::bench {

using nlohmann::json;

namespace {

/// "p50 a-b, p99 c-d us, tail share e-f %" over a pipeline's judged minutes ("" with none).
std::string judged_minutes_line(const json& minutes) {
  std::vector<const json*> judged;
  for (const auto& m : minutes) {
    if (m.value("judged", false)) judged.push_back(&m);
  }
  if (judged.empty()) return {};
  // A field some minute lacks (a receipt from before it was recorded) gives "?".
  const auto range = [&](const char* key, double scale) -> std::string {
    const auto has = [&](const json* m) { return m->contains(key) && (*m)[key].is_number(); };
    if (!std::ranges::all_of(judged, has)) return "?";
    const auto [lo, hi] = std::ranges::minmax(
        judged | std::views::transform([&](const json* m) { return m->at(key).get<double>(); }));
    std::ostringstream r;
    r << std::setprecision(4) << lo * scale << "-" << hi * scale;
    return r.str();
  };
  return "  judged minutes: p50 " + range("p50_us", 1) + ", p99 " + range("p99_us", 1) +
         " us, tail share (> 1.5 x p50) " + range("tail_share", 100) + " %\n";
}

/// "slow samples (> X us): N; beside a camera frame's work a %, its landing b % (fast ...)".
std::string census_line(const json& c) {
  std::ostringstream r;
  r << std::setprecision(3) << "  slow samples (> " << c.value("slow_above_us", 0.0)
    << " us): " << c.value("slow", 0) << "; during a camera frame's work "
    << 100 * c.value("slow_in_work_share", 0.0) << " %, its landing "
    << 100 * c.value("slow_in_landing_share", 0.0)
    << " % (fast samples: " << 100 * c.value("fast_in_work_share", 0.0) << " %, "
    << 100 * c.value("fast_in_landing_share", 0.0) << " %)\n";
  if (c.contains("gap_to_next_arrival")) {
    // The share of each group that ended less than 200 us before a frame's arrival stamp.
    const auto near = [&](const char* group) {
      const auto& counts = c["gap_to_next_arrival"][group];
      const auto& edges = c["gap_to_next_arrival"]["edges_us"];
      std::uint64_t all = 0;
      std::uint64_t within = 0;
      for (std::size_t i = 0; i < counts.size(); ++i) {
        const auto k = counts[i].get<std::uint64_t>();
        all += k;
        if (i < edges.size() && edges[i].get<double>() <= 200) within += k;
      }
      return all == 0 ? 0.0 : 100.0 * static_cast<double>(within) / static_cast<double>(all);
    };
    r << "  ended < 200 us before a frame's arrival: slow " << near("slow") << " %, fast "
      << near("fast") << " %\n";
  }
  return r.str();
}

/// "sensor thread: N releases more than X us late (worst Y us)".
std::string sensor_line(const json& s) {
  std::ostringstream r;
  r << std::setprecision(4) << "  sensor thread: " << s.value("late_releases", 0)
    << " releases more than " << s.value("late_over_us", 0.0) << " us late (worst "
    << s.value("max_late_us", 0.0) << " us)\n";
  return r.str();
}

}  // namespace

std::string soak_table(const measure::receipt& receipt) {
  std::ostringstream out;
  for (const auto& r : receipt.results) {
    if (r.contains("pipeline")) {
      const auto& c = r["counters"];
      out << r["pipeline"].get<std::string>() << " (" << r["mode"].get<std::string>()
          << "): processed " << c["processed"] << ", dropped " << c["dropped"] << ", unaccounted "
          << c["unaccounted"] << ", deadline misses " << c["deadline_misses"] << ", p99 drift ";
      if (r["p99_drift"].is_number()) {
        out << r["p99_drift"].get<double>() * 100 << "%";
      } else {
        out << "not judged";
      }
      if (r.contains("host_p99_drift") && r["host_p99_drift"].is_number()) {
        out << " (host view " << r["host_p99_drift"].get<double>() * 100 << "%)";
      }
      out << "\n";
      if (r.contains("minutes")) out << judged_minutes_line(r["minutes"]);
      if (r.contains("beside_camera")) out << census_line(r["beside_camera"]);
      if (r.contains("sensor")) out << sensor_line(r["sensor"]);
    }
    if (r.contains("judgments")) {
      for (const auto& j : r["judgments"]) {
        out << (j["ok"].get<bool>() ? "  ok    " : "  MISS  ") << j["check"].get<std::string>()
            << " (" << j["value"].dump() << ")\n";
      }
    }
  }
  return out.str();
}

namespace {

/// The minutes of one pipeline's series by minute number ("minutes" or "host_minutes").
std::map<int, json> minutes_by_number(const json& result, const char* key) {
  std::map<int, json> out;
  if (!result.contains(key) || !result[key].is_array()) return out;
  for (const auto& m : result[key]) out[m.value("minute", -1)] = m;
  return out;
}

/// One number of a minute, or "-" where that minute or field is missing.
std::string minute_field(const std::map<int, json>& minutes, int minute, const char* key,
                         double scale = 1.0) {
  const auto it = minutes.find(minute);
  if (it == minutes.end() || !it->second.contains(key) || !it->second[key].is_number()) return "-";
  return measure::detail::format_us(it->second[key].get<double>() * scale);
}

}  // namespace

namespace {

/// Throws std::invalid_argument "<where>: '<key>' must be <what>" unless `ok`.
void require(bool ok, const std::string& where, const char* key, const char* what) {
  if (!ok) throw std::invalid_argument(where + ": '" + key + "' must be " + what);
}

/// A present field of `o` must be a number (or null where `null_ok`).
void optional_number(const json& o, const char* key, const std::string& where,
                     bool null_ok = false) {
  if (!o.contains(key)) return;
  require(o[key].is_number() || (null_ok && o[key].is_null()), where, key,
          null_ok ? "a number or null" : "a number");
}

void check_numbers_array(const json& o, const char* key, const std::string& where) {
  require(o.contains(key) && o[key].is_array() &&
              std::ranges::all_of(o[key], [](const json& v) { return v.is_number(); }),
          where, key, "an array of numbers");
}

void check_minutes(const json& r, const char* key, const std::string& where) {
  if (!r.contains(key)) return;
  require(r[key].is_array(), where, key, "an array of minutes");
  for (const auto& m : r[key]) {
    const std::string at = where + ": " + key + "[]";
    require(m.is_object() && m.contains("minute") && m["minute"].is_number_integer(), at, "minute",
            "a whole number in an object");
    if (m.contains("judged")) require(m["judged"].is_boolean(), at, "judged", "true or false");
    for (const char* f : {"n", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "tail_share"}) {
      optional_number(m, f, at);
    }
  }
}

void check_census(const json& r, const std::string& where) {
  if (!r.contains("beside_camera")) return;
  const json& c = r["beside_camera"];
  require(c.is_object(), where, "beside_camera", "an object");
  const std::string at = where + ": beside_camera";
  for (const auto& [key, value] : c.items()) {
    if (key != "what" && key != "gap_to_next_arrival") optional_number(c, key.c_str(), at);
  }
  if (!c.contains("gap_to_next_arrival")) return;
  const json& g = c["gap_to_next_arrival"];
  require(g.is_object(), at, "gap_to_next_arrival", "an object");
  for (const char* f : {"edges_us", "slow", "fast"})
    check_numbers_array(g, f, at + ".gap_to_next_arrival");
}

/// Every field the soak's text reads, with the type it reads it as: a receipt that is not what
/// bench soak writes is refused by name instead of read as something else.
void check_soak_receipt(const measure::receipt& receipt) {
  for (std::size_t i = 0; i < receipt.results.size(); ++i) {
    const json& r = receipt.results[i];
    const std::string where = "soak receipt: result #" + std::to_string(i + 1);
    require(r.is_object(), where, "result", "an object");
    if (r.contains("pipeline")) {
      require(r["pipeline"].is_string(), where, "pipeline", "a string");
      for (const char* f : {"latency", "host_latency"}) {
        if (r.contains(f)) require(r[f].is_string(), where, f, "a string");
      }
      require(r.contains("mode") && r["mode"].is_string(), where, "mode", "a string");
      require(r.contains("counters") && r["counters"].is_object(), where, "counters", "an object");
      for (const char* f : {"processed", "dropped", "unaccounted", "deadline_misses"}) {
        require(r["counters"].contains(f) && r["counters"][f].is_number(), where + ": counters", f,
                "a number");
      }
      require(r.contains("p99_drift"), where, "p99_drift", "present (a number or null)");
      optional_number(r, "p99_drift", where, true);
      optional_number(r, "host_p99_drift", where, true);
      check_minutes(r, "minutes", where);
      check_minutes(r, "host_minutes", where);
      check_census(r, where);
      if (r.contains("sensor")) {
        require(r["sensor"].is_object(), where, "sensor", "an object");
        for (const char* f : {"late_over_us", "late_releases", "max_late_us"}) {
          optional_number(r["sensor"], f, where + ": sensor");
        }
      }
    }
    if (r.contains("judgments")) {
      require(r["judgments"].is_array(), where, "judgments", "an array");
      for (const auto& j : r["judgments"]) {
        require(j.is_object() && j.contains("ok") && j["ok"].is_boolean(), where + ": judgments[]",
                "ok", "true or false in an object");
        require(j.contains("check") && j["check"].is_string(), where + ": judgments[]", "check",
                "a string");
        require(j.contains("value"), where + ": judgments[]", "value", "present");
      }
    }
  }
}

}  // namespace

std::string soak_report_text(const measure::receipt& receipt) {
  check_soak_receipt(receipt);
  std::ostringstream out;
  out << "soak: git " << receipt.git_commit << ", started " << receipt.started_at << ", "
      << (receipt.device.name.empty() ? std::string("unknown device") : receipt.device.name)
      << "\n  command: " << receipt.command << "\n"
      << soak_table(receipt);
  std::map<int, json> mailbox;
  std::map<int, json> host;
  std::map<int, json> camera;
  for (const auto& r : receipt.results) {
    const std::string pipeline = r.value("pipeline", std::string());
    if (pipeline == "mailbox") {
      mailbox = minutes_by_number(r, "minutes");
      host = minutes_by_number(r, "host_minutes");
    } else if (pipeline == "camera") {
      camera = minutes_by_number(r, "minutes");
    }
  }
  std::set<int> numbers;
  for (const auto* series : {&mailbox, &host, &camera}) {
    for (const auto& [minute, m] : *series) numbers.insert(minute);
  }
  if (numbers.empty()) return out.str();
  out << "\nper minute (us; judged: counted for drift)\n";
  using measure::detail::printf_string;
  out << printf_string("%6s %6s %8s %8s %8s %8s %8s %8s %7s %9s %8s %8s %8s\n", "minute", "judged",
                       "mbox n", "p50", "p90", "p99", "p99.9", "max", "tail%", "host p99",
                       "cam p50", "cam p99", "cam max");
  for (const int minute : numbers) {
    const auto it = mailbox.find(minute);
    const auto cam = camera.find(minute);
    const bool judged = it != mailbox.end()   ? it->second.value("judged", false)
                        : cam != camera.end() ? cam->second.value("judged", false)
                                              : false;
    const std::string n = it == mailbox.end() ? "-" : std::to_string(it->second.value("n", 0));
    out << printf_string("%6d %6s %8s %8s %8s %8s %8s %8s %7s %9s %8s %8s %8s\n", minute,
                         judged ? "yes" : "no", n.c_str(),
                         minute_field(mailbox, minute, "p50_us").c_str(),
                         minute_field(mailbox, minute, "p90_us").c_str(),
                         minute_field(mailbox, minute, "p99_us").c_str(),
                         minute_field(mailbox, minute, "p999_us").c_str(),
                         minute_field(mailbox, minute, "max_us").c_str(),
                         minute_field(mailbox, minute, "tail_share", 100).c_str(),
                         minute_field(host, minute, "p99_us").c_str(),
                         minute_field(camera, minute, "p50_us").c_str(),
                         minute_field(camera, minute, "p99_us").c_str(),
                         minute_field(camera, minute, "max_us").c_str());
  }
  return out.str();
}

namespace {

/// One series' minutes as a chart: x the minute, a band from p50 to p99.9 (to p99 where the
/// receipt has no p99.9: a max would squash the rest against the axis) and a line through p99.
std::string minutes_chart(const json& minutes, const std::string& title) {
  measure::time_buckets b;
  for (const auto& m : minutes) {
    if (!m.contains("p50_us") || !m.contains("p99_us")) continue;
    b.t.push_back(m["minute"].get<double>());
    b.min.push_back(m["p50_us"].get<double>());
    b.mean.push_back(m["p99_us"].get<double>());
    b.max.push_back(m.contains("p999_us") ? m["p999_us"].get<double>() : m["p99_us"].get<double>());
  }
  measure::series_plot plot;
  plot.title = title;
  plot.x_label = "minute of the run";
  plot.buckets = std::move(b);
  return "<figure>" + measure::series_svg(plot) + "</figure>\n";
}

}  // namespace

std::string soak_report_html(const measure::receipt& receipt) {
  const std::string text = soak_report_text(receipt);  // checks the receipt's shape first
  namespace d = measure::detail;
  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>soak</title><style>"
       << d::page_css << measure::plot_css
       << "</style></head><body>\n<h1>resident bench soak</h1>\n"
       << "<table class=\"meta\"><tr><th>commit</th><td><code>"
       << d::html_escape(receipt.git_commit) << "</code></td></tr><tr><th>started</th><td>"
       << d::html_escape(receipt.started_at) << "</td></tr><tr><th>device</th><td>"
       << d::html_escape(receipt.device.name) << "</td></tr><tr><th>command</th><td><code>"
       << d::html_escape(receipt.command)
       << "</code></td></tr></table>\n<h2>Latency per minute</h2>\n"
       << "<p class=\"legend\">Each minute: the band runs from p50 to p99.9 (to p99 where "
          "the receipt has no p99.9), the line through p99. Drift is judged on the p99s of the "
          "judged minutes.</p>\n";
  for (const auto& r : receipt.results) {
    if (!r.contains("pipeline")) continue;
    const std::string name = r["pipeline"].get<std::string>();
    if (r.contains("minutes")) {
      html << minutes_chart(r["minutes"], name + ": " + r.value("latency", std::string("latency")));
    }
    if (r.contains("host_minutes")) {
      html << minutes_chart(r["host_minutes"],
                            name + ": " + r.value("host_latency", std::string("host view")));
    }
  }
  html << "<h2>Counters, judgments and minutes</h2>\n<pre>" << d::html_escape(text)
       << "</pre>\n</body></html>\n";
  return html.str();
}

}  // namespace resident::bench
