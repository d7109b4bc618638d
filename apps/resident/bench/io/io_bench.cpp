#include "bench/io/io_bench.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
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
#include <utility>

#include "bench/common.hpp"
#include "bench/workloads.hpp"
#include "peers/peers.hpp"
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
  if (mailbox_formats.empty()) {
    throw std::invalid_argument("--mailbox-formats: name at least one format");
  }
  for (const auto& f : mailbox_formats) (void)io::parse_mailbox_format(f);
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
  for (const auto& p : peers) (void)peers::parse_peer(p);
  if (repeats < 1 || repeats > 10) {
    throw std::invalid_argument("--repeats must be in 1..10, got " + std::to_string(repeats));
  }
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

/// One configuration's run, step by step: the loop, the observers and the sensor, what they saw.
struct io_run {
  io_run(const io_settings& settings, const std::map<std::string, int>& roles, io_app& a,
         execution_mode m, std::optional<peers::peer_kind> peer_of = {})
      : s(settings),
        cpus(roles),
        app(a),
        mode(m),
        peer_kind(peer_of),
        total(static_cast<std::size_t>(settings.warmup + settings.samples)),
        samples(total),
        period(static_cast<std::int64_t>(1e9 / settings.rate_hz)) {}

  const io_settings& s;
  const std::map<std::string, int>& cpus;
  io_app& app;
  execution_mode mode;
  std::optional<peers::peer_kind> peer_kind;  // set: a hand-written peer runs instead of `mode`
  std::size_t total;
  sample_log samples;
  std::int64_t period;
  measure::thread_grant loop_grant;
  std::unique_ptr<run_handle> handle;
  std::unique_ptr<peers::peer_loop> peer;
  std::uint64_t base{0};
  std::atomic<bool> stop{false};
  measure::thread_grant sensor_grant;
  nlohmann::json sensor_sched;
  std::vector<std::unique_ptr<io_observer>> observers;
  // The interrupts the measuring threads' cores took: what disturbed samples ran into; and
  // where their cores' time went (steal: the hypervisor ran something else there).
  std::map<std::string, std::map<std::string, std::uint64_t>> irq0, times0;
  std::int64_t start{0};
  double cpu0{0};
  std::int64_t wall0{0};
  std::vector<std::int64_t> first_by;  // sightings each observer made first
  std::int64_t stray{0};
  double cpu_used{0};
  std::int64_t wall_ns{0};
  nlohmann::json interrupts = nlohmann::json::object();
  nlohmann::json core_times = nlohmann::json::object();
  tear_down_report report;

  /// The mode's name, or the peer's ("peer-while", ...).
  [[nodiscard]] std::string label() const {
    return peer_kind ? "peer-" + std::string(peers::to_string(*peer_kind))
                     : std::string(to_string(mode));
  }
  /// Whether a host thread drives the loop (its core's interrupts and times are reported).
  [[nodiscard]] bool has_loop_thread() const {
    return peer_kind ? *peer_kind == peers::peer_kind::host_graph : !is_resident(mode);
  }
  [[nodiscard]] const std::vector<telemetry_entry>& telemetry() const {
    static const std::vector<telemetry_entry> none;
    return handle ? handle->telemetry() : none;
  }

  void start_peer() {
    peers::peer_config c;
    c.kind = *peer_kind;
    c.body = app.workload() == "empty" ? peers::peer_body::empty : peers::peer_body::matmul6;
    c.poll_ns = s.poll_ns;
    c.on_loop_thread_start = [this] {
      loop_grant = measure::configure_current_thread(cpus.at("loop"), s.realtime);
    };
    peer = std::make_unique<peers::peer_loop>(app.mailbox(), std::move(c));
    base = app.mailbox().published();
    peer->start();
  }

  void start_loop() {
    if (peer_kind) {
      start_peer();
      return;
    }
    run_options options;
    options.policy = sample_policy::skip_duplicate;
    options.idle_sleep_ns = s.sleep_ns;
    options.poll_ns = s.poll_ns;
    options.fuse = s.fuse;
    options.telemetry_samples = total + 64;
    options.stall_timeout = std::max<std::chrono::milliseconds>(
        2000ms, std::chrono::milliseconds(4 * (s.sleep_ns + s.poll_ns) / 1'000'000 + 1));
    options.on_loop_thread_start = [this] {
      loop_grant = measure::configure_current_thread(cpus.at("loop"), s.realtime);
    };
    handle = run_async(app, mode, options);
    base = app.mailbox().published();
  }

