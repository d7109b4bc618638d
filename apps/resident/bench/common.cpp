#include "bench/common.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "resident/cuda/device.hpp"

namespace resident::bench {

bool wait_for_sample(const run_handle& handle, std::uint64_t seq, std::int64_t timeout_ns) {
  const std::int64_t deadline = now_ns() + timeout_ns;
  while (handle.counters().last_seq < seq) {
    if (now_ns() >= deadline) return false;
    timespec pause{0, 100'000};
    nanosleep(&pause, nullptr);
  }
  return true;
}

void wait_until(std::int64_t target_ns) noexcept {
  constexpr std::int64_t spin_ns = 100'000;
  for (;;) {
    const std::int64_t now = now_ns();
    if (now >= target_ns) return;
    if (target_ns - now > 2 * spin_ns) {
      const std::int64_t wake = target_ns - spin_ns;
      timespec ts{static_cast<time_t>(wake / 1'000'000'000),
                  static_cast<long>(wake % 1'000'000'000)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    } else {
      cpu_relax();
    }
  }
}

double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

std::vector<int> sm_ids(const std::array<std::uint32_t, 8>& mask) {
  std::vector<int> ids;
  for (int sm = 0; sm < static_cast<int>(mask.size()) * 32; ++sm) {
    if (((mask[static_cast<std::size_t>(sm) / 32] >> (sm % 32)) & 1U) != 0U) ids.push_back(sm);
  }
  return ids;
}

smi_reading read_nvidia_smi() {
  smi_reading r;
  FILE* pipe = popen(
      "nvidia-smi --query-gpu=clocks.sm,driver_version --format=csv,noheader,nounits "
      "2>/dev/null",
      "r");
  if (pipe == nullptr) return r;
  char line[256] = {};
  if (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::istringstream in(line);
    std::string clock;
    std::string driver;
    if (std::getline(in, clock, ',') && std::getline(in, driver)) {
      try {
        r.sm_clock_mhz = std::stoi(clock);
      } catch (const std::exception&) {
      }
      driver.erase(0, driver.find_first_not_of(' '));
      driver.erase(driver.find_last_not_of(" \n") + 1);
      r.driver = driver;
    }
  }
  pclose(pipe);
  return r;
}

void add_response_fields(nlohmann::json& result, const loop_counters& c) {
  result["deadline_misses"] = c.deadline_misses;
  result["worst_overrun_us"] = static_cast<double>(c.worst_overrun_ns) / 1e3;
  result["max_response_us"] = static_cast<double>(c.max_response_ns) / 1e3;
  result["arrival_deadline_misses"] = c.arrival_deadline_misses;
  result["max_arrival_response_us"] = static_cast<double>(c.max_arrival_response_ns) / 1e3;
}

void describe_machine(measure::receipt& receipt) {
  receipt.host = measure::current_host();
  if (device_count() == 0) return;
  const device_info d = query_device(0);
  const smi_reading smi = read_nvidia_smi();
  receipt.device.name = d.name;
  receipt.device.sm_count = d.sm_count;
  receipt.device.compute_capability =
      std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor);
  receipt.device.driver = smi.driver.empty() ? std::to_string(d.driver_version) : smi.driver;
  receipt.device.cuda_runtime = d.runtime_version;
  receipt.device.module_loading = d.module_loading;
  if (smi.sm_clock_mhz > 0) receipt.device.sm_clock_mhz_seen.push_back(smi.sm_clock_mhz);
}

void add_shared_stalls(nlohmann::json& observers,
                       const std::vector<const measure::stall_log*>& stalls,
                       const std::vector<int>& cpus) {
  for (std::size_t o = 0; o < stalls.size(); ++o) {
    for (std::size_t p = 0; p < stalls.size(); ++p) {
      if (p == o) continue;
      nlohmann::json shared = stalls[o]->shared_with(*stalls[p], long_stall_ns);
      shared["cpu"] = cpus[p];
      observers[o]["stalls_shared"].push_back(std::move(shared));
    }
  }
}

nlohmann::json brief(const std::vector<double>& values_us) {
  if (values_us.empty()) return {{"n", 0}};
  const measure::summary s = measure::summarize(values_us);
  return {{"n", s.n}, {"mean_us", s.mean}, {"p50_us", s.p50}, {"p99_us", s.p99}, {"max_us", s.max}};
}

void add_undisturbed(nlohmann::json& result, std::size_t all,
                     const std::vector<double>& undisturbed_us) {
  result["disturbed"] = static_cast<std::int64_t>(all - undisturbed_us.size());
  if (undisturbed_us.empty()) return;
  const measure::summary clean = measure::summarize(undisturbed_us);
  result["undisturbed_n"] = clean.n;
  result["undisturbed_p99_us"] = clean.p99;
  result["undisturbed_p999_us"] = clean.p999;
  result["undisturbed_max_us"] = clean.max;
  result["undisturbed_stddev_us"] = clean.stddev;
  result["undisturbed_jitter_us"] = clean.jitter;
}

nlohmann::json telemetry_breakdown(const std::vector<telemetry_entry>& entries,
                                   std::uint64_t first_seq, std::uint64_t last_seq) {
  std::vector<double> release;
  std::vector<double> body;
  std::vector<double> end;
  const auto at = [](const telemetry_entry& e, stage s) {
    return e.stamp_ns[static_cast<std::size_t>(s)];
  };
  for (const auto& e : entries) {
    if (e.repeat != 0 || e.seq < first_seq || e.seq > last_seq) continue;
    const std::uint64_t detect = at(e, stage::detect);
    const std::uint64_t released = at(e, stage::controller_end);
    const std::uint64_t commit = at(e, stage::commit);
    const std::uint64_t finished = at(e, stage::end_marker);
    if (detect == 0 || released < detect || commit < released || finished < commit) continue;
    release.push_back(static_cast<double>(released - detect) / 1000.0);
    body.push_back(static_cast<double>(commit - released) / 1000.0);
    end.push_back(static_cast<double>(finished - commit) / 1000.0);
  }
  return {{"method", "device %globaltimer per processed sample"},
          {"detect_to_release", brief(release)},
          {"release_to_commit", brief(body)},
          {"commit_to_end_marker", brief(end)}};
}

std::vector<device_stamps> stamps_by_sample(const std::vector<telemetry_entry>& entries,
                                            std::uint64_t base, std::size_t total) {
  std::vector<device_stamps> stamps(total + 1);
  for (const telemetry_entry& e : entries) {
    if (e.repeat != 0 || e.seq <= base || e.seq - base > total) continue;
    const std::uint64_t detect = e.stamp_ns[static_cast<std::size_t>(stage::detect)];
    const std::uint64_t commit = e.stamp_ns[static_cast<std::size_t>(stage::commit)];
    if (detect == 0 || commit < detect) continue;
    std::uint64_t release = e.stamp_ns[static_cast<std::size_t>(stage::controller_end)];
    if (release < detect || release > commit) release = 0;
    std::uint64_t empty = e.stamp_ns[static_cast<std::size_t>(stage::last_empty_poll)];
    if (empty > detect) empty = 0;
    stamps[e.seq - base] = {e.stamp_ns[static_cast<std::size_t>(stage::handler_start)], detect,
                            release, commit, empty};
  }
  return stamps;
}

double in_loop_us(const device_stamps& st) {
  if (st.detect == 0) return -1.0;
  return static_cast<double>(st.commit - st.detect) / 1000.0;
}

nlohmann::json split_against_previous(const sample_log& log,
                                      const std::vector<device_stamps>& stamps, std::size_t k) {
  const auto host = [](std::int64_t a, std::int64_t b) {
    return static_cast<double>(a - b) / 1000.0;
  };
  const auto dev = [](std::uint64_t a, std::uint64_t b) {
    return static_cast<double>(static_cast<std::int64_t>(a - b)) / 1000.0;
  };
  const std::int64_t rel = log.release_ns[k].load(std::memory_order_acquire);
  nlohmann::json one = {{"sample", k},
                        {"latency_us", host(log.seen_ns[k], rel)},
                        {"publish_us", static_cast<double>(log.publish_ns[k]) / 1000.0},
                        {"release_late_us", static_cast<double>(log.late_ns[k]) / 1000.0},
                        {"poll_gap_us", static_cast<double>(log.poll_gap_ns[k]) / 1000.0}};
  if (k >= 2) {
    one["release_gap_us"] = host(rel, log.release_ns[k - 1].load(std::memory_order_acquire));
  }
  const device_stamps& st = stamps[k];
  if (st.detect != 0) one["in_loop_us"] = in_loop_us(st);
  if (st.last_empty_poll != 0) one["handler_last_read_us"] = dev(st.detect, st.last_empty_poll);
  if (k < 2 || st.detect == 0 || stamps[k - 1].detect == 0 || log.seen_ns[k - 1] < 0) return one;
  const device_stamps& prev = stamps[k - 1];
  const std::int64_t rel_prev = log.release_ns[k - 1].load(std::memory_order_acquire);
  one["previous_latency_us"] = host(log.seen_ns[k - 1], rel_prev);
  one["vs_previous_us"] = {
      {"release_to_detect", dev(st.detect, prev.detect) - host(rel, rel_prev)},
      {"detect_to_commit", dev(st.commit, st.detect) - dev(prev.commit, prev.detect)},
      {"commit_to_seen", host(log.seen_ns[k], log.seen_ns[k - 1]) - dev(st.commit, prev.commit)}};
  // Long: the GPU was waiting and the sample's write reached it late. Short: the loop came
  // back late.
  if (st.handler_start != 0) one["handler_polled_us"] = dev(st.detect, st.handler_start);
  if (st.release != 0 && prev.release != 0) {
    one["in_loop_vs_previous_us"] = {
        {"detect_to_release", dev(st.release, st.detect) - dev(prev.release, prev.detect)},
        {"release_to_commit", dev(st.commit, st.release) - dev(prev.commit, prev.release)}};
  }
  return one;
}

void slowest_samples::offer(double latency_us, int loop, std::size_t sample) {
  _kept.emplace_back(latency_us, loop, sample);
  if (_kept.size() > 4 * _keep + 16) {
    std::nth_element(_kept.begin(), _kept.begin() + static_cast<std::ptrdiff_t>(_keep), _kept.end(),
                     std::greater<>());
    _kept.resize(_keep);
  }
}

std::vector<std::tuple<double, int, std::size_t>> slowest_samples::sorted() const {
  auto out = _kept;
  std::sort(out.begin(), out.end(), std::greater<>());
  if (out.size() > _keep) out.resize(_keep);
  return out;
}

void sample_accounting::add(int loop, const sample_log& log,
                            const std::vector<device_stamps>& stamps, std::size_t k, double us) {
  const auto l = static_cast<std::size_t>(loop);
  if (_loops.size() <= l) _loops.resize(l + 1, {nullptr, nullptr});
  _loops[l] = {&log, &stamps};
  ++_all;
  _late_releases += log.late_ns[k] > _threshold_ns ? 1 : 0;
  _late_us.push_back(static_cast<double>(log.late_ns[k]) / 1000.0);
  const bool sensor_late = log.publish_ns[k] > _threshold_ns;
  const bool actuator_late = log.poll_gap_ns[k] > _threshold_ns;
  _sensor_disturbed += sensor_late ? 1 : 0;
  _actuator_disturbed += actuator_late ? 1 : 0;
  if (!sensor_late && !actuator_late) _undisturbed.push_back(us);
  _publish_us.push_back(static_cast<double>(log.publish_ns[k]) / 1000.0);
  _poll_gap_us.push_back(static_cast<double>(log.poll_gap_ns[k]) / 1000.0);
  if (const double inside = in_loop_us(stamps[k]); inside >= 0) {
    _in_loop_us.push_back(inside);
    _outside_us.push_back(us - inside);
  }
  _slowest.offer(us, loop, k);
}

void sample_accounting::write_undisturbed(nlohmann::json& result) const {
  add_undisturbed(result, _all, _undisturbed);
}

nlohmann::json sample_accounting::measurement(const std::string& method, bool name_loops) const {
  nlohmann::json slow = nlohmann::json::array();
  for (const auto& [us, loop, k] : _slowest.sorted()) {
    const auto& [log, stamps] = _loops[static_cast<std::size_t>(loop)];
    nlohmann::json one = split_against_previous(*log, *stamps, k);
    if (name_loops) one["loop"] = loop;
    slow.push_back(std::move(one));
  }
  return {{"method", method},
          {"threshold_us", static_cast<double>(_threshold_ns) / 1000.0},
          {"sensor_disturbed", _sensor_disturbed},
          {"actuator_disturbed", _actuator_disturbed},
          {"late_releases", _late_releases},
          {"publish_us", brief(_publish_us)},
          {"release_late_us", brief(_late_us)},
          {"poll_gap_us", brief(_poll_gap_us)},
          {"in_loop_us", brief(_in_loop_us)},
          {"outside_us", brief(_outside_us)},
          {"slowest", slow}};
}

}  // namespace resident::bench
