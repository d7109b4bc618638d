// resident bench loops: one configuration's run, step by step (see loops_run.hpp).

#include "bench/loops/loops_run.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "bench/workloads.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/measure/contention.hpp"
#include "resident/measure/host_noise.hpp"
#include "resident/measure/threads.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::bench::loops_detail {

using namespace std::chrono_literals;

namespace {

// One loop's samples and the sequence number its mailbox stood at before the run.
struct loop_log : sample_log {
  using sample_log::sample_log;
  std::uint64_t base{0};
};

// One actuator thread's view of every loop's output. Each observer polls all loops; a sample's
// sighting is the earliest of theirs, so an observer that loses its core does not hold a
// sighting back while another still polls.
struct observer_log {
  observer_log(std::size_t loops, std::size_t total)
      : seen_ns(loops, std::vector<std::int64_t>(total + 1, -1)),
        poll_gap_ns(loops, std::vector<std::int64_t>(total + 1, 0)),
        wrong(loops, std::vector<std::uint8_t>(total + 1, 0)),
        stalls(1 << 16) {}
  std::vector<std::vector<std::int64_t>> seen_ns;  // [loop][sample]
  std::vector<std::vector<std::int64_t>> poll_gap_ns;
  std::vector<std::vector<std::uint8_t>> wrong;
  std::int64_t stray{0};
  // Rounds over the loops that took longer than the threshold: the observer's own stalls.
  measure::stall_log stalls;
  measure::thread_grant grant;
  std::map<std::string, std::uint64_t> irq_before;
  nlohmann::json sched;  // what the scheduler did to this thread while it polled
};

/// One configuration's run: its loops, their logs and handles, and what the measuring threads
/// recorded, step by step.
struct loops_run {
  loops_run(const loops_settings& settings, execution_mode m, int n, const cpu_plan& plan)
      : s(settings),
        mode(m),
        count(n),
        cpus(plan),
        total(static_cast<std::size_t>(settings.warmup + settings.samples)),
        host_driven(!is_resident(m)),
        period(static_cast<std::int64_t>(1e9 / settings.rate_hz)) {}

  const loops_settings& s;
  execution_mode mode;
  int count;
  const cpu_plan& cpus;
  std::size_t total;
  bool host_driven;
  std::int64_t period;
  std::vector<std::unique_ptr<io_app>> apps;
  std::vector<std::shared_ptr<partition::partition_set>> parts;  // one set per device
  std::vector<std::pair<int, std::size_t>> place;  // loop -> (device, its partition there)
  std::set<int> reached;  // (device, SM) pairs the partitions' probes reached together
  std::vector<int> reached_each;
  std::vector<int> loop_cpus;  // host-driven loops' threads
  std::unique_ptr<measure::contention_generator> hogs;
  std::vector<std::unique_ptr<loop_log>> logs;
  std::vector<measure::thread_grant> loop_grants;
  std::vector<std::unique_ptr<run_handle>> handles;
  std::vector<std::unique_ptr<observer_log>> observers;
  std::atomic<bool> stop{false};
  std::int64_t start{0};  // the sensors' first period, set before the sensor starts
  measure::thread_grant sensor_grant;
  nlohmann::json sensor_sched;
  std::map<std::string, std::uint64_t> irq_sensor0, irq_sensor1;
  double cpu_used{0};
  std::int64_t wall_ns{0};
  std::vector<std::int64_t> first_by;  // sightings each observer made first
  std::vector<loop_counters> counters;

  /// The loops' applications and partitions, and the cores of host-driven loop threads.
  void make_loops(const partition_choice& pc) {
    // Loop i on device i % devices, each device with partitions for its own loops.
    std::vector<int> on_device(static_cast<std::size_t>(s.devices), 0);
    for (int i = 0; i < count; ++i) {
      const int d = i % s.devices;
      place.emplace_back(d, static_cast<std::size_t>(on_device[static_cast<std::size_t>(d)]++));
      apps.push_back(std::make_unique<io_app>(s.workload, io::mailbox_format::automatic, d));
      apps.back()->plan();
    }
    for (int d = 0; d < s.devices; ++d) {
      const int n = on_device[static_cast<std::size_t>(d)];
      parts.push_back(
          n == 0 ? nullptr
                 : partition::partition_set::split(
                       std::vector<int>(static_cast<std::size_t>(n), pc.sms),
                       {d, pc.ignore_coscheduling, partition::parse_partition_backend(s.backend)}));
    }
    // Where one probe kernel per partition ran: green sets never share SMs; MPS budgets do (on
    // the H200 every MPS context of a process ran on the lowest-numbered SMs).
    for (const auto& [d, k] : place) {
      const std::vector<int> ids = sm_ids((*parts[static_cast<std::size_t>(d)])[k].sm_mask());
      for (const int id : ids) reached.insert(d * 4096 + id);
      reached_each.push_back(static_cast<int>(ids.size()));
    }
    // Host-driven loops get a core each while cores last, then share round-robin.
    if (host_driven) {
      const std::size_t cores =
          s.host_cores > 0
              ? std::min<std::size_t>(static_cast<std::size_t>(s.host_cores), cpus.others.size())
              : cpus.others.size();
      for (int i = 0; i < count; ++i) {
        loop_cpus.push_back(cpus.others[static_cast<std::size_t>(i) % cores]);
      }
    }
  }