  void prepare_observers() {
    for (const auto& [role, cpu] : cpus) {
      if (role.rfind("actuator", 0) != 0) continue;
      observers.push_back(std::make_unique<io_observer>(total));
      observers.back()->cpu = cpu;
    }
    for (const auto& [role, cpu] : cpus) irq0[role] = measure::read_interrupts(cpu);
    for (const auto& [role, cpu] : cpus) times0[role] = measure::read_cpu_times(cpu);
    start = now_ns() + 5'000'000;  // let the actuator settle first
    cpu0 = cpu_seconds();
    wall0 = now_ns();
  }

  void observe(io_observer& ob) {
    io::mailbox& mb = app.mailbox();
    ob.grant = measure::configure_current_thread(ob.cpu, s.realtime);
    const measure::thread_sched sched0 = measure::read_thread_sched();
    // The poll reads the one word the egress writes last (its commit number): it changes
    // exactly when an output is whole, and a read of it never waits out a commit in progress,
    // which a read of the whole stamp does (its retries would count as poll gap).
    std::uint64_t last = mb.output_commit();
    std::array<std::byte, 8> out{};
    // Clock read just before the last read that found the output unchanged: an output seen
    // now landed after it, so `t - polled` bounds how late the sighting can be. (Taken
    // after the read instead, a preemption between the two would hide in the bound.)
    std::int64_t polled = now_ns();
    std::int64_t previous = polled;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::int64_t before = now_ns();
      if (before - previous > s.disturbance_ns) ob.stalls.record(previous, before - previous);
      previous = before;
      const std::uint64_t commit = mb.output_commit();
      if (commit == last) {
        polled = before;
        cpu_relax();
        continue;
      }
      const std::int64_t t = now_ns();  // first sight of this output
      const io::output_stamp got = mb.read_output(out);
      // A newer commit overtook the one seen: the next poll sees that one (later, so its bound
      // stays honest); the one overtaken was not identified, as if never seen.
      if (got.commit != commit) continue;
      const std::uint64_t seq = got.seq;
      const std::uint64_t i = seq - base;
      if (seq > base && i <= total && ob.seen_ns[i] < 0) {
        ob.seen_ns[i] = t;
        ob.poll_gap_ns[i] = t - polled;
        if (!app.output_matches(io_app::token(seq), out)) ob.wrong[i] = 1;
      } else {
        ++ob.stray;
      }
      last = commit;
      polled = now_ns();  // nothing newer than this commit was checked for before this
    }
    ob.sched = measure::sched_delta(sched0, measure::read_thread_sched());
  }

  void release() {
    io::mailbox& mb = app.mailbox();
    sensor_grant = measure::configure_current_thread(cpus.at("sensor"), s.realtime);
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
  }

  void measure_samples() {
    std::vector<stopping_thread> actuators;
    actuators.reserve(observers.size());
    for (auto& ob : observers) {
      actuators.emplace_back([this] { stop = true; }, [this, o = ob.get()] { observe(*o); });
    }
    stopping_thread sensor([] {}, [this] { release(); });
    sensor.join();
    if (peer) {
      const std::int64_t deadline = now_ns() + 2'000'000'000;
      while (peer->last_seq() < base + total && now_ns() < deadline) {
        std::this_thread::sleep_for(50us);
      }
    } else {
      wait_for_sample(*handle, base + total, 2'000'000'000);
    }
    std::this_thread::sleep_for(2ms);  // the final output reaches the actuator
    stop = true;
    for (auto& a : actuators) a.join();
  }

  /// Each sample's sighting: the earliest observer's, with its poll gap; a wrong output seen by
  /// any observer counts.
  void merge_sightings() {
    first_by.assign(observers.size(), 0);
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
      if (i > static_cast<std::size_t>(s.warmup)) ++first_by[best];
    }
    for (const auto& ob : observers) stray += ob->stray;
  }

  /// The process's CPU time and the measuring cores' interrupts and times over the run, then
  /// the loop torn down.
  void finish() {
    cpu_used = cpu_seconds() - cpu0;
    wall_ns = now_ns() - wall0;
    const long ticks = sysconf(_SC_CLK_TCK);
    for (const auto& [role, cpu] : cpus) {
      if (role == "loop" && !has_loop_thread()) continue;  // nothing of the loop ran there
      interrupts[role] = measure::interrupt_delta(irq0[role], measure::read_interrupts(cpu));
      core_times[role] =
          measure::cpu_time_delta_ms(times0[role], measure::read_cpu_times(cpu), ticks);
    }
    if (peer) {
      report.stopped = peer->stop(2000ms);
      report.counters.start_seq = base;
      report.counters.last_seq = peer->last_seq();
      report.counters.processed = peer->processed();
      // Skip-duplicate: every sample between the start and the last one taken was processed or
      // passed over for a newer one.
      report.counters.dropped = report.counters.last_seq - base - report.counters.processed;
      if (!report.stopped) report.error = label() + " did not stop within 2 s";
    } else {
      report = handle->tear_down();
    }
    if (!report.stopped || !report.error.empty()) {
      throw std::runtime_error(label() + " loop: " + report.error);
    }
  }
};

