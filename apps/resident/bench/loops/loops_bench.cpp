#include "bench/loops/loops_bench.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "bench/common.hpp"
#include "bench/loops/loops_run.hpp"
#include "bench/workloads.hpp"
#include "resident/measure/contention.hpp"
#include "resident/measure/host_noise.hpp"
#include "resident/measure/threads.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::bench {

using namespace std::chrono_literals;

void loops_settings::make_quick() {
  counts = {1, 5, 10};
  samples = 500;
  warmup = 100;
}

void loops_settings::validate() const {
  if (counts.empty()) throw std::invalid_argument("--counts: name at least one loop count");
  for (const int n : counts) {
    if (n <= 0 || n > 64) {
      throw std::invalid_argument("--counts: each count must be in 1..64, got " +
                                  std::to_string(n));
    }
  }
  if (modes.empty()) throw std::invalid_argument("--modes: name at least one mode");
  for (const auto& m : modes) (void)parse_execution_mode(m);
  if (contention.empty()) throw std::invalid_argument("--contention: name at least one level");
  for (const auto& c : contention) {
    if (c != "none" && c != "stress") {
      throw std::invalid_argument("unknown contention '" + c + "'; levels: none, stress");
    }
  }
  (void)parse_workload(workload);
  if (partition_sms < 0) throw std::invalid_argument("--partition-sms must be >= 0 (0: auto)");
  try {
    (void)partition::parse_partition_backend(backend);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--backend: ") + e.what());
  }
  if (host_cores < 0) throw std::invalid_argument("--host-cores must be >= 0 (0: every free core)");
  if (!(rate_hz > 0.0) || rate_hz > 100000.0) {
    throw std::invalid_argument("--rate must be in (0, 100000] Hz");
  }
  if (samples <= 0) throw std::invalid_argument("--samples must be positive");
  if (devices < 1 || devices > 16) {
    throw std::invalid_argument("--devices must be in 1..16, got " + std::to_string(devices));
  }
  if (warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (disturbance_ns <= 0) throw std::invalid_argument("--disturbance-ns must be positive");
  if (observers < 1 || observers > 4) {
    throw std::invalid_argument("--observers must be in 1..4, got " + std::to_string(observers));
  }
}

partition_choice choose_partition(int sm_count, int max_count, int min_partition, int alignment,
                                  int fine_min, int fine_alignment) {
  const auto share = [&](int align, int min) {
    const int each = sm_count / max_count / std::max(1, align) * std::max(1, align);
    return each >= min ? each : 0;
  };
  if (const int each = share(alignment, min_partition); each > 0) return {each, false};
  if (const int each = share(fine_alignment, fine_min); each > 0) return {each, true};
  throw std::invalid_argument(std::to_string(max_count) + " loops do not fit on " +
                              std::to_string(sm_count) + " SMs: the smallest partition is " +
                              std::to_string(fine_min) + " SMs");
}

int choose_mps_budget(int sm_count, int max_count) {
  int each = sm_count / std::max(1, max_count);
  if (each > 2) each -= each % 2;
  if (each < 1) {
    throw std::invalid_argument(std::to_string(max_count) + " loops do not fit on " +
                                std::to_string(sm_count) + " SMs: each needs an SM budget of 1");
  }
  return each;
}

namespace {

const nlohmann::json* find(const nlohmann::json& results, const std::string& mode, int count,
                           const std::string& contention) {
  for (const auto& r : results) {
    if (r.value("mode", "") == mode && r.value("loops", 0) == count &&
        r.value("contention", "") == contention) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

nlohmann::json loops_targets(const nlohmann::json& results) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&](const std::string& name, double value, double target, bool at_most) {
    out.push_back({{"name", name},
                   {"value", value},
                   {"target", target},
                   {"met", at_most ? value <= target : value >= target}});
  };
  const std::string level = "none";
  if (const auto* base = find(results, "while", 5, level)) {
    for (const int n : {10, 15, 20}) {
      const auto* r = find(results, "while", n, level);
      if (r == nullptr) continue;
      const std::string at = " at " + std::to_string(n) + " loops vs 5";
      add("while p99.9" + at + " <= 1.5x",
          (*r)["p999_us"].get<double>() / (*base)["p999_us"].get<double>(), 1.5, true);
      add("while max" + at + " <= 1.5x",
          (*r)["max_us"].get<double>() / (*base)["max_us"].get<double>(), 1.5, true);
      add("while stddev" + at + " <= 2x",
          (*r)["stddev_us"].get<double>() / (*base)["stddev_us"].get<double>(), 2.0, true);
    }
  }
  const auto* w10 = find(results, "while", 10, level);
  const auto* h10 = find(results, "host-graph", 10, level);
  if (w10 != nullptr && h10 != nullptr) {
    add("host-graph p99.9 / while p99.9 at 10 loops >= 10",
        (*h10)["p999_us"].get<double>() / (*w10)["p999_us"].get<double>(), 10.0, false);
  }
  if (w10 != nullptr) {
    add("host cores reserved for 10 while loops == 0",
        static_cast<double>((*w10)["host_cores_for_loops"].get<int>()), 0.0, true);
  }
  return out;
}

measure::receipt run_loops_bench(const loops_settings& s, std::ostream& log) {
  s.validate();
  if (device_count() == 0) {
    throw std::runtime_error("bench loops needs a CUDA GPU; none is usable here (" +
                             no_device_reason() + ")");
  }
  if (const std::string why = missing_device(s.devices - 1); !why.empty()) {
    throw std::invalid_argument("--devices " + std::to_string(s.devices) + ": device " + why);
  }
  std::vector<std::pair<std::string, int>> wanted{{"sensor", -1}};
  for (int o = 0; o < s.observers; ++o) wanted.emplace_back("actuator-" + std::to_string(o), -1);
  const auto roles = measure::assign_cpus(wanted);
  loops_detail::cpu_plan cpus;
  cpus.sensor = roles.at("sensor");
  std::vector<int> used{cpus.sensor};
  for (int o = 0; o < s.observers; ++o) {
    cpus.actuators.push_back(roles.at("actuator-" + std::to_string(o)));
    used.push_back(cpus.actuators.back());
  }
  cpus.others = measure::remaining_cpus(used);
  if (cpus.others.empty()) {
    throw std::runtime_error("bench loops needs a core besides the sensor's and the " +
                             std::to_string(s.observers) + " actuators'");
  }
  // Every other thread (supervisors, CUDA's helpers, host loop threads before they pin) stays
  // off the sensor's and actuator's cores.
  const measure::affinity_restorer restore_affinity;  // the caller's cores back on return
  if (!measure::confine_process(cpus.others)) {
    log << "loops: could not keep other threads off the sensor and actuator cores\n";
  }

  // The most loops one device holds: counts are spread over the devices round-robin.
  const int max_count =
      (*std::max_element(s.counts.begin(), s.counts.end()) + s.devices - 1) / s.devices;
  partition_choice pc;
  nlohmann::json partitions;
  if (partition::parse_partition_backend(s.backend) == partition::partition_backend::mps) {
    // Before any loop is built: a missing daemon is one clear error, not one per configuration.
    if (const auto mps = partition::mps_available(0); !mps) {
      throw std::runtime_error("bench loops --backend mps: " + mps.reason);
    }
    const int sm_count = query_device(0).sm_count;
    pc.sms = s.partition_sms > 0 ? s.partition_sms : choose_mps_budget(sm_count, max_count);
    partitions = {{"backend", "mps"},
                  {"kind",
                   "SM budgets: one MPS context per loop, limited to partition_sms SMs by "
                   "execution affinity; a count, not a set: the loops share SMs "
                   "(sms_reached_by_probes: how many they reached together)"},
                  {"sm_count", sm_count}};
  } else {
    const auto co = partition::query_sm_resource(0, false);
    const auto fine = partition::query_sm_resource(0, true);
    if (s.partition_sms > 0) {
      pc.sms = s.partition_sms;
      pc.ignore_coscheduling =
          s.partition_sms % std::max(1, co.alignment) != 0 || s.partition_sms < co.min_partition;
    } else {
      pc = choose_partition(co.sm_count, max_count, co.min_partition, co.alignment,
                            fine.min_partition, fine.alignment);
    }
    partitions = {{"backend", "green"},
                  {"kind", "disjoint SM sets: one green context per loop"},
                  {"sm_count", co.sm_count},
                  {"min_partition", co.min_partition},
                  {"alignment", co.alignment},
                  {"fine_min_partition", fine.min_partition},
                  {"fine_alignment", fine.alignment}};
  }

  measure::receipt receipt("loops", s.command);
  describe_machine(receipt);
  receipt.settings = {
      {"counts", s.counts},
      {"modes", s.modes},
      {"contention", s.contention},
      {"workload_per_loop", s.workload},
      {"backend", s.backend},
      {"partition_sms", pc.sms},
      {"devices", s.devices},
      {"ignore_coscheduling", pc.ignore_coscheduling},
      {"sm_resource", partitions},
      {"samples_per_loop", s.samples},
      {"warmup", s.warmup},
      {"rate_hz", s.rate_hz},
      {"sensor_phases", "staggered by period / N"},
      {"sleep_ns", s.sleep_ns},
      {"poll_ns", s.poll_ns},
      {"policy", "skip-duplicate"},
      {"cpus", {{"sensor", cpus.sensor}, {"actuators", cpus.actuators}, {"others", cpus.others}}},
      {"observers", s.observers},
      {"host_cores", s.host_cores},
      {"disturbance_ns", s.disturbance_ns},
      {"telemetry", s.telemetry},
      {"realtime_requested", s.realtime}};
  for (const auto& level : s.contention) {
    for (const int count : s.counts) {
      for (const auto& m : s.modes) {
        receipt.results.push_back(
            loops_detail::run_config(s, parse_execution_mode(m), count, pc, level, cpus, log));
      }
    }
  }
  receipt.settings["targets"] = loops_targets(receipt.results);
  return receipt;
}

std::string loops_table(const measure::receipt& receipt) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  if (receipt.settings.contains("sm_resource")) {
    os << "partitions: " << receipt.settings["sm_resource"].value("kind", "") << "\n";
  }
  os << "mode        loops  SMs  contend       n     mean      p50     p99   p99.9      max  "
        "stddev  worst-loop-p99.9  dropped wrong  disturbed  undisturbed-max  (us)\n";
  for (const auto& r : receipt.results) {
    os << std::left << std::setw(12) << r["mode"].get<std::string>() << std::right << std::setw(5)
       << r["loops"].get<int>() << std::setw(5) << r["partition_sms"].get<int>() << "  "
       << std::left << std::setw(8) << r["contention"].get<std::string>() << std::right
       << std::setw(8) << r["n"].get<std::int64_t>() << std::setw(9) << r["mean_us"].get<double>()
       << std::setw(9) << r["p50_us"].get<double>() << std::setw(8) << r["p99_us"].get<double>()
       << std::setw(8) << r["p999_us"].get<double>() << std::setw(9) << r["max_us"].get<double>()
       << std::setw(8) << r["stddev_us"].get<double>() << std::setw(18)
       << r["worst_loop_p999_us"].get<double>() << std::setw(9) << r["dropped"].get<std::uint64_t>()
       << std::setw(6) << r["wrong_outputs"].get<std::int64_t>() << std::setw(11)
       << r.value("disturbed", std::int64_t{0}) << std::setw(17)
       << r.value("undisturbed_max_us", 0.0) << "\n";
  }
  if (receipt.settings.contains("targets")) {
    for (const auto& t : receipt.settings["targets"]) {
      os << (t["met"].get<bool>() ? "[met]    " : "[missed] ") << t["name"].get<std::string>()
         << ": " << std::setprecision(2) << t["value"].get<double>() << "\n";
    }
  }
  return os.str();
}

}  // namespace resident::bench
