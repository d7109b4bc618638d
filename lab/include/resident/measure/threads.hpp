#pragma once
// Core pinning and scheduling for the benchmark's host threads (emulated sensor, actuator, host
// loop) and the cores left over for the contention generator.
//
// A request the OS refuses (SCHED_FIFO without CAP_SYS_NICE, a core outside the cpuset) is not an
// error: configure_current_thread() reports what was granted so the receipt tells the truth.
// Only requests that can never be met (a core that is not online, more roles than cores) throw.
//
// A SCHED_FIFO thread that busy-polls owns its core: nothing of lower priority runs there again
// until it blocks. Give realtime threads a dedicated core. Nothing here changes system settings
// (RT throttling, isolcpus, IRQ affinity); what the machine allows is what you get.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace resident::measure {

/// What the OS actually granted a thread (recorded in benchmark receipts).
struct thread_grant {
  int cpu{-1};  // the core it is pinned to, -1 if not pinned
  bool pinned{false};
  std::string policy;  // "SCHED_FIFO" or "SCHED_OTHER" (or the policy it inherited, by name)
  int priority{0};     // the FIFO priority granted (0 for SCHED_OTHER)
  // Why something was not granted ("SCHED_FIFO refused: Operation not permitted ..."), or a
  // caveat about what was (RT throttling still lends the core to other tasks).
  std::string note;
};

/// {"cpu", "pinned", "policy", "priority", "note"}
[[nodiscard]] nlohmann::json to_json(const thread_grant& g);

/// Pins the calling thread to `cpu` (-1: leave its affinity alone) and, if `realtime`, asks for
/// SCHED_FIFO at `priority`; without `realtime` the thread runs SCHED_OTHER (threads inherit
/// their creator's policy, so a hog started from a FIFO thread would otherwise be FIFO too).
/// Never throws for a refusal: the grant says what happened and why. Throws
/// std::invalid_argument for a cpu that is not online, a cpu below -1, or a realtime priority
/// outside SCHED_FIFO's range (1..99 on Linux).
thread_grant configure_current_thread(int cpu, bool realtime, int priority = 50);

/// Cores online now (sysconf(_SC_NPROCESSORS_ONLN)).
[[nodiscard]] int online_cpus();

/// The online cpus by number, ascending (/sys/devices/system/cpu/online): they need not be
/// 0..online_cpus()-1, since a core can be taken offline.
[[nodiscard]] std::vector<int> online_cpu_list();

/// The process's affinity mask (the main thread's, so a pinned worker still sees the whole
/// set), ascending. A container's cpuset or `taskset` narrows it.
[[nodiscard]] std::vector<int> allowed_cpus();

/// Chooses cores for named roles: returns role -> cpu. A role with cpu >= 0 keeps it (it must be
/// an allowed cpu); a role with -1 gets the highest allowed cpu not already taken, in the order
/// given, so cpu 0, where interrupts usually land, is handed out last. Throws
/// std::invalid_argument when there are more roles than allowed cpus, two roles ask for the same
/// cpu, a fixed cpu is not allowed, or a role name repeats.
[[nodiscard]] std::map<std::string, int> assign_cpus(
    const std::vector<std::pair<std::string, int>>& requested);

/// The allowed cpus minus `used`, ascending (the cores the contention generator may load).
[[nodiscard]] std::vector<int> remaining_cpus(const std::vector<int>& used);

/// Restricts the calling process's affinity mask to `cpus`, so every thread it starts from now
/// on stays off the other cores (benchmarks keep them for their pinned threads). False, with the
/// mask unchanged, when `cpus` is empty or the kernel refuses.
[[nodiscard]] bool confine_process(const std::vector<int>& cpus);

/// Gives the calling thread back the cpus it was allowed when this was made, on leaving the
/// scope: a benchmark that confines the process for its run (confine_process) and runs inside a
/// longer-lived process (the test suite, a tool running several benchmarks) would otherwise leave
/// it confined, and the next run would pick its cores from what is left.
class affinity_restorer {
 public:
  affinity_restorer() : _saved(allowed_cpus()) {}
  ~affinity_restorer() {
    if (!_saved.empty()) (void)confine_process(_saved);
  }
  affinity_restorer(const affinity_restorer&) = delete;
  affinity_restorer& operator=(const affinity_restorer&) = delete;

 private:
  std::vector<int> _saved;
};

/// "0,2,3" (empty: "none"): for messages and descriptions.
[[nodiscard]] std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace resident::measure