/// The result's `measurement`: the accounting's, the measuring cores' interrupts and times, the
/// sensor's scheduling, and per observer its first sightings, stalls and scheduling.
nlohmann::json io_measurement(const io_run& run, const sample_accounting& accounting) {
  nlohmann::json m = accounting.measurement(
      "a sample is disturbed when the sensor took longer than the threshold to publish it "
      "(clock read before and after) or the previous poll of the observer that saw it "
      "first was longer than the threshold before it saw the output; in_loop: the device's "
      "detect -> commit (%globaltimer), outside: the rest of the same sample's latency; "
      "slowest: the slowest samples, each split against the sample before it",
      false);
  m["core_interrupts"] = run.interrupts;
  m["core_time_ms"] = run.core_times;
  m["sensor_sched"] = run.sensor_sched;
  nlohmann::json obs = nlohmann::json::array();
  for (std::size_t o = 0; o < run.observers.size(); ++o) {
    const io_observer& ob = *run.observers[o];
    obs.push_back({{"cpu", ob.cpu},
                   {"first_sightings", run.first_by[o]},
                   {"stalls", ob.stalls.summary(run.wall_ns, run.period, run.start)},
                   {"sched", ob.sched}});
  }
  std::vector<const measure::stall_log*> stall_logs;
  std::vector<int> observer_cpus;
  for (const auto& ob : run.observers) {
    stall_logs.push_back(&ob->stalls);
    observer_cpus.push_back(ob->cpu);
  }
  add_shared_stalls(obs, stall_logs, observer_cpus);
  m["observers"] = obs;
  return m;
}

nlohmann::json io_result(const io_run& run, const std::string& contention,
                         measure::csv_writer* csv) {
  const io_settings& s = run.s;
  std::vector<double> latencies;
  latencies.reserve(static_cast<std::size_t>(s.samples));
  const std::vector<device_stamps> stamps = stamps_by_sample(run.telemetry(), run.base, run.total);
  sample_accounting accounting(s.disturbance_ns);
  std::int64_t unobserved = 0;
  std::int64_t wrong = 0;
  for (std::size_t i = static_cast<std::size_t>(s.warmup) + 1; i <= run.total; ++i) {
    if (run.samples.seen_ns[i] < 0) {
      ++unobserved;
      continue;
    }
    const double us = static_cast<double>(run.samples.seen_ns[i] - run.samples.release_ns[i].load(
                                                                       std::memory_order_acquire)) /
                      1000.0;
    latencies.push_back(us);
    accounting.add(0, run.samples, stamps, i, us);
    wrong += run.samples.wrong[i];
    if (csv != nullptr) {
      csv->row({run.label(), run.app.label(), contention, std::to_string(run.base + i),
                std::to_string(us)});
    }
  }
  if (latencies.empty()) {
    throw std::runtime_error(run.label() + ": the actuator saw no output");
  }
  const tear_down_report& report = run.report;
  nlohmann::json result = measure::latency_result(
      run.label(), run.app.label(), contention, measure::summarize(latencies),
      report.counters.processed, report.counters.dropped, report.counters.repeated);
  const double wall = static_cast<double>(run.wall_ns) * 1e-9;
  result["released"] = run.total;
  result["warmup"] = s.warmup;
  result["unobserved"] = unobserved;
  result["wrong_outputs"] = wrong;
  result["stray_outputs"] = run.stray;
  result["host_cpu_cores"] = wall > 0 ? run.cpu_used / wall : 0.0;
  result["mean_iteration_us"] = report.mean_iteration_ns / 1000.0;
  add_response_fields(result, report.counters);
  // Every latency stays in the statistics above. These say how many of them the measuring
  // threads themselves may have stretched, and what the rest look like.
  accounting.write_undisturbed(result);
  result["measurement"] = io_measurement(run, accounting);
  result["breakdown"] =
      telemetry_breakdown(run.telemetry(), run.base + s.warmup + 1, run.base + run.total);
  result["telemetry_lost"] = run.handle ? run.handle->telemetry_lost() : 0;
  nlohmann::json threads = {{"sensor", measure::to_json(run.sensor_grant)}};
  for (const auto& ob : run.observers) threads["actuators"].push_back(measure::to_json(ob->grant));
  if (run.has_loop_thread()) threads["loop"] = measure::to_json(run.loop_grant);
  result["threads"] = threads;
  return result;
}

