#include "bench/io_bench.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "bench/workloads.hpp"
#include "resident/measure/contention.hpp"
#include "resident/measure/host_noise.hpp"
#include "resident/measure/threads.hpp"

namespace resident::bench {

void io_settings::make_quick() {
  samples = 1000;
  warmup = 200;
  rate_hz = 1000.0;
}

void io_settings::validate() const {
  if (modes.empty()) throw std::invalid_argument("--modes: name at least one mode");
  for (const auto& m : modes) (void)parse_execution_mode(m);
  if (workloads.empty()) throw std::invalid_argument("--workloads: name at least one workload");
  for (const auto& w : workloads) {
    if (w != "empty" && w != "matmul6") {
      throw std::invalid_argument("unknown workload '" + w + "'; workloads: empty, matmul6");
    }
  }
  if (contention.empty()) throw std::invalid_argument("--contention: name at least one level");
  for (const auto& c : contention) {
    if (c != "none" && c != "stress") {
      throw std::invalid_argument("unknown contention '" + c + "'; levels: none, stress");
    }
  }
  if (!(rate_hz > 0.0) || rate_hz > 1e6) {
    throw std::invalid_argument("--rate must be in (0, 1000000] Hz, got " +
                                std::to_string(rate_hz));
  }
  if (samples <= 0) throw std::invalid_argument("--samples must be positive");
  if (warmup < 0) throw std::invalid_argument("--warmup must be >= 0");
  if (disturbance_ns <= 0) throw std::invalid_argument("--disturbance-ns must be positive");
  if (observers < 1 || observers > 4) {
    throw std::invalid_argument("--observers must be in 1..4, got " + std::to_string(observers));
  }
}

namespace {

using namespace std::chrono_literals;

// One actuator thread's sightings. With several observers (each on its own core, each polling
// the output) a sample counts as seen at the earliest sighting, so one observer losing its
// core does not hold a sighting back while another still polls.
struct io_observer {
  explicit io_observer(std::size_t total)
      : seen_ns(total + 1, -1), poll_gap_ns(total + 1, 0), wrong(total + 1, 0), stalls(1 << 16) {}
  std::vector<std::int64_t> seen_ns;
  std::vector<std::int64_t> poll_gap_ns;
  std::vector<std::uint8_t> wrong;
  std::int64_t stray{0};
  measure::stall_log stalls;  // consecutive polls further apart than the threshold
  measure::thread_grant grant;
  nlohmann::json sched;  // what the scheduler did to this thread while it polled
  int cpu{-1};
};

class io_runner {
 public:
  io_runner(const io_settings& s, std::map<std::string, int> cpus, std::ostream& log)
      : _s(s), _cpus(std::move(cpus)), _log(log) {}

