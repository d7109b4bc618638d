#pragma once
// Pieces every benchmark shares: clocks, waiting, the device and host facts of a receipt.

#include <array>
#include <atomic>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "resident/exec/run_handle.hpp"
#include "resident/measure/host_noise.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/statistics.hpp"

namespace resident::bench {

/// CLOCK_MONOTONIC in nanoseconds (the clock docs/design.md names for sensor and actuator times).
inline std::int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// A thread joined when its scope ends, asked to stop first (`stop`, e.g. setting the flag its
/// body polls): an exception on the thread that started it (a loop's set-up refused, a
/// tear-down that throws) then ends the run with its message instead of std::terminate on a
/// joinable std::thread. An exception escaping `body` itself still terminates: catch inside.
class stopping_thread {
 public:
  stopping_thread(std::function<void()> stop, std::function<void()> body)
      : _stop(std::move(stop)), _thread(std::move(body)) {}
  stopping_thread(stopping_thread&&) noexcept = default;   // e.g. in a vector of observers
  stopping_thread& operator=(stopping_thread&&) = delete;  // would drop a running thread
  ~stopping_thread() {
    if (_thread.joinable()) {
      _stop();
      _thread.join();
    }
  }
  /// Waits for the thread to end on its own.
  void join() { _thread.join(); }

 private:
  std::function<void()> _stop;
  std::thread _thread;
};

/// Waits until CLOCK_MONOTONIC reaches `target_ns`: sleeps while far away, spins the last
/// 100 us so the release time does not inherit the scheduler's wake-up latency.
void wait_until(std::int64_t target_ns) noexcept;

/// The GPU's SM clock (MHz) and driver version as nvidia-smi reports them; empty when
/// nvidia-smi is not available.
struct smi_reading {
  int sm_clock_mhz{-1};
  std::string driver;
};
[[nodiscard]] smi_reading read_nvidia_smi();

/// The deadline accounting of a loop's counters into a receipt's result (run_options::deadline;
/// without a deadline the misses are 0 and the longest responses still say what was seen):
/// deadline_misses, worst_overrun_us, max_response_us (release -> commit), and
/// arrival_deadline_misses, max_arrival_response_us (arrival -> commit, where the handler knows
/// the arrival).
void add_response_fields(nlohmann::json& result, const loop_counters& c);

/// Fills the device and host records of a receipt (device 0).
void describe_machine(measure::receipt& receipt);

/// Waits (polling every 100 us) until `handle` has processed sample `seq`, or `timeout_ns` went
/// by; true when it got there. A sample the loop dropped still advances last_seq past it. The
/// benches go on either way: their counters account for a sample that never came out.
bool wait_for_sample(const run_handle& handle, std::uint64_t seq, std::int64_t timeout_ns);

/// User + system CPU time of the whole process, in seconds (getrusage).
[[nodiscard]] double cpu_seconds();

/// The SM ids a partition's bitmap marks (bit s of word s / 32: green_context::sm_mask()), in
/// increasing order.
[[nodiscard]] std::vector<int> sm_ids(const std::array<std::uint32_t, 8>& mask);

/// What the emulated endpoints record for one loop: release and first-sight times and wrong
/// outputs per sample (1-based), sized before the threads start so they never allocate.
/// Also how sure each latency is. The sensor stamps before it publishes and again after: a long
/// publish means its thread lost the CPU in between. It also notes how late it released against
/// its schedule: a late release follows a stall, and the next release then comes early on its
/// heels. The actuator notes when it last polled before the sighting: a long gap means it was
/// off the CPU when the output may have landed.
struct sample_log {
  explicit sample_log(std::size_t total)
      : release_ns(total + 1),
        seen_ns(total + 1, -1),
        wrong(total + 1, 0),
        publish_ns(total + 1, 0),
        late_ns(total + 1, 0),
        poll_gap_ns(total + 1, 0) {}
  std::vector<std::atomic<std::int64_t>> release_ns;  // sensor -> actuator
  std::vector<std::int64_t> seen_ns;                  // actuator only
  std::vector<std::uint8_t> wrong;                    // actuator only
  std::vector<std::int64_t> publish_ns;               // sensor only
  std::vector<std::int64_t> late_ns;                  // sensor only: release - scheduled time
  std::vector<std::int64_t> poll_gap_ns;              // actuator only
};

/// Writes `disturbed` (all minus the undisturbed) and, when any are left, the undisturbed
/// samples' `undisturbed_n`, `_p99_us`, `_p999_us`, `_max_us`, `_stddev_us` and `_jitter_us` into a
/// latency result. Every sample stays in the result's main statistics.
void add_undisturbed(nlohmann::json& result, std::size_t all,
                     const std::vector<double>& undisturbed_us);

/// The in-loop part of each processed sample, from the loop's device timestamps: detect ->
/// controller release -> commit -> end marker, for samples first_seq..last_seq (repeats left
/// out). Summaries of each step under {detect_to_release, release_to_commit,
/// commit_to_end_marker}.
[[nodiscard]] nlohmann::json telemetry_breakdown(const std::vector<telemetry_entry>& entries,
                                                 std::uint64_t first_seq, std::uint64_t last_seq);

/// The device stamps of one sample (0: the loop left no telemetry entry for it).
struct device_stamps {
  std::uint64_t handler_start{0};
  std::uint64_t detect{0};
  std::uint64_t release{0};  // controller end: the DAG released (0: not stamped)
  std::uint64_t commit{0};
  std::uint64_t last_empty_poll{0};  // 0: the handler's first poll found the sample
};

/// One loop's telemetry laid out by sample like a sample_log: entry k holds the stamps of
/// sequence number base + k (k in 1..total; repeats and incomplete entries left at 0).
[[nodiscard]] std::vector<device_stamps> stamps_by_sample(
    const std::vector<telemetry_entry>& entries, std::uint64_t base, std::size_t total);

/// The device's detect -> commit of sample k in microseconds, or a negative value when it has
/// no stamps.
[[nodiscard]] double in_loop_us(const device_stamps& st);

/// Sample k of `log` (a slow one) split against sample k - 1: the ends' records and, when both
/// samples have device stamps, `vs_previous_us` {release_to_detect, detect_to_commit,
/// commit_to_seen}, which add up to the growth of the latency over the previous sample's. Host
/// and device clocks are each only differenced with themselves, so their offset cancels.
/// `handler_polled_us`: how long the handler had been polling when it saw the sample, and
/// `handler_last_read_us` how long its last read (the one that found it) took: a slow read of
/// host memory, against a write that reached the GPU late. `release_late_us`: the sensor's
/// lateness against its schedule; `release_gap_us`: the time since the previous release. When both
/// samples have a release stamp, `in_loop_vs_previous_us` {detect_to_release,
/// release_to_commit} splits the detect_to_commit growth between the controller's side and the
/// DAG's (body and egress).
[[nodiscard]] nlohmann::json split_against_previous(const sample_log& log,
                                                    const std::vector<device_stamps>& stamps,
                                                    std::size_t k);

/// Keeps the `keep` largest (latency, loop, sample) offers without holding every sample twice.
class slowest_samples {
 public:
  explicit slowest_samples(std::size_t keep = 10) : _keep(keep) {}
  void offer(double latency_us, int loop, std::size_t sample);
  /// The kept ones, slowest first.
  [[nodiscard]] std::vector<std::tuple<double, int, std::size_t>> sorted() const;

