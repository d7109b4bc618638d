#pragma once
// The one interface every execution mode implements. A mode is one file in src/exec/; the modes
// share the capture step (src/exec/capture.hpp) and the loop kernels (src/exec/loop_kernels.cu).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "resident/exec/mode.hpp"
#include "resident/exec/run_options.hpp"

namespace resident {

class Application;

/// Exact counters of one loop (docs/design.md, "Data ready"). In every snapshot
/// processed + dropped == last_seq - start_seq: each sample after the start up to the last one
/// processed was either processed once or skipped over. `repeated` counts extra DAG runs on an
/// already processed sample; `iterations` counts controller passes (idle ones included).
struct loop_counters {
  std::uint64_t iterations{};
  std::uint64_t processed{};
  std::uint64_t dropped{};
  std::uint64_t repeated{};
  std::uint64_t last_seq{};
  std::uint64_t start_seq{};  // the handler's start_after() at launch
  // Response times of processed samples on the device clock (run_options::deadline): release
  // -> commit, and arrival -> commit where the handler knows the arrival (0 where it never did).
  std::uint64_t max_response_ns{};          // the longest release -> commit seen
  std::uint64_t deadline_misses{};          // release -> commit longer than the deadline
  std::uint64_t worst_overrun_ns{};         // the most a response exceeded the deadline by
  std::uint64_t max_arrival_response_ns{};  // the longest arrival -> commit seen
  std::uint64_t arrival_deadline_misses{};  // arrival -> commit longer than the deadline
  std::uint64_t worst_arrival_overrun_ns{};
};

/// Device time of one phase of a persistent DAG pass (run_options::phase_times): from the
/// barrier that ended the phase before to the one that ended this one, as the kernel's first
/// thread saw them, so a phase includes the wait for its slowest block and the barrier itself.
struct phase_time {
  std::string op;           // the operator, or "(end marker)" / "(closing barrier)"
  std::string form;         // its device form ("demosaic", ...); empty for the framework's steps
  unsigned phase{0};        // the form's phase
  std::uint64_t passes{0};  // DAG passes summarized (at most the latest phase_rows - 1)
  double mean_ns{0};
  double p50_ns{0};
  double p99_ns{0};
  double max_ns{0};
};

/// One loop of an Application in one mode. The executor takes what the loop touches from the
/// Application when it is built (operators, port memory), so it never depends on the
/// Application staying alive. Destroying an executor whose loop runs tears the loop down first
/// (waiting a bounded time; a loop that does not stop is abandoned, see abandon()).
class Executor {
 public:
  virtual ~Executor() = default;
  [[nodiscard]] virtual execution_mode mode() const noexcept = 0;
  /// Starts the loop; returns once it runs. Throws on any CUDA or validation failure.
  virtual void launch() = 0;
  /// Asks the loop to stop at its next iteration boundary (never blocks).
  virtual void request_stop() noexcept = 0;
  /// True once the loop has exited and its work completed. Throws if the loop failed.
  [[nodiscard]] virtual bool stopped() = 0;
  /// Device-side failure recorded by the loop (empty if none). Never throws.
  [[nodiscard]] virtual std::string failure() const = 0;
  /// Gives the loop up without waiting for it: memory the GPU may still touch (the loop's own,
  /// the operators' and the port memory) is left allocated for the rest of the process, a
  /// host loop thread is detached and keeps what it uses until it exits. The executor may be
  /// destroyed right after. For a loop that did not stop within its tear-down timeout.
  virtual void abandon() noexcept = 0;
  [[nodiscard]] virtual loop_counters counters() const noexcept = 0;
  /// Advances while the loop is alive (controller passes, or host poll rounds).
  [[nodiscard]] virtual std::uint64_t heartbeat() const noexcept = 0;
  /// Writes the built graph(s) as Graphviz DOT.
  virtual void write_dot(const std::string& path) const = 0;
  /// Moves new telemetry entries from the device ring to the host (supervisor thread and
  /// tear-down only; never on the loop's critical path). Unless `force`, it returns without a
  /// CUDA call while the ring is less than half full.
  virtual void drain_telemetry(bool force) = 0;
  [[nodiscard]] virtual const std::vector<telemetry_entry>& telemetry() const noexcept = 0;
  /// Entries lost because the ring wrapped before a drain, or the host buffer was full.
  [[nodiscard]] virtual std::uint64_t telemetry_lost() const noexcept = 0;
  /// Mean controller-pass period on the device clock (ns), once stopped; 0 if unknown.
  [[nodiscard]] virtual double mean_iteration_ns() = 0;
  /// SM ids the loop's own kernels ran on (run_options::record_sms), read from the device.
  [[nodiscard]] virtual std::vector<int> sms_seen() = 0;
  /// run_options::phase_times, once stopped (persistent mode; empty otherwise).
  [[nodiscard]] virtual std::vector<phase_time> phase_times() { return {}; }
};

/// Builds the executor for `mode` (captures the application's graphs; does not launch).
/// Throws composition_error when the mode cannot hold the application.
[[nodiscard]] std::unique_ptr<Executor> make_executor(Application& app, execution_mode mode,
                                                      const run_options& options);

}  // namespace resident
