#pragma once
// The supervision and tear-down of one launched loop, behind run_handle: the supervisor thread
// (heartbeat, stalls, failures, telemetry drain) and the bounded tear-down. It knows the loop only
// through the Executor interface, so the unit tests drive it with a host-only executor. Internal:
// not part of the API.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "resident/exec/executor.hpp"
#include "resident/exec/run_handle.hpp"

namespace resident::detail {

/// Owns a launched executor and its supervisor thread. Thread safety: counters(), health() and
/// launched() may be called from any thread at any time, tear_down() included; tear_down(),
/// write_dot(), telemetry() and the rest from one thread (the handle's owner). The executor lives
/// as long as this object, an abandoned one too (abandon() keeps what the GPU may touch; the rest
/// goes at destruction), so no call races its destruction.
class supervised_loop {
 public:
  /// `executor` runs (launch() returned); `name` names the loop in every message.
  supervised_loop(std::unique_ptr<Executor> executor, std::string name, run_options options);
  supervised_loop(const supervised_loop&) = delete;
  supervised_loop& operator=(const supervised_loop&) = delete;
  /// Stops the supervisor thread; the loop itself must have been torn down (tear_down()).
  ~supervised_loop();

  [[nodiscard]] bool launched() const noexcept { return _launched.load(); }
  [[nodiscard]] loop_counters counters() const noexcept;
  [[nodiscard]] loop_health health() const;
  /// run_handle::tear_down. Never throws for the executor's sake: its failures become the
  /// report's error.
  [[nodiscard]] tear_down_report tear_down(std::chrono::milliseconds timeout);
  [[nodiscard]] bool torn_down() const noexcept { return _torn_down; }
  /// The loop did not stop within its tear-down timeout and was given up (Executor::abandon).
  [[nodiscard]] bool abandoned() const noexcept { return _abandoned.load(); }

  void write_dot(const std::string& path) const;
  [[nodiscard]] const std::vector<telemetry_entry>& telemetry() const noexcept;
  [[nodiscard]] std::vector<int> sms_seen() const;
  [[nodiscard]] std::uint64_t telemetry_lost() const noexcept;

 private:
  void supervise();
  void supervise_pass(std::uint64_t& last_beat, std::chrono::steady_clock::time_point& last_change,
                      std::unique_lock<std::mutex>& lock);
  /// The executor's failure(), or why it could not be read (failure() threw).
  [[nodiscard]] std::string failure_text() const;
  /// Calls on_stall (stderr without one); what it threw, if it did (empty otherwise).
  [[nodiscard]] std::string report_stall(const std::string& message) const;
  /// Calls on_deadline_miss when `c` counts more misses than the last call saw (supervisor
  /// thread, then once more at tear-down); what it threw, if it did (empty otherwise).
  [[nodiscard]] std::string report_deadline_misses(const loop_counters& c);
  [[nodiscard]] bool wait_stopped(std::chrono::milliseconds timeout, tear_down_report& report);
  void stop_supervisor();

  std::unique_ptr<Executor> _executor;  // never reset: see the class comment
  std::string _name;
  run_options _options;
  std::atomic<bool> _launched{true};
  std::atomic<bool> _abandoned{false};
  bool _torn_down{false};
  loop_counters _counters_at_tear_down;  // written before _abandoned is set, read after
  std::uint64_t _misses_reported{0};     // supervisor thread, then tear_down after its join

  mutable std::mutex _mutex;
  std::condition_variable _wake;
  bool _supervisor_exit{false};
  loop_health _health;
  std::thread _supervisor;
  static inline const std::vector<telemetry_entry> _no_telemetry{};
};

}  // namespace resident::detail
