// resident bench camera: settings, configurations, results, targets and the run (see
// camera_bench.hpp).

#include "bench/camera/camera_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/camera/camera_operators.hpp"
#include "bench/camera/camera_stages.hpp"
#include "bench/common.hpp"
#include "resident/cuda/device.hpp"
#include "resident/imaging/png.hpp"
#include "resident/measure/contention.hpp"
#include "resident/measure/plots.hpp"
#include "resident/measure/threads.hpp"

namespace resident::bench {

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::vector<std::string> known_parts{"software", "photon", "operators", "demosaic",
                                           "statistics"};
const std::vector<std::string> known_resolutions{"1080p", "4k"};
const std::vector<std::string> known_formats{"raw10", "raw12"};
const std::vector<std::string> known_levels{"none", "stress"};
const std::vector<std::string> known_displays{"vrr240-flip", "vrr240-front", "fixed60-flip"};
const std::vector<std::string> known_pipelines{"unfused", "fused", "fused-tiles"};

constexpr std::size_t series_buckets = 200;
constexpr std::size_t software_bins = 60;
constexpr std::size_t photon_bins = 30;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

void check_list(const std::string& flag, const std::vector<std::string>& given,
                const std::vector<std::string>& known, const std::string& what) {
  if (given.empty()) throw std::invalid_argument(flag + ": name at least one " + what);
  std::set<std::string> seen;
  for (const auto& g : given) {
    if (std::find(known.begin(), known.end(), g) == known.end()) {
      throw std::invalid_argument(flag + ": unknown " + what + " '" + g +
                                  "'; known: " + joined(known));
    }
    if (!seen.insert(g).second) throw std::invalid_argument(flag + ": '" + g + "' given twice");
  }
}

bool gpu_resident(const std::string& mode) {
  return is_resident(camera::parse_camera_mode(mode).mode);
}

std::pair<std::uint32_t, std::uint32_t> frame_size(const std::string& resolution) {
  return resolution == "4k" ? std::pair{3840U, 2160U} : std::pair{1920U, 1080U};
}

io::csi2::raw_format raw_format_of(const std::string& format) {
  return format == "raw10" ? io::csi2::raw_format::raw10 : io::csi2::raw_format::raw12;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/// Each statistic's median over the runs (the runs' own statistics stay in the result).
measure::summary median_summary(const std::vector<measure::summary>& runs) {
  const auto of = [&](double measure::summary::*field) {
    std::vector<double> v;
    for (const auto& s : runs) v.push_back(s.*field);
    return median(std::move(v));
  };
  measure::summary m;
  std::vector<double> n;
  for (const auto& s : runs) n.push_back(static_cast<double>(s.n));
  m.n = static_cast<std::size_t>(median(std::move(n)));
  for (auto field :
       {&measure::summary::mean, &measure::summary::p50, &measure::summary::p99,
        &measure::summary::p999, &measure::summary::max, &measure::summary::min,
        &measure::summary::stddev, &measure::summary::jitter, &measure::summary::p25,
        &measure::summary::p75, &measure::summary::whisker_low, &measure::summary::whisker_high}) {
    m.*field = of(field);
  }
  return m;
}

}  // namespace

// ---- settings and configurations ---------------------------------------------------------------

void camera_bench_settings::make_quick() {
  frames = 1000;
  warmup = 100;
  resolutions = {"1080p", "4k"};
  formats = {"raw12"};
  contention = {"none"};
  photon_seconds = 3.0;
  repeats = 1;
}

void camera_bench_settings::validate() const {
  check_list("--parts", parts, known_parts, "part");
  check_list("--resolutions", resolutions, known_resolutions, "resolution");
  check_list("--formats", formats, known_formats, "format");
  check_list("--contention", contention, known_levels, "contention level");
  check_list("--displays", displays, known_displays, "display");
  check_list("--pipelines", pipelines, known_pipelines, "pipeline");
  if (modes.empty()) throw std::invalid_argument("--modes: name at least one mode");
  std::set<std::string> seen;
  for (const auto& m : modes) {
    try {
      (void)camera::parse_camera_mode(m);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("--modes: ") + e.what());
    }
    if (!seen.insert(m).second) throw std::invalid_argument("--modes: '" + m + "' given twice");
  }
  if (!(rate_hz > 0.0) || rate_hz > 100'000.0) {
    throw std::invalid_argument("--rate must be in (0, 100000] Hz, got " + std::to_string(rate_hz));
  }
  if (frames < 1) throw std::invalid_argument("--frames must be at least 1");
  if (warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (repeats < 1 || repeats > 15) {
    throw std::invalid_argument("--repeats must be in 1..15, got " + std::to_string(repeats));
  }
  if (!(photon_seconds >= 1.0) || photon_seconds > 3600.0) {
    throw std::invalid_argument("--photon-seconds must be in [1, 3600], got " +
                                std::to_string(photon_seconds));
  }
  if (operator_reps < 1) throw std::invalid_argument("--operator-reps must be at least 1");
  if (operator_warmup < 0) throw std::invalid_argument("--operator-warmup must be >= 0");
  if (photos < 1) throw std::invalid_argument("--photos must be at least 1");
  if (sensor_cpu < -1 || loop_cpu < -1) throw std::invalid_argument("a cpu must be >= -1");
  if (sensor_cpu >= 0 && sensor_cpu == loop_cpu) {
    throw std::invalid_argument("--sensor-cpu and --loop-cpu must differ, both are " +
                                std::to_string(sensor_cpu));
  }
}

bool camera_bench_settings::has_part(const std::string& part) const {
  return std::find(parts.begin(), parts.end(), part) != parts.end();
}

bool camera_bench_settings::needs_gpu() const {
  return std::any_of(parts.begin(), parts.end(),
                     [](const std::string& p) { return p != "statistics"; });
}

std::string camera_case::workload() const {
  if (part == "photon") return "photon " + display;
  return resolution + " " + format + (pipeline == "unfused" ? "" : " " + pipeline);
}

bool camera_case::judged_on_median() const {
  if (!gpu_resident(mode)) return false;
  if (part == "software") return resolution == "1080p" && format == "raw12";
  return part == "photon" && display == "vrr240-flip";
}

std::vector<camera_case> software_cases(const camera_bench_settings& s,
                                        const std::string& contention) {
  std::vector<camera_case> out;
  for (const auto& r : s.resolutions) {
    for (const auto& f : s.formats) {
      for (const auto& p : s.pipelines) {
        for (const auto& m : s.modes) {
          // cpu-hostmem is the CPU-driven baseline of the unfused chain.
          if (p != "unfused" && m == "cpu-hostmem") continue;
          camera_case c{"software", r, f, contention, m, "vrr240-flip", 1, p};
          c.runs = c.judged_on_median() ? s.repeats : 1;
          out.push_back(std::move(c));
        }
      }
    }
  }
  return out;
}

std::vector<camera_case> photon_cases(const camera_bench_settings& s,
                                      const std::string& contention) {
  std::vector<camera_case> out;
  for (const auto& d : s.displays) {
    if (d == "fixed60-flip" && contention != "none") continue;  // quantization: quiet suffices
    for (const auto& m : s.modes) {
      if (d == "vrr240-front" && !gpu_resident(m)) continue;
      camera_case c{"photon", "1080p", "raw12", contention, m, d, 1};
      c.runs = c.judged_on_median() ? s.repeats : 1;
      out.push_back(std::move(c));
    }
  }
  return out;
}

double sensor_rate(const camera_case& c, const camera_bench_settings& s) {
  return c.part == "photon" ? camera_photon_rate_hz : s.rate_hz;
}

camera::camera_settings camera_settings_for(const camera_case& c, const camera_bench_settings& s) {
  camera::camera_settings cs;
  const auto [w, h] = frame_size(c.resolution);
  auto& k = cs.sensor;
  k.width = w;
  k.height = h;
  k.format = raw_format_of(c.format);
  k.order = io::bayer_order::rggb;
  k.rate_hz = sensor_rate(c, s);
  k.ring_slots = 4;
  // 256 at 12 bits, the same share of the range at 10.
  k.black_level = static_cast<std::uint16_t>(256U >> (12U - static_cast<unsigned>(k.format)));
  if (c.part == "photon") k.distinct_frames = camera_photon_distinct_frames;
  cs.photo = s.photo;
  cs.isp = c.pipeline == "unfused" ? "unfused" : "fused";
  cs.isp_grid = c.pipeline == "fused-tiles" ? "tiles" : "resident";
  cs.statistics = "previous-frame";
  cs.demosaic = "malvar";
  cs.white_balance = "grey_world";
  cs.gamma = 2.2;
  auto& d = cs.display;
  d.refresh_hz = c.display == "fixed60-flip" ? 60.0 : 240.0;
  d.sync = c.display == "fixed60-flip" ? io::display_sync::fixed : io::display_sync::variable;
  d.mode = c.display == "vrr240-front" ? io::present_mode::front_buffer : io::present_mode::flip;
  return cs;
}

// ---- results ---------------------------------------------------------------------------------

camera_run measured_run(const camera::camera_result& r, const camera_case& c, std::size_t warmup,
                        double rate_hz, std::uint64_t requested) {
  camera_run run;
  const bool photon = c.part == "photon";
  const auto& us = photon ? r.photon_us : r.software_us;
  const auto& frames = photon ? r.photon_frames : r.software_frames;
  const std::uint64_t first = r.counters.start_seq + 1;
  for (std::size_t i = warmup; i < us.size(); ++i) {
    run.us.push_back(us[i]);
    const std::uint64_t f = i < frames.size() ? frames[i] : first;
    run.t_s.push_back(static_cast<double>(f > first ? f - first : 0) / rate_hz);
  }
  const auto& k = r.counters;
  run.requested = requested;
  run.produced = r.produced;
  run.processed = k.processed;
  run.counters = k;
  run.dropped = k.dropped;
  run.repeated = k.repeated;
  run.corrupt = r.display.corrupt_frames;
  run.rewritten = r.display.rewritten_frames;
  run.written = r.display.frames_written;
  run.displayed = r.displayed;
  run.marked = r.marked_frames;
  run.late_sensor_frames = r.late_sensor_frames;
  run.error = r.error;
  const auto add_error = [&](const std::string& e) {
    run.error += (run.error.empty() ? "" : "; ") + e;
  };
  if (k.processed + k.dropped != k.last_seq - k.start_seq) {
    add_error("frame accounting does not add up: " + std::to_string(k.processed) + " processed + " +
              std::to_string(k.dropped) + " dropped of " +
              std::to_string(k.last_seq - k.start_seq) + " frames");
  }
  if (r.display.frames_written + r.display.corrupt_frames != k.processed) {
    add_error(std::to_string(k.processed) + " frames processed but " +
              std::to_string(r.display.frames_written) + " written and " +
              std::to_string(r.display.corrupt_frames) + " refused by the egress");
  }
  if (run.us.empty()) add_error("no latency samples after the warm-up");
  if (!r.sensor_grant.policy.empty()) run.threads["sensor"] = measure::to_json(r.sensor_grant);
  if (!photon && warmup < r.software_frames.size()) {
    run.stages = stage_breakdown(r.stages, r.software_frames[warmup]);
  }
  return run;
}

namespace {

json run_entry(std::size_t index, const camera_run& r) {
  json e = {
      {"run", index + 1},
      {"n", r.us.size()},
      {"requested_samples", r.requested},
      {"produced", r.produced},
      {"processed", r.processed},
      {"dropped", r.dropped},
      {"repeated", r.repeated},
      {"deadline_misses", r.counters.deadline_misses},
      {"max_response_us", static_cast<double>(r.counters.max_response_ns) / 1e3},
      {"max_arrival_response_us", static_cast<double>(r.counters.max_arrival_response_ns) / 1e3},
      {"corrupt", r.corrupt},
      {"rewritten", r.rewritten},
      {"written", r.written},
      {"displayed", r.displayed},
      {"marked", r.marked},
      {"late_sensor_frames", r.late_sensor_frames},
      {"threads", r.threads}};
  if (!r.us.empty()) e.update(measure::summary_fields(measure::summarize(r.us)));
  if (!r.error.empty()) e["error"] = r.error;
  if (!r.stages.is_null()) e["stages"] = r.stages;
  return e;
}

/// Plot data to the nanosecond: a receipt carries it for every configuration.
json rounded(const json& j) {
  if (j.is_number_float()) return std::round(j.get<double>() * 1000.0) / 1000.0;
  if (!j.is_structured()) return j;
  json out = j;
  for (auto& v : out) v = rounded(v);
  return out;
}

/// The run whose jitter is the median (the lower one of an even count): the one plotted.
std::size_t median_jitter_run(const std::vector<camera_run>& runs) {
  std::vector<std::pair<double, std::size_t>> j;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].us.empty()) continue;
    const auto [lo, hi] = std::minmax_element(runs[i].us.begin(), runs[i].us.end());
    j.emplace_back(*hi - *lo, i);
  }
  if (j.empty()) return 0;
  std::sort(j.begin(), j.end());
  return j[(j.size() - 1) / 2].second;
}