  nlohmann::json run(io_app& app, execution_mode mode, const std::string& contention,
                     measure::csv_writer* csv) {
    const auto total = static_cast<std::size_t>(_s.warmup + _s.samples);
    sample_log samples(total);

    run_options options;
    options.policy = sample_policy::skip_duplicate;
    options.idle_sleep_ns = _s.sleep_ns;
    options.poll_ns = _s.poll_ns;
    options.telemetry_samples = total + 64;
    options.stall_timeout = std::max<std::chrono::milliseconds>(
        2000ms, std::chrono::milliseconds(4 * (_s.sleep_ns + _s.poll_ns) / 1'000'000 + 1));
    measure::thread_grant loop_grant;
    options.on_loop_thread_start = [&] {
      loop_grant = measure::configure_current_thread(_cpus.at("loop"), _s.realtime);
    };

    auto handle = run_async(app, mode, options);
    io::mailbox& mb = app.mailbox();
    const std::uint64_t base = mb.published();
    std::atomic<bool> stop{false};
    measure::thread_grant sensor_grant;
    std::vector<std::unique_ptr<io_observer>> observers;
    for (const auto& [role, cpu] : _cpus) {
      if (role.rfind("actuator", 0) != 0) continue;
      observers.push_back(std::make_unique<io_observer>(total));
      observers.back()->cpu = cpu;
    }
    // The interrupts the measuring threads' cores took: what disturbed samples ran into.
    std::map<std::string, std::map<std::string, std::uint64_t>> irq0;
    for (const auto& [role, cpu] : _cpus) irq0[role] = measure::read_interrupts(cpu);
    // ... and where their cores' time went (steal: the hypervisor ran something else there).
    std::map<std::string, std::map<std::string, std::uint64_t>> times0;
    for (const auto& [role, cpu] : _cpus) times0[role] = measure::read_cpu_times(cpu);
    const auto period = static_cast<std::int64_t>(1e9 / _s.rate_hz);
    const std::int64_t start = now_ns() + 5'000'000;  // let the actuator settle first
    const double cpu0 = cpu_seconds();
    const std::int64_t wall0 = now_ns();

    const auto observe = [&](io_observer& ob) {
      ob.grant = measure::configure_current_thread(ob.cpu, _s.realtime);
      const measure::thread_sched sched0 = measure::read_thread_sched();
      std::uint64_t last = mb.output_seq();
      std::array<std::byte, 8> out{};
      // Clock read just before the last read that found the output unchanged: an output seen
      // now landed after it, so `t - polled` bounds how late the sighting can be. (Taken
      // after the read instead, a preemption between the two would hide in the bound.)
      std::int64_t polled = now_ns();
      std::int64_t previous = polled;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::int64_t before = now_ns();
        if (before - previous > _s.disturbance_ns) ob.stalls.record(previous, before - previous);
        previous = before;
        const std::uint64_t seq = mb.output_seq();
        if (seq == last) {
          polled = before;
          cpu_relax();
          continue;
        }
        const std::int64_t t = now_ns();  // first sight of this output
        const std::uint64_t read = mb.read_output(out).seq;
        const std::uint64_t i = seq - base;
        if (seq > base && i <= total && ob.seen_ns[i] < 0) {
          ob.seen_ns[i] = t;
          ob.poll_gap_ns[i] = t - polled;
          if (read == seq && !app.output_matches(io_app::token(seq), out)) ob.wrong[i] = 1;
        } else {
          ++ob.stray;
        }
        last = seq;
        polled = now_ns();  // nothing newer than `seq` was checked for before this
      }
      ob.sched = measure::sched_delta(sched0, measure::read_thread_sched());
    };
    std::vector<std::thread> actuators;
    for (auto& ob : observers) actuators.emplace_back(observe, std::ref(*ob));
    nlohmann::json sensor_sched;
    std::thread sensor([&] {
      sensor_grant = measure::configure_current_thread(_cpus.at("sensor"), _s.realtime);
      const measure::thread_sched sched0 = measure::read_thread_sched();
      for (std::size_t i = 1; i <= total; ++i) {
        const std::int64_t scheduled = start + static_cast<std::int64_t>(i - 1) * period;
        wait_until(scheduled);
        const std::uint64_t token = io_app::token(base + i);
        const std::int64_t t = now_ns();
        samples.release_ns[i].store(t, std::memory_order_release);
        mb.publish(std::as_bytes(std::span(&token, 1)));
        samples.publish_ns[i] = now_ns() - t;
        samples.late_ns[i] = t - scheduled;
      }
      sensor_sched = measure::sched_delta(sched0, measure::read_thread_sched());
    });
    sensor.join();
    const std::uint64_t final_seq = base + total;
    wait_for_sample(*handle, final_seq, 2'000'000'000);
    std::this_thread::sleep_for(2ms);  // the final output reaches the actuator
    stop = true;
    for (auto& a : actuators) a.join();
    // Each sample's sighting: the earliest observer's, with its poll gap; a wrong output seen by
    // any observer counts.
    std::vector<std::int64_t> first_by(observers.size(), 0);
    for (std::size_t i = 1; i <= total; ++i) {
      std::size_t best = observers.size();
      for (std::size_t o = 0; o < observers.size(); ++o) {
        const std::int64_t t = observers[o]->seen_ns[i];
        if (t >= 0 && (best == observers.size() || t < observers[best]->seen_ns[i])) best = o;
        samples.wrong[i] |= observers[o]->wrong[i];
      }
      if (best == observers.size()) continue;
      samples.seen_ns[i] = observers[best]->seen_ns[i];
      samples.poll_gap_ns[i] = observers[best]->poll_gap_ns[i];
      if (i > static_cast<std::size_t>(_s.warmup)) ++first_by[best];
    }
    std::int64_t stray = 0;
    for (const auto& ob : observers) stray += ob->stray;
    const double cpu_used = cpu_seconds() - cpu0;
    const std::int64_t wall_ns = now_ns() - wall0;
    const double wall = static_cast<double>(wall_ns) * 1e-9;
    nlohmann::json interrupts = nlohmann::json::object();
    nlohmann::json core_times = nlohmann::json::object();
    const long ticks = sysconf(_SC_CLK_TCK);
    for (const auto& [role, cpu] : _cpus) {
      if (role == "loop" && is_resident(mode)) continue;  // no loop thread: nothing ran there
      interrupts[role] = measure::interrupt_delta(irq0[role], measure::read_interrupts(cpu));
      core_times[role] =
          measure::cpu_time_delta_ms(times0[role], measure::read_cpu_times(cpu), ticks);
    }
    const tear_down_report report = handle->tear_down();
    if (!report.stopped || !report.error.empty()) {
      throw std::runtime_error(std::string(to_string(mode)) + " loop: " + report.error);
    }

    std::vector<double> latencies;
    latencies.reserve(static_cast<std::size_t>(_s.samples));
    const std::vector<device_stamps> stamps = stamps_by_sample(handle->telemetry(), base, total);
    sample_accounting accounting(_s.disturbance_ns);
    std::int64_t unobserved = 0;
    std::int64_t wrong = 0;
    for (std::size_t i = static_cast<std::size_t>(_s.warmup) + 1; i <= total; ++i) {
      if (samples.seen_ns[i] < 0) {
        ++unobserved;
        continue;
      }
      const double us = static_cast<double>(samples.seen_ns[i] -
                                            samples.release_ns[i].load(std::memory_order_acquire)) /
                        1000.0;
      latencies.push_back(us);
      accounting.add(0, samples, stamps, i, us);
      wrong += samples.wrong[i];
      if (csv != nullptr) {
        csv->row({std::string(to_string(mode)), app.workload(), contention,
                  std::to_string(base + i), std::to_string(us)});
      }
    }
    if (latencies.empty()) {
      throw std::runtime_error(std::string(to_string(mode)) + ": the actuator saw no output");
    }
    const measure::summary summary = measure::summarize(latencies);
    nlohmann::json result = measure::latency_result(
        to_string(mode), app.workload(), contention, summary, report.counters.processed,
        report.counters.dropped, report.counters.repeated);
    result["released"] = total;
    result["warmup"] = _s.warmup;
    result["unobserved"] = unobserved;
    result["wrong_outputs"] = wrong;
    result["stray_outputs"] = stray;
    result["host_cpu_cores"] = wall > 0 ? cpu_used / wall : 0.0;
    result["mean_iteration_us"] = report.mean_iteration_ns / 1000.0;
    // Every latency stays in the statistics above. These say how many of them the measuring
    // threads themselves may have stretched, and what the rest look like.
    accounting.write_undisturbed(result);
    result["measurement"] = accounting.measurement(
        "a sample is disturbed when the sensor took longer than the threshold to publish it "
        "(clock read before and after) or the previous poll of the observer that saw it "
        "first was longer than the threshold before it saw the output; in_loop: the device's "
        "detect -> commit (%globaltimer), outside: the rest of the same sample's latency; "
        "slowest: the slowest samples, each split against the sample before it",
        false);
    result["measurement"]["core_interrupts"] = interrupts;
    result["measurement"]["core_time_ms"] = core_times;
    result["measurement"]["sensor_sched"] = sensor_sched;
    nlohmann::json obs = nlohmann::json::array();
    for (std::size_t o = 0; o < observers.size(); ++o) {
      obs.push_back({{"cpu", observers[o]->cpu},
                     {"first_sightings", first_by[o]},
                     {"stalls", observers[o]->stalls.summary(wall_ns, period, start)},
                     {"sched", observers[o]->sched}});
    }
    std::vector<const measure::stall_log*> stall_logs;
    std::vector<int> observer_cpus;
    for (const auto& ob : observers) {
      stall_logs.push_back(&ob->stalls);
      observer_cpus.push_back(ob->cpu);
    }
    add_shared_stalls(obs, stall_logs, observer_cpus);
    result["measurement"]["observers"] = obs;
    result["breakdown"] = telemetry_breakdown(handle->telemetry(), base + _s.warmup + 1, final_seq);
    result["telemetry_lost"] = handle->telemetry_lost();
    nlohmann::json threads = {{"sensor", measure::to_json(sensor_grant)}};
    for (const auto& ob : observers) threads["actuators"].push_back(measure::to_json(ob->grant));
    if (!is_resident(mode)) threads["loop"] = measure::to_json(loop_grant);
    result["threads"] = threads;
    return result;
  }