  /// --contention stress: hogs on every core the loop threads leave.
  void start_hogs(const std::string& contention) {
    std::vector<int> hog_cpus;
    for (const int c : cpus.others) {
      if (std::find(loop_cpus.begin(), loop_cpus.end(), c) == loop_cpus.end()) {
        hog_cpus.push_back(c);
      }
    }
    if (contention != "stress") return;
    hogs = measure::start_stress(
        hog_cpus, s.stress_ng,
        std::to_string(count) + " " + std::string(to_string(mode)) + " loop threads");
  }

  run_options loop_options(int i) {
    run_options o;
    const auto [device, k] = place[static_cast<std::size_t>(i)];
    o.device = device;
    o.partition = parts[static_cast<std::size_t>(device)]->share(k);
    o.policy = sample_policy::skip_duplicate;
    o.idle_sleep_ns = s.sleep_ns;
    o.poll_ns = s.poll_ns;
    o.telemetry_samples = s.telemetry ? total + 64 : 0;
    o.stall_timeout = std::max<std::chrono::milliseconds>(
        2000ms, std::chrono::milliseconds(4 * (s.sleep_ns + s.poll_ns) / 1'000'000 + 1));
    if (host_driven) {
      const int cpu = loop_cpus[static_cast<std::size_t>(i)];
      auto* grant = &loop_grants[static_cast<std::size_t>(i)];
      const bool rt = s.realtime;
      o.on_loop_thread_start = [grant, cpu, rt] {
        *grant = measure::configure_current_thread(cpu, rt);
      };
    }
    return o;
  }

  void start_loops() {
    for (int i = 0; i < count; ++i) logs.push_back(std::make_unique<loop_log>(total));
    loop_grants.resize(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
      handles.push_back(run_async(*apps[static_cast<std::size_t>(i)], mode, loop_options(i)));
    }
    for (int i = 0; i < count; ++i) {
      logs[static_cast<std::size_t>(i)]->base =
          apps[static_cast<std::size_t>(i)]->mailbox().published();
    }
  }

  /// One observer: polls every loop's output until `stop`, noting each first sighting.
  void observe(observer_log& ob, int cpu) {
    ob.grant = measure::configure_current_thread(cpu, s.realtime);
    const measure::thread_sched sched0 = measure::read_thread_sched();
    std::vector<std::uint64_t> last(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i)
      last[static_cast<std::size_t>(i)] = apps[static_cast<std::size_t>(i)]->mailbox().output_seq();
    std::array<std::byte, 8> out{};
    // Per loop, the clock read before the round whose read last found its output unchanged (as
    // in bench io): `t - polled` bounds how late a sighting can be, one round when undisturbed.
    std::vector<std::int64_t> polled(static_cast<std::size_t>(count), now_ns());
    std::int64_t previous_round = now_ns();
    while (!stop.load(std::memory_order_relaxed)) {
      bool any = false;
      const std::int64_t round = now_ns();
      if (round - previous_round > s.disturbance_ns) {
        ob.stalls.record(previous_round, round - previous_round);
      }
      previous_round = round;
      for (int i = 0; i < count; ++i) {
        const auto li = static_cast<std::size_t>(i);
        io::mailbox& mb = apps[li]->mailbox();
        const std::uint64_t seq = mb.output_seq();
        if (seq == last[li]) {
          polled[li] = round;
          continue;
        }
        any = true;
        const std::int64_t t = now_ns();
        const std::uint64_t read = mb.read_output(out).seq;
        const std::uint64_t base = logs[li]->base;
        const std::uint64_t k = seq - base;
        if (seq > base && k <= total && ob.seen_ns[li][k] < 0) {
          ob.seen_ns[li][k] = t;
          ob.poll_gap_ns[li][k] = t - polled[li];
          if (read == seq && !apps[li]->output_matches(io_app::token(seq), out)) {
            ob.wrong[li][k] = 1;
          }
        } else {
          ++ob.stray;
        }
        last[li] = seq;
        polled[li] = now_ns();  // nothing newer than `seq` was checked for before this
      }
      if (!any) cpu_relax();
    }
    ob.sched = measure::sched_delta(sched0, measure::read_thread_sched());
  }

