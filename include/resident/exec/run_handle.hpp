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

struct loop_request;

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
  friend std::vector<std::unique_ptr<run_handle>> run_together(std::vector<loop_request> loops);
  struct build_only {};
  /// Builds the loop without launching it (run_together launches it later with launch()).
  run_handle(Application& app, execution_mode mode, run_options options, build_only);
  void launch();

  Application::run_guard _guard;
  execution_mode _mode;
  std::string _name;
  run_options _options;              // until launch(), which hands them to the supervisor
  std::unique_ptr<Executor> _built;  // built, not launched yet (run_together only)
  std::unique_ptr<detail::supervised_loop> _loop;  // set once launched
};

/// Builds the executor for `mode`, launches the loop and starts its supervisor.
[[nodiscard]] std::unique_ptr<run_handle> run_async(Application& app, execution_mode mode,
                                                    run_options options = {});

/// One loop of run_together.
struct loop_request {
  Application* app{nullptr};
  execution_mode mode{execution_mode::while_loop};
  run_options options{};
};

/// Several loops of one program, set up before any of them runs: every loop is built first (its
/// memory, captures, graph instantiation and upload), then the loops are launched in the order
/// given, each with its supervisor. Prefer it to run_async one loop after another: a set-up
/// beside a loop that already runs can wait for the device to go idle, which it never does
/// (CUDA graph instantiation of PyTorch graphs beside a running loop did, docs/findings.md
/// "Correctness"), and a loop launched before its consumers loses the samples it sends them
/// first. So put consumers before producers. If a build fails, nothing was launched; if a
/// launch fails, the loops already launched are torn down first, then everything is freed, and
/// the error names the loop. Each application at most once.
[[nodiscard]] std::vector<std::unique_ptr<run_handle>> run_together(
    std::vector<loop_request> loops);

}  // namespace resident