/// p99 - p50 of the aggregate, and the median over the runs of the J over spaced frames (those
/// that arrived more than one pipeline latency after the frame before: camera_stages.hpp) and
/// over idle frames (those that landed after every earlier frame's commit), each when every run
/// with samples has one.
void add_spread_fields(json& result, const std::vector<camera_run>& runs,
                       std::size_t with_samples) {
  if (result.contains("p99_us") && result.contains("p50_us")) {
    result["p99_minus_p50_us"] = result["p99_us"].get<double>() - result["p50_us"].get<double>();
  }
  for (const char* kind : {"spaced", "idle"}) {
    std::vector<double> j;
    for (const auto& r : runs) {
      if (r.stages.is_object() && r.stages.value(kind, json()).is_object()) {
        j.push_back(r.stages[kind]["jitter_us"].get<double>());
      }
    }
    if (!j.empty() && j.size() == with_samples) {
      result[std::string(kind) + "_jitter_us"] = median(std::move(j));
    }
  }
}

}  // namespace

json case_result(const camera_case& c, const std::vector<camera_run>& runs) {
  std::vector<measure::summary> sums;
  json entries = json::array();
  json errors = json::array();
  std::map<std::string, std::uint64_t> total;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const camera_run& r = runs[i];
    if (!r.us.empty()) sums.push_back(measure::summarize(r.us));
    entries.push_back(run_entry(i, r));
    if (!r.error.empty()) errors.push_back("run " + std::to_string(i + 1) + ": " + r.error);
    total["produced"] += r.produced;
    total["processed"] += r.processed;
    total["dropped"] += r.dropped;
    total["repeated"] += r.repeated;
    total["corrupt"] += r.corrupt;
    total["rewritten"] += r.rewritten;
    total["written"] += r.written;
    total["displayed"] += r.displayed;
    total["marked"] += r.marked;
    total["late_sensor_frames"] += r.late_sensor_frames;
  }
  json result;
  if (!sums.empty()) {
    result = measure::latency_result(c.mode, c.workload(), c.contention, median_summary(sums),
                                     total["processed"], total["dropped"], total["repeated"]);
  } else {
    result = {{"mode", c.mode}, {"workload", c.workload()}, {"contention", c.contention}};
  }
  for (const auto& [key, value] : total) result[key] = value;
  add_spread_fields(result, runs, sums.size());
  const auto [w, h] = frame_size(c.resolution);
  result["kind"] = c.part;
  result["resolution"] = c.resolution;
  result["format"] = c.format;
  result["display"] = c.display;
  result["pipeline"] = c.pipeline;
  result["width"] = w;
  result["height"] = h;
  result["aggregate"] = runs.size() == 1
                            ? "one run"
                            : "each statistic the median over " + std::to_string(sums.size()) +
                                  " runs with samples (every run under runs)";
  result["runs"] = entries;
  result["errors"] = errors;
  if (sums.empty()) return result;
  const std::size_t plotted = median_jitter_run(runs);
  const camera_run& p = runs[plotted];
  result["plotted_run"] = plotted + 1;
  if (c.part == "photon") {
    result["points"] = rounded({{"t", p.t_s}, {"us", p.us}});
    result["histogram"] = measure::to_json(measure::make_histogram(p.us, photon_bins));
  } else {
    result["series"] =
        rounded(measure::to_json(measure::bucket_series(p.t_s, p.us, series_buckets)));
    result["histogram"] = measure::to_json(measure::make_histogram(p.us, software_bins));
  }
  return result;
}