  /// The sensor: every loop's samples, the loops' phases spread evenly over the period.
  void release() {
    sensor_grant = measure::configure_current_thread(cpus.sensor, s.realtime);
    const measure::thread_sched sched0 = measure::read_thread_sched();
    for (std::size_t k = 1; k <= total; ++k) {
      for (int i = 0; i < count; ++i) {
        // Independent sensors: phases spread evenly over the period.
        const std::int64_t scheduled =
            start + static_cast<std::int64_t>(k - 1) * period + period * i / count;
        wait_until(scheduled);
        const auto li = static_cast<std::size_t>(i);
        const std::uint64_t token = io_app::token(logs[li]->base + k);
        const std::int64_t t = now_ns();
        logs[li]->release_ns[k].store(t, std::memory_order_release);
        apps[li]->mailbox().publish(std::as_bytes(std::span(&token, 1)));
        logs[li]->publish_ns[k] = now_ns() - t;
        logs[li]->late_ns[k] = t - scheduled;
      }
    }
    sensor_sched = measure::sched_delta(sched0, measure::read_thread_sched());
  }

  /// The observers and the sensor, until the loops processed every sample (or 3 s went by).
  void measure_samples() {
    for (const int cpu : cpus.actuators) {
      observers.push_back(std::make_unique<observer_log>(static_cast<std::size_t>(count), total));
      observers.back()->irq_before = measure::read_interrupts(cpu);
    }
    irq_sensor0 = measure::read_interrupts(cpus.sensor);
    const double cpu0 = cpu_seconds();
    const std::int64_t wall0 = now_ns();
    std::vector<stopping_thread> actuators;
    actuators.reserve(observers.size());
    for (std::size_t o = 0; o < observers.size(); ++o) {
      actuators.emplace_back([this] { stop = true; },
                             [this, o] { observe(*observers[o], cpus.actuators[o]); });
    }
    start = now_ns() + 5'000'000;
    stopping_thread sensor([] {}, [this] { release(); });
    sensor.join();
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    for (int i = 0; i < count; ++i) {
      const auto li = static_cast<std::size_t>(i);
      while (handles[li]->counters().last_seq < logs[li]->base + total &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(100us);
      }
    }
    std::this_thread::sleep_for(2ms);
    stop = true;
    for (auto& a : actuators) a.join();
    cpu_used = cpu_seconds() - cpu0;
    wall_ns = now_ns() - wall0;
    irq_sensor1 = measure::read_interrupts(cpus.sensor);
  }

  /// Each sample's sighting: the earliest observer's, with that observer's poll gap; a wrong
  /// output seen by any observer counts.
  void merge_sightings() {
    first_by.assign(observers.size(), 0);
    for (int i = 0; i < count; ++i) {
      const auto li = static_cast<std::size_t>(i);
      loop_log& lg = *logs[li];
      for (std::size_t k = 1; k <= total; ++k) {
        std::size_t best = observers.size();
        for (std::size_t o = 0; o < observers.size(); ++o) {
          const std::int64_t t = observers[o]->seen_ns[li][k];
          if (t >= 0 && (best == observers.size() || t < observers[best]->seen_ns[li][k])) {
            best = o;
          }
          lg.wrong[k] |= observers[o]->wrong[li][k];
        }
        if (best == observers.size()) continue;
        lg.seen_ns[k] = observers[best]->seen_ns[li][k];
        lg.poll_gap_ns[k] = observers[best]->poll_gap_ns[li][k];
        if (k > static_cast<std::size_t>(s.warmup)) ++first_by[best];
      }
    }
  }

