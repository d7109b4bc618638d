// bench camera's stage breakdown (see camera_stages.hpp).

#include "bench/camera/camera_stages.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "resident/measure/statistics.hpp"

namespace resident::bench {

namespace {

using nlohmann::json;

constexpr std::array<const char*, 4> stage_names = {"queue", "sighting", "controller", "dag"};

struct split {
  std::uint64_t frame{0};
  double total{0};
  std::array<double, 4> stage{};  // stage_names' order, µs
  double sensor_late{0};
  double arrival_gap{-1};  // -1: no frame before it in the run
  bool idle{false};        // it landed after every earlier frame's commit
};

double us(std::uint64_t later, std::uint64_t earlier) {
  return later > earlier ? static_cast<double>(later - earlier) / 1e3 : 0.0;
}

/// A frame's split, or none when it lacks the arrival, detect or commit stamp.
bool split_of(const camera::frame_stages& f, split& out) {
  if (f.arrival_ns == 0 || f.detect_ns == 0 || f.commit_ns < f.arrival_ns) return false;
  const std::uint64_t ready = std::max(f.arrival_ns, f.handler_start_ns);
  const std::uint64_t released = f.release_ns >= f.detect_ns ? f.release_ns : f.detect_ns;
  out.frame = f.frame;
  out.total = us(f.commit_ns, f.arrival_ns);
  out.stage = {us(f.handler_start_ns, f.arrival_ns), us(f.detect_ns, ready),
               us(released, f.detect_ns), us(f.commit_ns, released)};
  out.sensor_late = static_cast<double>(f.sensor_late_ns) / 1e3;
  return true;
}

double round_ns(double v) { return std::round(v * 1000.0) / 1000.0; }

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

/// The pipeline latency: the median arrival -> commit.
double median_total(const std::vector<split>& splits) {
  std::vector<double> totals;
  totals.reserve(splits.size());
  for (const auto& s : splits) totals.push_back(s.total);
  return median_of(std::move(totals));
}

/// The late frames: which stage each waited in (most above that stage's median), how many
/// landed bunched with the frame before, how many the sensor thread itself delivered late.
json late_frames(const std::vector<split>& splits, double latency) {
  std::vector<double> gaps;
  std::array<std::vector<double>, 4> per_stage;
  for (const auto& s : splits) {
    if (s.arrival_gap >= 0) gaps.push_back(s.arrival_gap);
    for (std::size_t k = 0; k < per_stage.size(); ++k) per_stage[k].push_back(s.stage[k]);
  }
  std::array<double, 4> median{};
  for (std::size_t k = 0; k < median.size(); ++k) median[k] = median_of(per_stage[k]);
  const double threshold = latency + late_margin_us;
  const double gap = median_of(gaps);
  std::array<std::uint64_t, 4> by_stage{};
  std::uint64_t late = 0;
  std::uint64_t bunched = 0;
  std::uint64_t sensor_late = 0;
  for (const auto& s : splits) {
    if (s.total <= threshold) continue;
    ++late;
    std::size_t where = 0;
    for (std::size_t k = 1; k < by_stage.size(); ++k) {
      if (s.stage[k] - median[k] > s.stage[where] - median[where]) where = k;
    }
    ++by_stage[where];
    if (s.arrival_gap >= 0 && s.arrival_gap < 0.5 * gap) ++bunched;
    if (s.sensor_late > late_margin_us) ++sensor_late;
  }
  json stages = json::object();
  for (std::size_t k = 0; k < by_stage.size(); ++k) stages[stage_names[k]] = by_stage[k];
  return {{"margin_us", late_margin_us},
          {"threshold_us", round_ns(threshold)},
          {"frames", late},
          {"by_stage", stages},
          {"bunched", bunched},
          {"sensor_late", sensor_late}};
}

/// Arrival -> commit over the frames `chosen` picks: {"n", "min_us", "max_us", "jitter_us"},
/// or null when it picks none.
template <class Chosen>
json jitter_over(const std::vector<split>& splits, Chosen chosen) {
  std::vector<double> totals;
  for (const auto& s : splits) {
    if (chosen(s)) totals.push_back(s.total);
  }
  if (totals.empty()) return nullptr;
  const auto [lo, hi] = std::minmax_element(totals.begin(), totals.end());
  return {{"n", totals.size()},
          {"min_us", round_ns(*lo)},
          {"max_us", round_ns(*hi)},
          {"jitter_us", round_ns(*hi - *lo)}};
}

/// Arrival -> commit over the frames that arrived more than one pipeline `latency` after the
/// frame before them: frames the frame before could not hold up (unless it queued itself).
json spaced_frames(const std::vector<split>& splits, double latency) {
  json j = jitter_over(splits, [&](const split& s) { return s.arrival_gap > latency; });
  if (!j.is_null()) j["gap_over_us"] = round_ns(latency);
  return j;
}

}  // namespace

json stage_breakdown(const std::vector<camera::frame_stages>& frames, std::uint64_t first_frame,
                     std::size_t slowest) {
  std::vector<split> splits;
  std::uint64_t previous_arrival = 0;
  std::uint64_t last_commit = 0;  // the latest commit of the frames before
  for (const auto& f : frames) {
    split s;
    const bool ok = split_of(f, s);
    if (ok && f.frame >= first_frame) {
      if (previous_arrival != 0) s.arrival_gap = us(f.arrival_ns, previous_arrival);
      s.idle = last_commit != 0 && f.arrival_ns >= last_commit;
      splits.push_back(s);
    }
    if (f.arrival_ns != 0) previous_arrival = f.arrival_ns;
    if (ok) last_commit = std::max(last_commit, f.commit_ns);
  }
  if (splits.empty()) return nullptr;
  const double latency = median_total(splits);
  json stages = json::object();
  for (std::size_t k = 0; k < stage_names.size(); ++k) {
    std::vector<double> v;
    v.reserve(splits.size());
    for (const auto& s : splits) v.push_back(s.stage[k]);
    const measure::summary m = measure::summarize(v);
    stages[stage_names[k]] = {
        {"p50", round_ns(m.p50)}, {"p99", round_ns(m.p99)}, {"max", round_ns(m.max)}};
  }
  std::vector<std::size_t> order(splits.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const std::size_t shown = std::min(slowest, order.size());
  std::partial_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
      [&](std::size_t a, std::size_t b) { return splits[a].total > splits[b].total; });
  json slow = json::array();
  for (std::size_t i = 0; i < shown; ++i) {
    const split& s = splits[order[i]];
    json e = {{"frame", s.frame}, {"total_us", round_ns(s.total)}};
    for (std::size_t k = 0; k < stage_names.size(); ++k) {
      e[std::string(stage_names[k]) + "_us"] = round_ns(s.stage[k]);
    }
    e["sensor_late_us"] = round_ns(s.sensor_late);
    e["arrival_gap_us"] = s.arrival_gap < 0 ? json(nullptr) : json(round_ns(s.arrival_gap));
    slow.push_back(std::move(e));
  }
  return {{"n", splits.size()},
          {"stages_us", stages},
          {"slowest", slow},
          {"late", late_frames(splits, latency)},
          {"spaced", spaced_frames(splits, latency)},
          // Frames that found the loop idle: nothing but the loop stood between arrival and commit.
          {"idle", jitter_over(splits, [](const split& s) { return s.idle; })}};
}

}  // namespace resident::bench
