// bench reef be_trace: what the traced RT samples say about the slowest bodies and computes
// against the rest (see reef_bench.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/common.hpp"
#include "bench/reef/reef_bench.hpp"
#include "bench/reef/reef_kernels.hpp"
#include "resident/measure/statistics.hpp"

namespace resident::bench {

namespace {
/// How many samples "the slowest 1%" of `size` holds: at least one.
std::size_t slowest_count(std::size_t size) { return std::max<std::size_t>(1, size / 100); }

/// Sorts `items` slowest first (by their `us`), then sets out[slow_key] = group(0, n) for the
/// slowest 1% and, when there are more, out[rest_key] = group(n, size). `group` reads `items`.
template <class T, class Group>
void add_slowest_vs_rest(std::vector<T>& items, nlohmann::json& out, const char* slow_key,
                         const char* rest_key, const Group& group) {
  std::sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.us > b.us; });
  const std::size_t n = slowest_count(items.size());
  out[slow_key] = group(std::size_t{0}, n);
  if (items.size() > n) out[rest_key] = group(n, items.size());
}
}  // namespace

nlohmann::json rt_clock(const std::vector<rt_sample_trace>& samples) {
  std::vector<double> mhz;
  struct compute {
    double us;
    double mhz;
  };
  std::vector<compute> by_compute;
  for (const rt_sample_trace& t : samples) {
    if (t.sm_khz == 0 || t.body_start == 0 || t.compute_end < t.body_start) continue;
    const double m = t.sm_khz / 1000.0;
    mhz.push_back(m);
    by_compute.push_back({static_cast<double>(t.compute_end - t.body_start) / 1000.0, m});
  }
  nlohmann::json out = {
      {"method",
       "SM cycles (clock64) over 4 us of %globaltimer, counted by one thread right after the "
       "RT compute's last kernel; compute: body start -> that kernel's stamp"},
      {"n", mhz.size()}};
  if (mhz.empty()) return out;
  const measure::summary m = measure::summarize(mhz);
  out["sm_mhz"] = {{"mean", m.mean}, {"min", m.min}, {"p50", m.p50}, {"max", m.max}};
  // Slowest 1% of computes against the rest: a lower clock there means the GPU ran slower
  // (power or thermal limits), an equal one that the compute took more cycles (memory).
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    double us = 0, mh = 0, kcycles = 0;
    for (std::size_t i = from; i < to; ++i) {
      us += by_compute[i].us;
      mh += by_compute[i].mhz;
      kcycles += by_compute[i].us * by_compute[i].mhz / 1000.0;
    }
    const auto k = static_cast<double>(to - from);
    return {{"n", to - from},
            {"mean_compute_us", us / k},
            {"mean_sm_mhz", mh / k},
            {"mean_kcycles_at_that_clock", kcycles / k}};
  };
  add_slowest_vs_rest(by_compute, out, "slowest_1pct_compute", "other_computes", group);
  return out;
}

nlohmann::json before_body(const std::vector<rt_sample_trace>& samples) {
  struct body {
    double us;
    double checkpoints;  // stored since the previous sample's compute end
    double gap_us;       // last BE block left -> body start
  };
  std::vector<body> bodies;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const rt_sample_trace& t = samples[i];
    const rt_sample_trace& p = samples[i - 1];
    if (t.body_start == 0 || t.commit < t.body_start || t.be_checkpoints < p.be_checkpoints) {
      continue;
    }
    const std::uint64_t left = std::max(t.be_last_end, t.be_last_stop);
    // Only bodies no BE block touched: the question is what the BE work left behind.
    if (left == 0 || left > t.body_start || t.be_last_begin > t.body_start || t.be_running > 0) {
      continue;
    }
    bodies.push_back({static_cast<double>(t.commit - t.body_start) / 1000.0,
                      static_cast<double>(t.be_checkpoints - p.be_checkpoints),
                      static_cast<double>(t.body_start - left) / 1000.0});
  }
  nlohmann::json out = {
      {"method",
       "bodies no BE block began, ended or ran in; checkpoints: BE checkpoints stored since the "
       "previous sample's compute end; gap: the latest BE block end or turn-away before the "
       "body -> body start"},
      {"n", bodies.size()}};
  if (bodies.empty()) return out;
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    std::vector<double> us, ck, gap;
    for (std::size_t i = from; i < to; ++i) {
      us.push_back(bodies[i].us);
      ck.push_back(bodies[i].checkpoints);
      gap.push_back(bodies[i].gap_us);
    }
    const measure::summary c = measure::summarize(ck);
    const measure::summary g = measure::summarize(gap);
    return {{"n", to - from},
            {"mean_body_us", measure::summarize(us).mean},
            {"checkpoints", {{"mean", c.mean}, {"p50", c.p50}, {"max", c.max}}},
            {"gap_us", {{"mean", g.mean}, {"p50", g.p50}, {"min", g.min}}}};
  };
  add_slowest_vs_rest(bodies, out, "slowest_1pct_body", "other_bodies", group);
  return out;
}

