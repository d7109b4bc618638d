#pragma once
// What takes a measuring thread off its core. A busy-polling sensor or actuator thread sees its
// own stalls as gaps between consecutive clock reads; stall_log keeps them (without allocating
// while recording) and says how often, how long and at which phase of the sample period they
// came. The interrupts the kernel delivered to that core (/proc/interrupts) say what some of
// them were: timer ticks, inter-processor calls, device interrupts.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace resident::measure {

/// Interrupt counts of one cpu by source, from the text of /proc/interrupts: numbered lines are
/// named "<irq> <description>" (e.g. "24 nvidia"), the others by their mnemonic and description
/// ("LOC Local timer interrupts"). Sources with no column for `cpu` are left out.
[[nodiscard]] std::map<std::string, std::uint64_t> parse_interrupts(std::string_view text, int cpu);
/// parse_interrupts of this machine's /proc/interrupts; empty when it cannot be read.
[[nodiscard]] std::map<std::string, std::uint64_t> read_interrupts(int cpu);
/// {source: after - before} for each source that went up, largest first is left to the reader.
[[nodiscard]] nlohmann::json interrupt_delta(const std::map<std::string, std::uint64_t>& before,
                                             const std::map<std::string, std::uint64_t>& after);

/// Time accounting of one cpu from the text of /proc/stat (its "cpuN" line), in clock ticks by
/// field: user, nice, system, idle, iowait, irq, softirq, steal. `steal` is time the hypervisor
/// gave this virtual cpu to someone else: a stall no scheduler inside the machine can see.
/// Empty when there is no such line.
[[nodiscard]] std::map<std::string, std::uint64_t> parse_cpu_times(std::string_view text, int cpu);
/// parse_cpu_times of this machine's /proc/stat; empty when it cannot be read.
[[nodiscard]] std::map<std::string, std::uint64_t> read_cpu_times(int cpu);
/// {field: (after - before) in milliseconds} for every field, `ticks_per_second` being the
/// kernel's USER_HZ (sysconf(_SC_CLK_TCK)).
[[nodiscard]] nlohmann::json cpu_time_delta_ms(const std::map<std::string, std::uint64_t>& before,
                                               const std::map<std::string, std::uint64_t>& after,
                                               long ticks_per_second);

/// How the scheduler treated one thread so far: context switches it asked for (sleeps, blocking
/// calls) and those forced on it (getrusage RUSAGE_THREAD), and the time it spent runnable but
/// waiting for a cpu (/proc/thread-self/schedstat; -1 when that cannot be read). A polling
/// thread that stalled with no involuntary switch and no run delay lost its cpu below Linux.
struct thread_sched {
  std::int64_t voluntary_switches{0};
  std::int64_t involuntary_switches{0};
  std::int64_t run_delay_ns{-1};
};
/// The calling thread's thread_sched.
[[nodiscard]] thread_sched read_thread_sched();
/// The run_delay (second field) of a schedstat text ("<on-cpu ns> <run delay ns> <slices>"),
/// or -1 when it has none.
[[nodiscard]] std::int64_t parse_schedstat_run_delay(std::string_view text);
/// {voluntary_switches, involuntary_switches, run_delay_us} from `before` to `after` (run
/// delay left out when either side lacks it).
[[nodiscard]] nlohmann::json sched_delta(const thread_sched& before, const thread_sched& after);

/// Stalls of one polling thread: each is the start and length of a gap between two of its clock
/// reads that exceeded the caller's threshold. Storage is taken up front; stalls past capacity
/// are counted, not kept.
class stall_log {
 public:
  explicit stall_log(std::size_t capacity);
  void record(std::int64_t start_ns, std::int64_t length_ns) noexcept {
    if (_count < _start_ns.size()) {
      _start_ns[_count] = start_ns;
      _length_ns[_count] = length_ns;
      ++_count;
    } else {
      ++_lost;
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return _count; }
  [[nodiscard]] std::uint64_t lost() const noexcept { return _lost; }

  /// {count, lost, per_second, total_us, fraction_of_time, max_us, lengths_us (counts per
  /// bucket: "<20", "20-50", "50-100", "100-500", ">=500"), phase (ten counts: where in
  /// [origin + k * period, + period) each stall began)} over a run of `run_ns`.
  [[nodiscard]] nlohmann::json summary(std::int64_t run_ns, std::int64_t period_ns,
                                       std::int64_t origin_ns) const;

  /// Of this log's stalls at least `min_ns` long, how many overlap in time a stall of `other`
  /// at least as long: {min_us, stalls, shared}. Two threads on two cores that lose them at
  /// the same moments point at something that stops both cores together (the hypervisor),
  /// not at either core's own scheduler. Both logs must hold their stalls in time order.
  [[nodiscard]] nlohmann::json shared_with(const stall_log& other, std::int64_t min_ns) const;

 private:
  std::vector<std::int64_t> _start_ns;
  std::vector<std::int64_t> _length_ns;
  std::size_t _count{0};
  std::uint64_t _lost{0};
};

}  // namespace resident::measure