class io_runner {
 public:
  io_runner(const io_settings& s, std::map<std::string, int> cpus, std::ostream& log)
      : _s(s), _cpus(std::move(cpus)), _log(log) {}

  nlohmann::json run(io_app& app, execution_mode mode, const std::string& contention,
                     measure::csv_writer* csv, std::optional<peers::peer_kind> peer = {}) {
    io_run run(_s, _cpus, app, mode, peer);
    run.start_loop();
    run.prepare_observers();
    run.measure_samples();
    run.merge_sightings();
    run.finish();
    return io_result(run, contention, csv);
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

/// One workload at one contention level, once: every mode, then every peer, each result tagged
/// with `repeat`.
void run_level(const io_settings& s, io_runner& runner, io_app& app, const std::string& level,
               int repeat, const measure::contention_generator* hogs, measure::csv_writer* csv,
               measure::receipt& receipt, std::ostream& log) {
  const std::string& workload = app.workload();
  const auto finish = [&](nlohmann::json result) {
    result["repeat"] = repeat;
    if (hogs != nullptr) result["contention_detail"] = hogs->to_json();
    log << " p50 " << fixed(result["p50_us"]) << " us, max " << fixed(result["max_us"]) << " us\n";
    receipt.results.push_back(std::move(result));
  };
  for (const auto& mode_name : s.modes) {
    const execution_mode mode = parse_execution_mode(mode_name);
    if (mode == execution_mode::persistent && workload != "empty") {
      // matmul6's cuBLAS products have no device form (a kernel cannot call cuBLAS).
      log << "io: " << workload << " / " << level << " / persistent: skipped (no device "
          << "form for cuBLAS)\n";
      continue;
    }
    log << "io: " << workload << " / " << level << " / " << mode_name << " ..." << std::flush;
    finish(runner.run(app, mode, level, csv));
  }
  for (const auto& peer_name : s.peers) {
    const peers::peer_kind kind = peers::parse_peer(peer_name);
    if (kind == peers::peer_kind::persistent && workload != "empty") continue;
    log << "io: " << workload << " / " << level << " / peer-" << peer_name << " ..." << std::flush;
    nlohmann::json result = runner.run(app, execution_mode::eager, level, csv, kind);
    result["peer"] = true;
    finish(std::move(result));
  }
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
                      {"fuse", s.fuse},
                      {"policy", "skip-duplicate"},
                      {"modes", s.modes},
                      {"workloads", s.workloads},
                      {"mailbox_formats", s.mailbox_formats},
                      {"contention", s.contention},
                      {"realtime_requested", s.realtime},
                      {"cpus", cpus},
                      {"observers", s.observers},
                      {"peers", s.peers},
                      {"repeats", s.repeats},
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

  for (const auto& format : s.mailbox_formats) {
    for (const auto& workload : s.workloads) {
      io_app app(workload, io::parse_mailbox_format(format));
      app.plan();
      for (const auto& level : s.contention) {
        std::unique_ptr<measure::contention_generator> hogs;
        nlohmann::json contention_detail = {{"kind", "none"}};
        if (level == "stress") {
          hogs = measure::start_stress(measure::remaining_cpus(used), s.stress_ng,
                                       "sensor, actuator and loop threads");
        }
        for (int rep = 0; rep < s.repeats; ++rep) {
          run_level(s, runner, app, level, rep, hogs.get(), csv.get(), receipt, log);
        }
        if (hogs) hogs->stop();
      }
    }
  }
  add_peer_ratios(receipt.results);
  receipt.settings["targets"] = io_targets(receipt.results);
  const smi_reading after = read_nvidia_smi();
  if (after.sm_clock_mhz > 0) receipt.device.sm_clock_mhz_seen.push_back(after.sm_clock_mhz);
  return receipt;
}

void add_peer_ratios(nlohmann::json& results) {
  for (auto& r : results) {
    if (r.value("peer", false)) continue;
    const std::string peer_mode = "peer-" + r["mode"].get<std::string>();
    for (const auto& p : results) {
      if (p["mode"] != peer_mode || p["workload"] != r["workload"] ||
          p["contention"] != r["contention"] || p.value("repeat", 0) != r.value("repeat", 0)) {
        continue;
      }
      nlohmann::json ratio = {{"peer", peer_mode}};
      for (const char* key : {"mean_us", "p99_us", "p999_us", "jitter_us"}) {
        const double peer_value = p[key].get<double>();
        ratio[key] = peer_value > 0 ? r[key].get<double>() / peer_value : 0.0;
      }
      r["vs_peer"] = ratio;
    }
  }
}

namespace {

/// Every repeat of one configuration.
std::vector<const nlohmann::json*> find_io_results(const nlohmann::json& results,
                                                   const std::string& mode,
                                                   const std::string& workload,
                                                   const std::string& contention) {
  std::vector<const nlohmann::json*> out;
  for (const auto& r : results) {
    if (r.value("mode", "") == mode && r.value("workload", "") == workload &&
        r.value("contention", "") == contention) {
      out.push_back(&r);
    }
  }
  return out;
}

/// The median over the repeats of `value(result)`, for the results that have it.
template <class Value>
std::optional<double> median_over(const std::vector<const nlohmann::json*>& runs, Value value) {
  std::vector<double> v;
  for (const nlohmann::json* r : runs) {
    if (const std::optional<double> x = value(*r)) v.push_back(*x);
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<double> field_of(const nlohmann::json& r, const char* key) {
  return r.contains(key) ? std::optional<double>(r[key].get<double>()) : std::nullopt;
}

nlohmann::json judged(const std::string& name, std::optional<double> value, double limit,
                      bool at_most) {
  nlohmann::json t = {{"name", name}, {"limit", limit}};
  if (!value) {
    t["value"] = nullptr;
    t["met"] = nullptr;
    return t;
  }
  t["value"] = *value;
  t["met"] = at_most ? *value <= limit : *value < limit;
  return t;
}

/// resident / peer for `key` in one quiet configuration, the median over its repeats.
std::optional<double> peer_ratio(const nlohmann::json& results, const std::string& mode,
                                 const std::string& workload, const char* key) {
  return median_over(find_io_results(results, mode, workload, "none"),
                     [&](const nlohmann::json& r) -> std::optional<double> {
                       if (!r.contains("vs_peer")) return std::nullopt;
                       return r["vs_peer"][key].get<double>();
                     });
}

}  // namespace

nlohmann::json io_targets(const nlohmann::json& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const char* mode : {"while", "tail"}) {
    const std::string m(mode);
    out.push_back(
        judged(m + " empty: mean / peer", peer_ratio(results, m, "empty", "mean_us"), 1.10, true));
    out.push_back(
        judged(m + " empty: p99.9 / peer", peer_ratio(results, m, "empty", "p999_us"), 1.25, true));
  }
  out.push_back(judged("host-graph empty: mean / peer",
                       peer_ratio(results, "host-graph", "empty", "mean_us"), 1.15, true));
  out.push_back(judged("persistent empty: mean / peer",
                       peer_ratio(results, "persistent", "empty", "mean_us"), 1.25, true));
  out.push_back(judged("persistent empty: mean (us)",
                       median_over(find_io_results(results, "persistent", "empty", "none"),
                                   [](const nlohmann::json& r) { return field_of(r, "mean_us"); }),
                       7.0, false));
  for (const char* mode : {"while", "tail", "host-graph"}) {
    const std::string m(mode);
    const auto ratio = peer_ratio(results, m, "matmul6", "mean_us");
    out.push_back(judged(m + " matmul6: |mean / peer - 1|",
                         ratio ? std::optional<double>(std::abs(*ratio - 1.0)) : std::nullopt, 0.03,
                         true));
  }
  const auto jitter = [](const nlohmann::json& r) { return field_of(r, "jitter_us"); };
  const auto quiet = median_over(find_io_results(results, "while", "empty", "none"), jitter);
  const auto stress = median_over(find_io_results(results, "while", "empty", "stress"), jitter);
  std::optional<double> j_ratio;
  if (quiet && stress && *quiet > 0) j_ratio = *stress / *quiet;
  out.push_back(judged("while empty: J under stress / quiet J", j_ratio, 1.5, true));
  // Samples that fit a cache line (the lines format): the mean itself, and at or below the
  // hand-written peer that uses the same format.
  const auto mean = [](const nlohmann::json& r) { return field_of(r, "mean_us"); };
  for (const auto& [mode, limit] :
       {std::pair{"persistent", 6.0}, {"while", 10.0}, {"tail", 10.0}}) {
    const std::string m(mode);
    out.push_back(judged(m + " empty/lines: mean (us)",
                         median_over(find_io_results(results, m, "empty/lines", "none"), mean),
                         limit, true));
    out.push_back(judged(m + " empty/lines: mean / peer",
                         peer_ratio(results, m, "empty/lines", "mean_us"), 1.0, true));
  }
  return out;
}

std::string io_table(const measure::receipt& receipt) {
  std::ostringstream os;
  std::size_t workload_width = 9;
  for (const auto& r : receipt.results) {
    workload_width = std::max(workload_width, r["workload"].get<std::string>().size() + 1);
  }
  const auto ww = static_cast<int>(workload_width);
  os << std::left << std::setw(17) << "mode" << std::setw(ww) << "workload" << std::setw(8)
     << "contend" << std::right << std::setw(8) << "n" << std::setw(9) << "mean" << std::setw(9)
     << "p50" << std::setw(9) << "p99" << std::setw(9) << "p99.9" << std::setw(9) << "max"
     << std::setw(9) << "jitter" << std::setw(8) << "dropped" << std::setw(7) << "wrong"
     << std::setw(11) << "mean/peer"
     << "   (us)\n";
  for (const auto& r : receipt.results) {
    os << std::left << std::setw(17) << r["mode"].get<std::string>() << std::setw(ww)
       << r["workload"].get<std::string>() << std::setw(8) << r["contention"].get<std::string>()
       << std::right << std::setw(8) << r["n"].get<std::int64_t>() << std::setw(9)
       << fixed(r["mean_us"]) << std::setw(9) << fixed(r["p50_us"]) << std::setw(9)
       << fixed(r["p99_us"]) << std::setw(9) << fixed(r["p999_us"]) << std::setw(9)
       << fixed(r["max_us"]) << std::setw(9) << fixed(r["jitter_us"]) << std::setw(8)
       << r["dropped"].get<std::int64_t>() << std::setw(7) << r["wrong_outputs"].get<std::int64_t>()
       << std::setw(11) << (r.contains("vs_peer") ? fixed(r["vs_peer"]["mean_us"], 2) : "-")
       << "\n";
  }
  if (receipt.settings.contains("targets")) {
    os << "targets:\n";
    for (const auto& t : receipt.settings["targets"]) {
      const char* mark = t["met"].is_null() ? "-     " : t["met"].get<bool>() ? "MET   " : "MISSED";
      os << "  " << mark << " " << t["name"].get<std::string>() << ": "
         << (t["value"].is_null() ? std::string("not run") : fixed(t["value"], 3)) << " (limit "
         << fixed(t["limit"], 2) << ")\n";
    }
  }
  return os.str();
}

}  // namespace resident::bench