 private:
  std::size_t _keep;
  std::vector<std::tuple<double, int, std::size_t>> _kept;
};

/// What the latency benches record about each observed sample besides its latency: whether a
/// measuring thread may have stretched it (the sensor's publish or the first sighting's poll
/// gap above the threshold), its in-loop and outside parts, and the slowest samples, split
/// against their predecessors. Each loop's log and stamps must outlive the object.
class sample_accounting {
 public:
  explicit sample_accounting(std::int64_t disturbance_ns) : _threshold_ns(disturbance_ns) {}
  /// Sample k of loop `loop` (0, 1, ...), seen with latency `us`.
  void add(int loop, const sample_log& log, const std::vector<device_stamps>& stamps, std::size_t k,
           double us);
  /// add_undisturbed over every sample added.
  void write_undisturbed(nlohmann::json& result) const;
  /// The result's `measurement`: `method`, threshold_us, sensor_disturbed, actuator_disturbed,
  /// late_releases (later than the threshold), publish_us, release_late_us, poll_gap_us,
  /// in_loop_us, outside_us and slowest (each naming its loop when `name_loops`).
  [[nodiscard]] nlohmann::json measurement(const std::string& method, bool name_loops) const;

 private:
  std::int64_t _threshold_ns;
  std::size_t _all{0};
  std::int64_t _sensor_disturbed{0};
  std::int64_t _actuator_disturbed{0};
  std::vector<double> _undisturbed;
  std::int64_t _late_releases{0};
  std::vector<double> _publish_us;
  std::vector<double> _late_us;
  std::vector<double> _poll_gap_us;
  std::vector<double> _in_loop_us;  // device detect -> commit, per sample with telemetry
  std::vector<double> _outside_us;  // the rest of the same samples' latency
  slowest_samples _slowest;
  std::vector<std::pair<const sample_log*, const std::vector<device_stamps>*>> _loops;
};

/// Stalls at least this long count as long when observers' stalls are compared.
inline constexpr std::int64_t long_stall_ns = 20'000;

/// For each observer o (entry o of the JSON array `observers`, its stall log stalls[o], its
/// cpu cpus[o]): `stalls_shared`, one stall_log::shared_with(long_stall_ns) per other observer,
/// naming that observer's cpu. Long stalls that two observers took at the same moments mean
/// both cores stopped together.
void add_shared_stalls(nlohmann::json& observers,
                       const std::vector<const measure::stall_log*>& stalls,
                       const std::vector<int>& cpus);

/// A compact summary for breakdown tables: {n, mean_us, p50_us, p99_us, max_us}.
[[nodiscard]] nlohmann::json brief(const std::vector<double>& values_us);

}  // namespace resident::bench