// ---- targets -----------------------------------------------------------------------------------

namespace {

const json* find_result(const json& results, const std::string& kind, const std::string& workload,
                        const std::string& contention, const std::string& mode) {
  for (const auto& r : results) {
    if (r.value("kind", "") == kind && r.value("workload", "") == workload &&
        r.value("contention", "") == contention && r.value("mode", "") == mode) {
      return &r;
    }
  }
  return nullptr;
}

const json* find_operator(const json& results, const std::string& name,
                          const std::string& resolution) {
  for (const auto& r : results) {
    if (r.value("kind", "") == "operator" && r.value("operator", "") == name &&
        r.value("resolution", "") == resolution) {
      return &r;
    }
  }
  return nullptr;
}

/// A latency target: `field` of one configuration's result at most `limit` µs.
struct latency_target {
  std::string name;
  std::string kind;
  std::string workload;
  std::string contention;
  std::string mode;
  std::string field;  // mean_us | jitter_us
  double limit{};
  std::uint64_t min_frames{0};  // per run, for the judgement to count
};

std::vector<latency_target> latency_targets() {
  std::vector<latency_target> t;
  for (const std::string mode : {"while", "tail"}) {
    const std::string m = ", " + mode + ": ";
    t.push_back({"software 1080p RAW12 quiet" + m + "mean <= 40 us", "software", "1080p raw12",
                 "none", mode, "mean_us", 40.0});
    t.push_back({"software 1080p RAW12 quiet" + m + "J <= 5 us over >= 20,000 frames", "software",
                 "1080p raw12", "none", mode, "jitter_us", 5.0, 20000});
    t.push_back({"software 4K RAW12 quiet" + m + "mean <= 120 us", "software", "4k raw12", "none",
                 mode, "mean_us", 120.0});
    t.push_back({"software 1080p RAW12 under contention" + m + "J <= 10 us", "software",
                 "1080p raw12", "stress", mode, "jitter_us", 10.0});
    for (const std::string level : {"none", "stress"}) {
      t.push_back({std::string("photon-to-display, 240 Hz variable refresh, flip, ") +
                       (level == "none" ? "quiet" : "under contention") + m + "J <= 1 ms",
                   "photon", "photon vrr240-flip", level, mode, "jitter_us", 1000.0});
    }
  }
  // The fused pass (one imaging.camera_isp), in every GPU-resident mode.
  for (const std::string mode : {"while", "tail", "persistent"}) {
    const std::string m = ", " + mode + ": ";
    const std::string quiet = "fused 1080p RAW12 quiet" + m;
    t.push_back(
        {quiet + "mean <= 20 us", "software", "1080p raw12 fused", "none", mode, "mean_us", 20.0});
    t.push_back({quiet + "J <= 5 us over >= 20,000 frames", "software", "1080p raw12 fused", "none",
                 mode, "jitter_us", 5.0, 20000});
    t.push_back({quiet + "p99 - p50 <= 2 us", "software", "1080p raw12 fused", "none", mode,
                 "p99_minus_p50_us", 2.0});
    t.push_back({"fused 4K RAW12 quiet" + m + "mean <= 50 us", "software", "4k raw12 fused", "none",
                 mode, "mean_us", 50.0});
    t.push_back({"fused 1080p RAW12 under contention" + m + "J over spaced frames <= 10 us",
                 "software", "1080p raw12 fused", "stress", mode, "spaced_jitter_us", 10.0});
  }
  return t;
}

void judge_latency(camera_verdicts& v, const json& results, const latency_target& t) {
  const json* r = find_result(results, t.kind, t.workload, t.contention, t.mode);
  if (r == nullptr || !r->contains(t.field)) {
    std::string why =
        "configuration not run (see --parts, --resolutions, --formats, --contention, "
        "--modes, --displays, --pipelines)";
    if (r != nullptr) {
      why = !r->contains("mean_us") ? "no samples: " + r->value("errors", json::array()).dump()
            : t.field == "spaced_jitter_us"
                ? "a run had no frame that arrived more than one pipeline latency after the one "
                  "before (or no stage stamps)"
                : "the result has no " + t.field;
    }
    v.not_judged.push_back({{"name", t.name}, {"why", why}});
    return;
  }
  const double value = (*r)[t.field].get<double>();
  json run_values = json::array();
  std::uint64_t fewest = 0;
  bool first = true;
  for (const auto& run : r->value("runs", json::array())) {
    if (run.contains(t.field)) run_values.push_back(run[t.field]);
    const auto n = run.value("n", std::uint64_t{0});
    fewest = first ? n : std::min(fewest, n);
    first = false;
  }
  bool met = value <= t.limit;
  json entry = {{"name", t.name},
                {"value", value},
                {"target", t.limit},
                {"unit", "us"},
                {"op", "<="},
                {"kind", t.kind},
                {"workload", t.workload},
                {"contention", t.contention},
                {"mode", t.mode},
                {"statistic", t.field},
                {"run_values", run_values},
                {"aggregate", r->value("aggregate", "")}};
  if (t.field == "spaced_jitter_us" && r->contains("jitter_us")) {
    entry["all_frames_jitter_us"] = (*r)["jitter_us"];  // every frame's J, beside the judged one
    if (r->contains("idle_jitter_us")) entry["idle_frames_jitter_us"] = (*r)["idle_jitter_us"];
  }
  if (t.min_frames > 0) {
    entry["frames_per_run"] = fewest;
    if (fewest < t.min_frames) {
      met = false;
      entry["note"] = "only " + std::to_string(fewest) + " frames in a run; the target needs " +
                      std::to_string(t.min_frames);
    }
  }
  entry["met"] = met;
  v.targets.push_back(std::move(entry));
}

/// A target met when a / b <= 1, with both values under their names.
void push_at_most_one(camera_verdicts& v, const std::string& name, const char* a_key, double a,
                      const char* b_key, double b) {
  v.targets.push_back({{"name", name},
                       {"value", a / b},
                       {"target", 1.0},
                       {"op", "<="},
                       {"unit", "ratio"},
                       {a_key, a},
                       {b_key, b},
                       {"met", a <= b}});
}

void judge_demosaic_speed(camera_verdicts& v, const json& results) {
  for (const std::string res : {"1080p", "4k"}) {
    const std::string name =
        "demosaic Malvar p50 / NPP bilinear p50 at " + res + " <= 1 (ours at least as fast)";
    const json* ours = find_operator(results, "demosaic malvar", res);
    const json* npp = find_operator(results, "demosaic npp", res);
    if (ours == nullptr || npp == nullptr) {
      v.not_judged.push_back({{"name", name},
                              {"why", ours == nullptr ? "operators part not run at " + res
                                                      : std::string("this build has no NPP")}});
      continue;
    }
    push_at_most_one(v, name, "malvar_p50_us", (*ours)["p50_us"].get<double>(), "npp_p50_us",
                     (*npp)["p50_us"].get<double>());
  }
}

void judge_statistics(camera_verdicts& v, const json& results) {
  const std::string name = "PSNR previous-frame statistics >= same-frame - 0.5 dB";
  double same = 0;
  double previous = 0;
  std::size_t n = 0;
  for (const auto& r : results) {
    if (r.value("kind", "") != "statistics") continue;
    same += r["mean_same_db"].get<double>();
    previous += r["mean_previous_db"].get<double>();
    ++n;
  }
  if (n == 0) {
    v.not_judged.push_back({{"name", name}, {"why", "statistics part not run"}});
    return;
  }
  const double gap = (same - previous) / static_cast<double>(n);
  v.targets.push_back({{"name", name + " (mean over " + std::to_string(n) + " photographs)"},
                       {"value", gap},
                       {"target", 0.5},
                       {"op", "<="},
                       {"unit", "dB"},
                       {"same_frame_db", same / static_cast<double>(n)},
                       {"previous_frame_db", previous / static_cast<double>(n)},
                       {"met", gap <= 0.5}});
}

void judge_quality(camera_verdicts& v, const json& results) {
  std::vector<double> malvar;
  std::vector<double> bilinear;
  std::vector<double> npp;
  for (const auto& r : results) {
    if (r.value("kind", "") != "demosaic_quality") continue;
    malvar.push_back(r["psnr_malvar_db"].get<double>());
    bilinear.push_back(r["psnr_bilinear_db"].get<double>());
    if (r["psnr_npp_db"].is_number()) npp.push_back(r["psnr_npp_db"].get<double>());
  }
  const auto mean = [](const std::vector<double>& x) {
    double s = 0;
    for (const double d : x) s += d;
    return s / static_cast<double>(x.size());
  };
  const std::string over = " (mean over " + std::to_string(malvar.size()) + " photographs)";
  const std::string a = "PSNR Malvar - bilinear >= 3 dB";
  const std::string b = "PSNR Malvar - NPP >= 0 dB (no worse)";
  if (malvar.size() < 4) {
    const std::string why =
        malvar.empty() ? "demosaic part not run" : "fewer than four photographs";
    v.not_judged.push_back({{"name", a}, {"why", why}});
    v.not_judged.push_back({{"name", b}, {"why", why}});
    return;
  }
  const double gain = mean(malvar) - mean(bilinear);
  v.targets.push_back({{"name", a + over},
                       {"value", gain},
                       {"target", 3.0},
                       {"op", ">="},
                       {"unit", "dB"},
                       {"malvar_db", mean(malvar)},
                       {"bilinear_db", mean(bilinear)},
                       {"met", gain >= 3.0}});
  if (npp.size() != malvar.size()) {
    v.not_judged.push_back({{"name", b}, {"why", "this build has no NPP"}});
    return;
  }
  const double edge = mean(malvar) - mean(npp);
  v.targets.push_back({{"name", b + over},
                       {"value", edge},
                       {"target", 0.0},
                       {"op", ">="},
                       {"unit", "dB"},
                       {"malvar_db", mean(malvar)},
                       {"npp_db", mean(npp)},
                       {"met", edge >= 0.0}});
}

/// The fused pass's `persistent` mean over its `while` mean, quiet, at each resolution: <= 1.
void judge_persistent_against_while(camera_verdicts& v, const json& results) {
  for (const std::string res : {"1080p", "4k"}) {
    const std::string name = "fused " + std::string(res == "4k" ? "4K" : res) +
                             " RAW12 quiet: mean persistent / while <= 1";
    const json* p = find_result(results, "software", res + " raw12 fused", "none", "persistent");
    const json* w = find_result(results, "software", res + " raw12 fused", "none", "while");
    if (p == nullptr || w == nullptr || !p->contains("mean_us") || !w->contains("mean_us")) {
      v.not_judged.push_back(
          {{"name", name}, {"why", "persistent and while (fused, quiet) not both run at " + res}});
      continue;
    }
    push_at_most_one(v, name, "persistent_us", (*p)["mean_us"].get<double>(), "while_us",
                     (*w)["mean_us"].get<double>());
  }
}

/// host-graph's statistic over a GPU-resident mode's, same workload and contention.
void add_ratios(camera_verdicts& v, const json& results, const std::string& kind,
                const std::string& workload, const std::string& label, double paper_j) {
  for (const std::string level : {"stress", "none"}) {
    const json* cpu = find_result(results, kind, workload, level, "host-graph");
    for (const std::string mode : {"while", "tail"}) {
      const json* gpu = find_result(results, kind, workload, level, mode);
      if (cpu == nullptr || gpu == nullptr || !cpu->contains("jitter_us") ||
          !gpu->contains("jitter_us")) {
        continue;
      }
      for (const std::string field : {"jitter_us", "mean_us"}) {
        const double a = (*cpu)[field].get<double>();
        const double b = (*gpu)[field].get<double>();
        json e = {{"name", label + (level == "none" ? ", quiet" : ", under contention") + ": " +
                               (field == "jitter_us" ? "J" : "mean") + " host-graph / " + mode},
                  {"value", b > 0 ? json(a / b) : json(nullptr)},
                  {"host_graph_us", a},
                  {"gpu_resident_us", b},
                  {"contention", level}};
        if (field == "jitter_us" && level == "stress") e["paper"] = paper_j;
        v.ratios.push_back(std::move(e));
      }
    }
  }
}

}  // namespace