  void tear_down() {
    std::string errors;
    for (int i = 0; i < count; ++i) {
      const auto li = static_cast<std::size_t>(i);
      const tear_down_report r = handles[li]->tear_down();
      if (!r.stopped || !r.error.empty())
        errors += "loop " + std::to_string(i) + ": " + r.error + "; ";
      counters.push_back(handles[li]->counters());
    }
    if (hogs) hogs->stop();
    if (!errors.empty()) {
      throw std::runtime_error(std::string(to_string(mode)) + " x" + std::to_string(count) + ": " +
                               errors);
    }
  }
};

/// Every loop's latencies, pooled and per loop, with their accounting and breakdowns.
struct loops_latencies {
  explicit loops_latencies(const loops_run& run)
      : stamps_of(static_cast<std::size_t>(run.count)), accounting(run.s.disturbance_ns) {}
  std::vector<double> pooled;
  // Sized once: the accounting keeps pointers to each loop's stamps.
  std::vector<std::vector<device_stamps>> stamps_of;
  sample_accounting accounting;
  nlohmann::json per_loop = nlohmann::json::array();
  nlohmann::json breakdowns = nlohmann::json::array();
  std::uint64_t processed{0}, dropped{0}, repeated{0};
  std::int64_t wrong_total{0}, unobserved_total{0};
};

void add_loop_latencies(const loops_run& run, int i, loops_latencies& out) {
  const loops_settings& s = run.s;
  const auto li = static_cast<std::size_t>(i);
  const loop_log& lg = *run.logs[li];
  const std::vector<device_stamps>& stamps = out.stamps_of[li] =
      stamps_by_sample(run.handles[li]->telemetry(), lg.base, run.total);
  if (s.telemetry) {
    out.breakdowns.push_back(telemetry_breakdown(run.handles[li]->telemetry(),
                                                 lg.base + static_cast<std::uint64_t>(s.warmup) + 1,
                                                 lg.base + run.total));
  }
  std::vector<double> lat;
  std::int64_t unobserved = 0, wrong = 0;
  for (std::size_t k = static_cast<std::size_t>(s.warmup) + 1; k <= run.total; ++k) {
    if (lg.seen_ns[k] < 0) {
      ++unobserved;
      continue;
    }
    const double us =
        static_cast<double>(lg.seen_ns[k] - lg.release_ns[k].load(std::memory_order_acquire)) /
        1000.0;
    lat.push_back(us);
    wrong += lg.wrong[k];
    out.accounting.add(i, lg, stamps, k, us);
  }
  out.pooled.insert(out.pooled.end(), lat.begin(), lat.end());
  const loop_counters& c = run.counters[li];
  nlohmann::json one = {{"loop", i}};
  if (!lat.empty()) one.update(measure::summary_fields(measure::summarize(lat)));
  one["unobserved"] = unobserved;
  one["wrong_outputs"] = wrong;
  one["processed"] = c.processed;
  one["dropped"] = c.dropped;
  one["repeated"] = c.repeated;
  add_response_fields(one, c);
  const auto [device, k] = run.place[li];
  one["device"] = device;
  one["sms"] = (*run.parts[static_cast<std::size_t>(device)])[k].sm_count();
  one["sms_reached_by_probe"] = run.reached_each[li];
  if (run.host_driven) one["loop_thread"] = measure::to_json(run.loop_grants[li]);
  out.per_loop.push_back(one);
  out.processed += c.processed;
  out.dropped += c.dropped;
  out.repeated += c.repeated;
  out.wrong_total += wrong;
  out.unobserved_total += unobserved;
}

/// The result's `measurement`: the accounting's, the sensor core's interrupts and scheduling,
/// and per observer how many sightings it made first, when and how long it was off its core
/// (phase: within the sensor period, from the first release), what its core took.
nlohmann::json loops_measurement(const loops_run& run, const loops_latencies& lat) {
  nlohmann::json m = lat.accounting.measurement(
      "a sample is disturbed when the sensor took longer than the threshold to publish it "
      "(clock read before and after) or the round over the loops before the first sighting "
      "(the earliest of the observers') was longer than the threshold; in_loop: the device's "
      "detect -> commit (%globaltimer), outside: the rest of the same sample's latency "
      "(sensor publish, detection, egress to the actuator)",
      true);
  m["sensor_core_interrupts"] = measure::interrupt_delta(run.irq_sensor0, run.irq_sensor1);
  m["sensor_sched"] = run.sensor_sched;
  nlohmann::json obs = nlohmann::json::array();
  for (std::size_t o = 0; o < run.observers.size(); ++o) {
    const observer_log& ob = *run.observers[o];
    obs.push_back(
        {{"cpu", run.cpus.actuators[o]},
         {"first_sightings", run.first_by[o]},
         {"stalls", ob.stalls.summary(run.wall_ns, run.period, run.start)},
         {"core_interrupts",
          measure::interrupt_delta(ob.irq_before, measure::read_interrupts(run.cpus.actuators[o]))},
         {"sched", ob.sched}});
  }
  std::vector<const measure::stall_log*> stall_logs;
  for (const auto& ob : run.observers) stall_logs.push_back(&ob->stalls);
  add_shared_stalls(obs, stall_logs, run.cpus.actuators);
  m["observers"] = obs;
  return m;
}

nlohmann::json loops_result(const loops_run& run, const partition_choice& pc,
                            const std::string& contention, loops_latencies& lat) {
  const loops_settings& s = run.s;
  const int count = run.count;
  const std::string label =
      s.workload + ", " + std::to_string(count) + " loop" + (count == 1 ? "" : "s");
  nlohmann::json r = measure::latency_result(to_string(run.mode), label, contention,
                                             measure::summarize(lat.pooled), lat.processed,
                                             lat.dropped, lat.repeated);
  r["loops"] = count;
  r["workload_per_loop"] = s.workload;
  r["backend"] = s.backend;
  r["partition_sms"] = pc.sms;
  r["ignore_coscheduling"] = pc.ignore_coscheduling;
  r["sms_in_use"] = pc.sms * count;
  // Distinct SMs the partitions' probes reached together: below sms_in_use, partitions share.
  r["sms_reached_by_probes"] = run.reached.size();
  r["per_loop"] = lat.per_loop;
  r["wrong_outputs"] = lat.wrong_total;
  r["unobserved"] = lat.unobserved_total;
  std::int64_t stray = 0;
  for (const auto& ob : run.observers) stray += ob->stray;
  r["stray_outputs"] = stray;
  r["released_per_loop"] = run.total;
  const double wall = static_cast<double>(run.wall_ns) * 1e-9;
  r["host_cpu_cores"] = wall > 0 ? run.cpu_used / wall : 0.0;
  std::set<int> distinct(run.loop_cpus.begin(), run.loop_cpus.end());
  r["host_cores_for_loops"] = distinct.size();
  r["loop_threads"] = run.host_driven ? count : 0;
  nlohmann::json observer_grants = nlohmann::json::array();
  for (const auto& ob : run.observers) observer_grants.push_back(measure::to_json(ob->grant));
  r["threads"] = {{"sensor", measure::to_json(run.sensor_grant)}, {"actuators", observer_grants}};
  if (run.hogs) r["contention_detail"] = run.hogs->to_json();
  double worst_loop_p999 = 0;
  for (const auto& l : lat.per_loop) {
    if (l.contains("p999_us"))
      worst_loop_p999 = std::max(worst_loop_p999, l["p999_us"].get<double>());
  }
  r["worst_loop_p999_us"] = worst_loop_p999;
  // Every latency stays in the statistics above. These say how many of them the measuring
  // threads may have stretched, and how the slowest split between the loop and the rest.
  lat.accounting.write_undisturbed(r);
  r["measurement"] = loops_measurement(run, lat);
  if (s.telemetry) r["breakdown_per_loop"] = lat.breakdowns;
  return r;
}

}  // namespace

nlohmann::json run_config(const loops_settings& s, execution_mode mode, int count,
                          const partition_choice& pc, const std::string& contention,
                          const cpu_plan& cpus, std::ostream& log) {
  loops_run run(s, mode, count, cpus);
  run.make_loops(pc);
  run.start_hogs(contention);
  run.start_loops();
  run.measure_samples();
  run.merge_sightings();
  run.tear_down();
  loops_latencies lat(run);
  for (int i = 0; i < count; ++i) add_loop_latencies(run, i, lat);
  if (lat.pooled.empty()) {
    throw std::runtime_error(std::string(to_string(mode)) + " x" + std::to_string(count) +
                             ": the actuator saw no output");
  }
  nlohmann::json r = loops_result(run, pc, contention, lat);
  log << "loops: " << to_string(mode) << " x" << count << " (" << s.backend << ", " << pc.sms
      << " SMs each, probes reached " << run.reached.size() << " SMs in all): p50 "
      << r["p50_us"].get<double>() << " us, p99.9 " << r["p999_us"].get<double>() << " us, max "
      << r["max_us"].get<double>() << " us, " << r["disturbed"].get<std::int64_t>()
      << " disturbed\n";
  return r;
}

}  // namespace resident::bench::loops_detail
