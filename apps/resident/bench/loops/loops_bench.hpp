#pragma once
// resident bench loops: N concurrent loops, each its own application with its own emulated I/O
// pair and matmul workload, each confined to its own SM partition; `while` against
// `host-graph` (one host thread per host-driven loop). Per-loop and pooled latency. Partitions
// are green contexts (disjoint SM sets) or, with --backend mps, MPS contexts with SM budgets.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "resident/measure/receipt.hpp"

namespace resident::bench {

struct loops_settings {
  std::vector<int> counts{1, 5, 10, 15, 20};
  std::vector<std::string> modes{"while", "host-graph"};
  std::vector<std::string> contention{"none"};
  std::string workload{"matmul256x2"};  // per loop; see parse_workload
  int partition_sms{0};          // SMs per loop; 0: the largest equal share for the largest count
  std::string backend{"green"};  // SM partitions: green or mps (partition::partition_backend)
  std::int64_t samples{5000};    // measured per loop and configuration
  std::int64_t warmup{500};
  double rate_hz{1000.0};  // every sensor; the N sensors are phase-staggered by period / N
  std::uint64_t sleep_ns{0};
  std::uint64_t poll_ns{20'000'000};
  /// Cores the host-driven loop threads may use (0: all free cores, one thread per core while
  /// they last). The paper varies this (2, 6, 10 isolated cores for 10 loops).
  int host_cores{0};
  bool realtime{true};
  bool stress_ng{false};
  /// A sample whose sensor publish or actuator poll gap (one actuator round over every loop)
  /// exceeds this is counted as disturbed; see bench io.
  std::int64_t disturbance_ns{10'000};
  /// Device timestamps per sample (the in-loop part of each latency); off for an A/B of their
  /// cost. Host-driven modes file them too.
  bool telemetry{true};
  /// Actuator threads, each on its own core, each polling every loop's output; a sample counts
  /// as seen at the earliest sighting. More than one keeps one observer's lost core (a stall of
  /// the measuring thread, not of the loop) out of the latency. 1..4.
  int observers{2};
  /// GPUs the loops are spread over, round-robin (loop i on device i % devices), each with its
  /// own partitions; identical devices are assumed (the partition size is device 0's choice).
  int devices{1};
  std::string command;

  void make_quick();
  /// Throws std::invalid_argument naming the bad value.
  void validate() const;
};

/// The partition size and split mode for `max_count` loops on `sm_count` SMs: the largest equal
/// share in whole co-scheduled groups (`alignment`), or, when that is below `min_partition`, in
/// the finer groups that ignore co-scheduling (`fine_alignment`, `fine_min`).
struct partition_choice {
  int sms{0};
  bool ignore_coscheduling{false};
};
[[nodiscard]] partition_choice choose_partition(int sm_count, int max_count, int min_partition,
                                                int alignment, int fine_min, int fine_alignment);
/// The SM budget per loop for `max_count` MPS partitions on `sm_count` SMs: the largest equal
/// share, rounded down to an even count (MPS rounds budgets up to its granularity, 2 SMs on the
/// H200, so odd shares would add up to more than the device).
[[nodiscard]] int choose_mps_budget(int sm_count, int max_count);

[[nodiscard]] measure::receipt run_loops_bench(const loops_settings& settings, std::ostream& log);
[[nodiscard]] std::string loops_table(const measure::receipt& receipt);
/// The targets evaluated on a receipt's results, each {name, value, target, met}.
[[nodiscard]] nlohmann::json loops_targets(const nlohmann::json& results);

}  // namespace resident::bench
