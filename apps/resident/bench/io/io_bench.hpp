#pragma once
// resident bench io: sensor -> actuator latency through the emulated I/O pair, every mode in
// one process run (so ratios between modes are valid), with and without host contention.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "resident/measure/receipt.hpp"

namespace resident::bench {

struct io_settings {
  std::vector<std::string> modes{"while", "tail", "host-graph", "eager"};
  std::vector<std::string> workloads{"empty", "matmul6"};
  std::vector<std::string> contention{"none", "stress"};
  /// The mailbox's formats to run (io::mailbox_format: automatic, lines, sequence-lock); each
  /// but automatic labels its results' workload ("empty/lines"), and the targets are judged on
  /// the automatic runs (an 8-byte sample: lines).
  std::vector<std::string> mailbox_formats{"automatic"};
  /// Hand-written peers (bench/peers) run after the modes of each workload and contention level;
  /// each mode with a peer of its name gets `vs_peer` ratios (resident / peer). The persistent
  /// peer runs the empty workload only.
  std::vector<std::string> peers;
  /// Runs of every configuration, one after another in the same process (1..10); each target is
  /// judged on the median over them.
  int repeats{1};
  std::int64_t samples{20000};        // measured per configuration
  std::int64_t warmup{1000};          // released and processed first, not measured
  double rate_hz{1000.0};             // sensor release rate
  std::uint64_t sleep_ns{0};          // controller idle sleep δ
  std::uint64_t poll_ns{20'000'000};  // handler in-kernel polling budget (resident modes)
  // A sample whose sensor publish or actuator poll gap exceeds this is counted as disturbed.
  std::int64_t disturbance_ns{2000};
  int sensor_cpu{-1};  // -1: chosen automatically (highest free cores)
  int actuator_cpu{-1};
  int loop_cpu{-1};
  /// Actuator threads (the first on actuator_cpu, the rest on the highest free cores), each
  /// polling the output; a sample counts as seen at the earliest sighting. 1..4.
  int observers{2};
  bool fuse{true};        // run_options::fuse (false: separate controller and end marker, IF kept)
  bool realtime{true};    // ask for SCHED_FIFO for the three pinned threads
  bool stress_ng{false};  // use stress-ng for "stress" instead of the built-in hogs
  std::string csv_path;   // raw samples, when set
  std::string command;    // the exact argv, for the receipt

  /// --quick: every configuration in about 20 s.
  void make_quick();
  /// Throws std::invalid_argument naming the bad value.
  void validate() const;
};

/// Runs every configuration and returns the receipt; prints progress to `log`.
[[nodiscard]] measure::receipt run_io_bench(const io_settings& settings, std::ostream& log);

/// Adds to each resident result of `results` whose peer (same workload, contention and mode
/// name) is there `vs_peer`: resident / peer for mean, p99, p99.9 and jitter.
void add_peer_ratios(nlohmann::json& results);

/// The fast-path targets judged from the results (quiet unless named): `while` and `tail` on
/// `empty` within 1.10x their peer's mean and 1.25x its p99.9, `host-graph` within 1.15x,
/// `persistent` within 1.25x and below 7 us, the `matmul6` means within 3% of their peers', and
/// `while`'s J under stress at most 1.5x its quiet J; each on the median over the repeats. Each
/// {name, value, limit, met}; `met` is null (not judged) when a run it needs is missing.
[[nodiscard]] nlohmann::json io_targets(const nlohmann::json& results);

/// The human table printed last (one row per result).
[[nodiscard]] std::string io_table(const measure::receipt& receipt);

}  // namespace resident::bench