 private:
  const io_settings& _s;
  std::map<std::string, int> _cpus;
  std::ostream& _log;
};

std::string fixed(double v, int digits = 1) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

}  // namespace

measure::receipt run_io_bench(const io_settings& s, std::ostream& log) {
  s.validate();
  if (device_count() == 0) {
    throw std::runtime_error("bench io needs a CUDA GPU; none is usable here (" +
                             no_device_reason() + ")");
  }
  std::vector<std::pair<std::string, int>> roles{
      {"sensor", s.sensor_cpu}, {"actuator", s.actuator_cpu}, {"loop", s.loop_cpu}};
  for (int o = 1; o < s.observers; ++o) roles.emplace_back("actuator-" + std::to_string(o), -1);
  const auto cpus = measure::assign_cpus(roles);
  std::vector<int> used;
  for (const auto& [role, cpu] : cpus) used.push_back(cpu);
  // Every other thread this process starts from here on (run supervisors, CUDA's helpers)
  // inherits this mask, so none of them competes with the three pinned threads for a core.
  const std::vector<int> others = measure::remaining_cpus(used);
  const measure::affinity_restorer restore_affinity;  // the caller's cores back on return
  if (!others.empty() && !measure::confine_process(others)) {
    log << "io: could not keep other threads off the pinned cores\n";
  }
  measure::receipt receipt("io", s.command);
  describe_machine(receipt);
  receipt.settings = {{"samples", s.samples},
                      {"warmup", s.warmup},
                      {"rate_hz", s.rate_hz},
                      {"sleep_ns", s.sleep_ns},
                      {"poll_ns", s.poll_ns},
                      {"policy", "skip-duplicate"},
                      {"modes", s.modes},
                      {"workloads", s.workloads},
                      {"contention", s.contention},
                      {"realtime_requested", s.realtime},
                      {"cpus", cpus},
                      {"observers", s.observers},
                      {"latency",
                       "actuator CLOCK_MONOTONIC at the first sight of the output (the earliest "
                       "of the observers') minus "
                       "sensor CLOCK_MONOTONIC just before publishing the sample"}};
  std::unique_ptr<measure::csv_writer> csv;
  if (!s.csv_path.empty()) {
    csv = std::make_unique<measure::csv_writer>(
        s.csv_path,
        std::vector<std::string>{"mode", "workload", "contention", "seq", "latency_us"});
  }
  receipt.settings["other_threads_cpus"] = others;
  io_runner runner(s, cpus, log);

  for (const auto& workload : s.workloads) {
    io_app app(workload);
    app.plan();
    for (const auto& level : s.contention) {
      std::unique_ptr<measure::contention_generator> hogs;
      nlohmann::json contention_detail = {{"kind", "none"}};
      if (level == "stress") {
        measure::contention_options options;
        options.cpus = measure::remaining_cpus(used);
        options.use_stress_ng = s.stress_ng;
        if (options.cpus.empty()) {
          throw std::invalid_argument(
              "--contention stress: no cores left for the hogs after "
              "pinning sensor, actuator and loop threads");
        }
        hogs = std::make_unique<measure::contention_generator>(options);
        hogs->start();
        std::this_thread::sleep_for(200ms);  // let the hogs reach steady state
      }
      for (const auto& mode_name : s.modes) {
        const execution_mode mode = parse_execution_mode(mode_name);
        log << "io: " << workload << " / " << level << " / " << mode_name << " ..." << std::flush;
        nlohmann::json result = runner.run(app, mode, level, csv.get());
        if (hogs) result["contention_detail"] = hogs->to_json();
        log << " p50 " << fixed(result["p50_us"]) << " us, max " << fixed(result["max_us"])
            << " us\n";
        receipt.results.push_back(std::move(result));
      }
      if (hogs) hogs->stop();
    }
  }
  const smi_reading after = read_nvidia_smi();
  if (after.sm_clock_mhz > 0) receipt.device.sm_clock_mhz_seen.push_back(after.sm_clock_mhz);
  return receipt;
}

std::string io_table(const measure::receipt& receipt) {
  std::ostringstream os;
  os << std::left << std::setw(11) << "mode" << std::setw(9) << "workload" << std::setw(8)
     << "contend" << std::right << std::setw(8) << "n" << std::setw(9) << "mean" << std::setw(9)
     << "p50" << std::setw(9) << "p99" << std::setw(9) << "p99.9" << std::setw(9) << "max"
     << std::setw(9) << "jitter" << std::setw(8) << "dropped" << std::setw(7) << "wrong"
     << "   (us)\n";
  for (const auto& r : receipt.results) {
    os << std::left << std::setw(11) << r["mode"].get<std::string>() << std::setw(9)
       << r["workload"].get<std::string>() << std::setw(8) << r["contention"].get<std::string>()
       << std::right << std::setw(8) << r["n"].get<std::int64_t>() << std::setw(9)
       << fixed(r["mean_us"]) << std::setw(9) << fixed(r["p50_us"]) << std::setw(9)
       << fixed(r["p99_us"]) << std::setw(9) << fixed(r["p999_us"]) << std::setw(9)
       << fixed(r["max_us"]) << std::setw(9) << fixed(r["jitter_us"]) << std::setw(8)
       << r["dropped"].get<std::int64_t>() << std::setw(7) << r["wrong_outputs"].get<std::int64_t>()
       << "\n";
  }
  return os.str();
}

}  // namespace resident::bench
