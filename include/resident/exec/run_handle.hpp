#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "resident/app/application.hpp"
#include "resident/exec/executor.hpp"

namespace resident {

struct tear_down_report {
  bool stopped{false};                 // the loop exited within the timeout
  std::chrono::nanoseconds elapsed{};  // from the request to the loop's exit (or the timeout)
  loop_counters counters;              // exact once stopped
  std::string error;                   // why the loop failed or did not stop; empty when fine
  double mean_iteration_ns{0};         // mean controller-pass period, device clock (0: unknown)
  std::vector<phase_time> phases;      // run_options::phase_times (persistent mode), in order
};

struct loop_health {
  bool launched{false};
  bool stalled{false};           // heartbeat frozen longer than the stall timeout right now
  std::uint64_t stall_events{};  // stalls detected so far
  std::string message;           // the latest stall or failure description
};

namespace detail {
class supervised_loop;
}

/// A running loop. Tears the loop down on destruction if the caller has not. The application
/// stays reserved for this run until the handle is destroyed (its graphs, telemetry and counters
/// live until then). Destroy a handle while no other loop runs: freeing its device memory
/// (cudaFree) waits for every kernel on the device, and a resident loop's never ends by itself.
///
/// A supervisor thread watches the loop (heartbeat, stalls, device failures, telemetry drain).
/// Nothing it calls out to ends the process: an exception from run_options::on_stall, or from
/// reading the loop's failure state, is caught, printed to stderr and kept in health().message,
/// and the supervision goes on. counters(), health() and is_launched() may be called from any
/// thread, during tear_down() too (also when it times out and abandons the loop); the other
/// calls belong to the handle's owner.
class run_handle {
 public:
  run_handle(Application& app, execution_mode mode, run_options options);
  run_handle(const run_handle&) = delete;
  run_handle& operator=(const run_handle&) = delete;
  ~run_handle();

  [[nodiscard]] bool is_launched() const noexcept;
  [[nodiscard]] execution_mode mode() const noexcept { return _mode; }
  /// Live counters: a snapshot that satisfies loop_counters' invariant while the loop runs;
  /// exact after tear-down.
  [[nodiscard]] loop_counters counters() const noexcept;
  [[nodiscard]] loop_health health() const;
  /// Requests the stop and waits up to `timeout`. A loop that does not stop is reported (and its
  /// resources abandoned rather than freed under the GPU's feet), never waited on forever.
  [[nodiscard]] tear_down_report tear_down(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
  /// Writes the loop's CUDA graph(s) as DOT; throws once the loop was abandoned.
  void write_dot(const std::string& path) const;
  /// Telemetry drained so far (complete after tear-down); see run_options::telemetry_samples.
  [[nodiscard]] const std::vector<telemetry_entry>& telemetry() const noexcept;
  /// SM ids the loop's handler, controller and end-marker kernels ran on (needs
  /// run_options::record_sms; read from the device: call after tear_down()).
  [[nodiscard]] std::vector<int> sms_seen() const;
  [[nodiscard]] std::uint64_t telemetry_lost() const noexcept;

 private:
  Application::run_guard _guard;
  execution_mode _mode;
  std::unique_ptr<detail::supervised_loop> _loop;
};

/// Builds the executor for `mode`, launches the loop and starts its supervisor.
[[nodiscard]] std::unique_ptr<run_handle> run_async(Application& app, execution_mode mode,
                                                    run_options options = {});

}  // namespace resident