camera_verdicts judge_camera_targets(const json& results) {
  camera_verdicts v;
  for (const auto& t : latency_targets()) judge_latency(v, results, t);
  judge_persistent_against_while(v, results);
  judge_demosaic_speed(v, results);
  judge_quality(v, results);
  judge_statistics(v, results);
  // The paper: software processing J 170x lower GPU-resident; photon-to-display J 0.66 ms
  // against 4.83 ms CPU-driven with GPUDirect.
  add_ratios(v, results, "software", "1080p raw12", "software 1080p RAW12", 170.0);
  add_ratios(v, results, "photon", "photon vrr240-flip", "photon-to-display 240 Hz VRR flip",
             4.83 / 0.66);
  return v;
}

void record_verdicts(measure::receipt& receipt) {
  const camera_verdicts v = judge_camera_targets(receipt.results);
  receipt.settings["targets"] = v.targets;
  receipt.settings["targets_not_judged"] = v.not_judged;
  receipt.settings["ratios"] = v.ratios;
}

std::vector<std::string> camera_failures(const measure::receipt& receipt) {
  std::vector<std::string> out;
  for (const auto& r : receipt.results) {
    const std::string kind = r.value("kind", "");
    if (kind != "software" && kind != "photon") continue;
    const std::string what = kind + " " + r.value("workload", "") + " / " +
                             r.value("contention", "") + " / " + r.value("mode", "");
    for (const auto& e : r.value("errors", json::array()))
      out.push_back(what + ": " + e.get<std::string>());
  }
  return out;
}

}  // namespace resident::bench
