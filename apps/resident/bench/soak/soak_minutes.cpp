// bench soak's per-minute latency summaries, their drift and the judgments (see soak_bench.hpp):
// host code with no GPU, shared by the soak and by the reading of its health lines
// (soak_health.cpp).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "bench/soak/soak_bench.hpp"
#include "resident/measure/statistics.hpp"

namespace resident::bench {

minute_folder::minute_folder(std::size_t per_minute, std::size_t minutes) {
  _values.resize(per_minute);
  _values.clear();
  _closed.resize(minutes + 2);
  _closed.clear();
}

namespace {

/// The summary of one minute's samples, sorted here in place (no allocation).
minute_summary summary_sorting(int minute, std::span<double> values) {
  std::sort(values.begin(), values.end());
  minute_summary s{minute, values.size(), measure::percentile_sorted(values, 0.50),
                   measure::percentile_sorted(values, 0.99), values.back()};
  s.p90_us = measure::percentile_sorted(values, 0.90);
  s.p999_us = measure::percentile_sorted(values, 0.999);
  const auto slow = std::upper_bound(values.begin(), values.end(), 1.5 * s.p50_us);
  s.tail_share = static_cast<double>(values.end() - slow) / static_cast<double>(values.size());
  return s;
}

}  // namespace

void minute_folder::add(timed_latency sample) {
  const int minute = static_cast<int>(std::floor(std::max(sample.t_s, 0.0) / 60.0));
  std::lock_guard lock(_mutex);
  if (minute > _open) {
    if (!_values.empty()) _closed.push_back(summary_sorting(_open, _values));
    _values.clear();
    _open = minute;
  }
  _values.push_back(sample.us);
}

std::vector<minute_summary> minute_folder::summaries() const {
  std::lock_guard lock(_mutex);
  std::vector<minute_summary> out = _closed;
  if (!_values.empty()) {
    std::vector<double> open = _values;  // the open minute goes on: summarized from a copy
    out.push_back(summary_sorting(_open, open));
  }
  return out;
}

std::optional<minute_summary> minute_folder::latest() const {
  std::lock_guard lock(_mutex);
  if (_closed.empty()) return std::nullopt;
  return _closed.back();
}

bool minute_judged(const minute_summary& m, double warmup_s, double run_s) {
  return m.minute * 60.0 >= warmup_s && (m.minute + 1) * 60.0 <= run_s;
}

std::optional<double> p99_drift(std::span<const minute_summary> minutes, double warmup_s,
                                double run_s) {
  double lo = 0;
  double hi = 0;
  int counted = 0;
  for (const auto& m : minutes) {
    if (!minute_judged(m, warmup_s, run_s)) continue;
    lo = counted == 0 ? m.p99_us : std::min(lo, m.p99_us);
    hi = counted == 0 ? m.p99_us : std::max(hi, m.p99_us);
    ++counted;
  }
  if (counted < 2 || lo <= 0) return std::nullopt;
  return (hi - lo) / lo;
}

nlohmann::json soak_judgment(const std::string& check, bool ok, const nlohmann::json& value) {
  return {{"check", check}, {"ok", ok}, {"value", value}};
}

nlohmann::json rss_growth_judgment(std::int64_t growth_bytes) {
  return soak_judgment("host RSS grows <= 1 MiB after warm-up", growth_bytes <= (1 << 20),
                       growth_bytes);
}

nlohmann::json device_memory_judgment(std::int64_t moved_bytes) {
  return soak_judgment("free device memory moves <= 2 MiB after warm-up",
                       std::abs(moved_bytes) <= (2 << 20), moved_bytes);
}

nlohmann::json drift_judgment(const std::string& what, std::optional<double> drift) {
  if (!drift) {
    return soak_judgment(what + " (fewer than two whole minutes after warm-up: not judged)", true,
                         nullptr);
  }
  return soak_judgment(what, *drift <= 0.05, *drift);
}

}  // namespace resident::bench