nlohmann::json rt_placement(const std::vector<rt_sample_trace>& samples) {
  struct body {
    double us;
    double spread_us;  // summed over the body's gemms
    bool crowded;
  };
  std::vector<body> bodies;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const rt_sample_trace& t = samples[i];
    const rt_sample_trace& p = samples[i - 1];
    if (t.body_start == 0 || t.commit < t.body_start || t.rt_crowded < p.rt_crowded ||
        t.rt_spread_ns < p.rt_spread_ns) {
      continue;
    }
    bodies.push_back({static_cast<double>(t.commit - t.body_start) / 1000.0,
                      static_cast<double>(t.rt_spread_ns - p.rt_spread_ns) / 1000.0,
                      t.rt_crowded > p.rt_crowded});
  }
  nlohmann::json out = {
      {"method",
       "per body, against the sample before: spread = sum over its RT gemm launches of (last "
       "RT block's start - first RT block's start); crowded = some gemm had two RT blocks on "
       "one SM"},
      {"n", bodies.size()}};
  if (bodies.empty()) return out;
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    std::vector<double> us, spread;
    std::int64_t crowded = 0;
    for (std::size_t i = from; i < to; ++i) {
      us.push_back(bodies[i].us);
      spread.push_back(bodies[i].spread_us);
      crowded += bodies[i].crowded ? 1 : 0;
    }
    const measure::summary sp = measure::summarize(spread);
    return {{"n", to - from},
            {"mean_body_us", measure::summarize(us).mean},
            {"spread_us", {{"mean", sp.mean}, {"p50", sp.p50}, {"p99", sp.p99}, {"max", sp.max}}},
            {"crowded", crowded}};
  };
  add_slowest_vs_rest(bodies, out, "slowest_1pct_body", "other_bodies", group);
  return out;
}

nlohmann::json rt_compute_split(const std::vector<rt_sample_trace>& samples) {
  constexpr auto gemms = static_cast<std::size_t>(rt_stamped_gemms);
  static_assert(std::tuple_size_v<decltype(rt_sample_trace::gemm_start)> == gemms);
  // Segment names in time order: head, gemm1, between1, gemm2, between2, gemm3, tail.
  std::vector<std::string> names = {"body_start_to_gemm1"};
  for (std::size_t l = 0; l < gemms; ++l) {
    names.push_back("gemm" + std::to_string(l + 1));
    names.push_back(l + 1 < gemms
                        ? "gemm" + std::to_string(l + 1) + "_to_gemm" + std::to_string(l + 2)
                        : "gemm" + std::to_string(l + 1) + "_to_compute_end");
  }
  struct compute {
    double us;
    std::vector<double> segments;
  };
  std::vector<compute> computes;
  std::int64_t unstamped = 0;  // a stamp missing: no split to make
  std::int64_t unordered = 0;  // every stamp there, but not in time order
  for (const rt_sample_trace& t : samples) {
    if (t.body_start == 0 || t.compute_end <= t.body_start) {
      ++unstamped;
      continue;
    }
    // Every stamp present and in order: body start <= start1 <= end1 <= start2 ... <= end.
    std::vector<std::uint64_t> at = {t.body_start};
    for (std::size_t l = 0; l < gemms; ++l) {
      at.push_back(t.gemm_start[l]);
      at.push_back(t.gemm_end[l]);
    }
    at.push_back(t.compute_end);
    if (std::find(at.begin(), at.end(), std::uint64_t{0}) != at.end()) {
      ++unstamped;
      continue;
    }
    if (!std::is_sorted(at.begin(), at.end())) {
      ++unordered;
      continue;
    }
    compute c{static_cast<double>(t.compute_end - t.body_start) / 1000.0, {}};
    for (std::size_t i = 0; i + 1 < at.size(); ++i) {
      c.segments.push_back(static_cast<double>(at[i + 1] - at[i]) / 1000.0);
    }
    computes.push_back(std::move(c));
  }
  nlohmann::json out = {
      {"method",
       "device stamps: each RT gemm launch's first RT block start and last RT block end (its "
       "last block writes them), the body start and the compute's end; segments in time order "
       "add up to the compute; traces with a stamp missing or out of order are counted, not "
       "split"},
      {"n", computes.size()},
      {"traced", samples.size()},
      {"left_out_unstamped", unstamped},
      {"left_out_unordered", unordered}};
  if (computes.empty()) return out;
  const auto group = [&](std::size_t from, std::size_t to) -> nlohmann::json {
    std::vector<double> sum(names.size(), 0.0);
    double us = 0;
    for (std::size_t i = from; i < to; ++i) {
      us += computes[i].us;
      for (std::size_t k = 0; k < names.size(); ++k) sum[k] += computes[i].segments[k];
    }
    const auto count = static_cast<double>(to - from);
    nlohmann::json seg = nlohmann::json::object();
    for (std::size_t k = 0; k < names.size(); ++k) seg[names[k]] = sum[k] / count;
    return {{"n", to - from}, {"mean_compute_us", us / count}, {"mean_segment_us", seg}};
  };
  add_slowest_vs_rest(computes, out, "slowest_1pct_compute", "other_computes", group);
  return out;
}

nlohmann::json be_overlap(const std::vector<rt_sample_trace>& samples) {
  const auto us = [](std::uint64_t a, std::uint64_t b) {
    return static_cast<double>(static_cast<std::int64_t>(a - b)) / 1000.0;
  };
  std::vector<double> with, turned, quiet, into_body;
  std::int64_t began = 0, ended = 0, running = 0;
  struct kind {
    double value;
    bool overlapped;
    bool turned_away;
  };
  std::vector<kind> by_body, by_latency;
  for (const rt_sample_trace& t : samples) {
    if (t.body_start == 0 || t.commit < t.body_start) continue;
    const bool b = t.be_last_begin > t.body_start;
    const bool e = t.be_last_end > t.body_start;
    const bool r = t.be_running > 0;
    const bool stop = t.be_last_stop > t.body_start;
    began += b ? 1 : 0;
    ended += e ? 1 : 0;
    running += r ? 1 : 0;
    const bool overlapped = b || e || r;
    const double body = us(t.commit, t.body_start);
    if (overlapped) with.push_back(body);
    if (stop) turned.push_back(body);
    if (!overlapped && !stop) quiet.push_back(body);
    if (e) into_body.push_back(us(t.be_last_end, t.body_start));
    by_body.push_back({body, overlapped, stop});
    if (t.latency_us >= 0) by_latency.push_back({t.latency_us, overlapped, stop});
  }
  // Of the slowest 1% (at least one), how many had BE blocks run or turned away in the body.
  const auto slowest = [](std::vector<kind> v) -> nlohmann::json {
    if (v.empty()) return {{"n", 0}, {"overlapped", 0}, {"turned_away", 0}};
    const std::size_t n = slowest_count(v.size());
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n - 1), v.end(),
                     [](const kind& a, const kind& b) { return a.value > b.value; });
    std::int64_t hit = 0, away = 0;
    for (std::size_t i = 0; i < n; ++i) {
      hit += v[i].overlapped ? 1 : 0;
      away += v[i].turned_away ? 1 : 0;
    }
    return {{"n", n}, {"overlapped", hit}, {"turned_away", away}, {"from_us", v[n - 1].value}};
  };
  return {{"method",
           "BE blocks record on the device when they begin, end, or are turned away by the "
           "raised word at begin(), and how many run; the RT op reads that at the end of its "
           "compute. A body overlapped when a BE block began or ended after the body started, "
           "or was still running at the compute's end; turned_away when a BE block reached an "
           "SM after the body started and left on the word"},
          {"samples", by_body.size()},
          {"overlapped", with.size()},
          {"turned_away_in_body", turned.size()},
          {"began_in_body", began},
          {"ended_in_body", ended},
          {"running_at_compute_end", running},
          {"rt_body_overlapped", brief(with)},
          {"rt_body_turned_away", brief(turned)},
          {"rt_body_quiet", brief(quiet)},
          {"last_be_end_into_body_us", brief(into_body)},
          {"slowest_1pct_body", slowest(by_body)},
          {"slowest_1pct_latency", slowest(by_latency)}};
}
}  // namespace resident::bench
