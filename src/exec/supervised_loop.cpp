#include "resident/detail/supervised_loop.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "resident/app/error.hpp"

namespace resident::detail {

namespace {
using clock = std::chrono::steady_clock;

// What an exception from a callout says, for messages: its what(), or that it is no
// std::exception.
std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}
}  // namespace

supervised_loop::supervised_loop(std::unique_ptr<Executor> executor, std::string name,
                                 run_options options)
    : _executor(std::move(executor)), _name(std::move(name)), _options(std::move(options)) {
  _health.launched = true;
  _supervisor = std::thread([this] { supervise(); });
}

supervised_loop::~supervised_loop() { stop_supervisor(); }

loop_counters supervised_loop::counters() const noexcept {
  // The executor outlives this object's every caller, so only which source is read changes.
  return _abandoned.load() ? _counters_at_tear_down : _executor->counters();
}

loop_health supervised_loop::health() const {
  std::lock_guard lock(_mutex);
  return _health;
}

std::string supervised_loop::failure_text() const {
  try {
    return _executor->failure();
  } catch (...) {
    return "reading the failure state of the " + _name +
           " failed: " + what_of(std::current_exception());
  }
}

std::string supervised_loop::report_stall(const std::string& message) const {
  if (!_options.on_stall) {
    std::fprintf(stderr, "resident: %s\n", message.c_str());
    return {};
  }
  try {
    _options.on_stall(message);
    return {};
  } catch (...) {
    // Never out of the supervisor thread (that would end the process): reported, and the
    // supervision goes on.
    std::string text = "the on_stall callback threw: " + what_of(std::current_exception());
    std::fprintf(stderr, "resident: %s: %s\n", _name.c_str(), text.c_str());
    return text;
  }
}

std::string supervised_loop::report_deadline_misses(const loop_counters& c) {
  if (!_options.on_deadline_miss || c.deadline_misses <= _misses_reported) return {};
  _misses_reported = c.deadline_misses;
  try {
    _options.on_deadline_miss(c);
    return {};
  } catch (...) {
    std::string text = "the on_deadline_miss callback threw: " + what_of(std::current_exception());
    std::fprintf(stderr, "resident: %s: %s\n", _name.c_str(), text.c_str());
    return text;
  }
}

void supervised_loop::supervise() {
  const auto period = std::clamp<std::chrono::milliseconds>(
      _options.stall_timeout / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(50));
  std::uint64_t last_beat = _executor->heartbeat();
  auto last_change = clock::now();
  std::unique_lock lock(_mutex);
  while (!_supervisor_exit) {
    _wake.wait_for(lock, period);
    if (_supervisor_exit) break;
    try {
      supervise_pass(last_beat, last_change, lock);
    } catch (...) {
      // Only an allocation can fail here; the next pass tries again.
      if (!lock.owns_lock()) lock.lock();
      _health.message =
          "supervising the " + _name + " failed: " + what_of(std::current_exception());
    }
  }
}

// One pass of the supervisor, entered and left with `lock` held.
void supervised_loop::supervise_pass(std::uint64_t& last_beat, clock::time_point& last_change,
                                     std::unique_lock<std::mutex>& lock) {
  lock.unlock();  // never call out with the lock held
  try {
    _executor->drain_telemetry(false);
  } catch (...) {
    std::fprintf(stderr, "resident: draining telemetry failed: %s\n",
                 what_of(std::current_exception()).c_str());
  }
  const std::string failure = failure_text();
  const std::string miss_error = report_deadline_misses(_executor->counters());
  lock.lock();
  if (!miss_error.empty()) _health.message = miss_error;
  const auto now = clock::now();
  const std::uint64_t beat = _executor->heartbeat();
  if (!failure.empty() && failure != _health.message) {
    _health.message = failure;
    std::fprintf(stderr, "resident: %s\n", failure.c_str());
  }
  if (beat != last_beat) {
    last_beat = beat;
    last_change = now;
    _health.stalled = false;
    return;
  }
  if (_health.stalled || now - last_change < _options.stall_timeout) return;
  _health.stalled = true;
  ++_health.stall_events;
  const auto frozen_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - last_change).count();
  _health.message = "stall: the heartbeat of the " + _name + " has not advanced for " +
                    std::to_string(frozen_ms) + " ms (frozen at " + std::to_string(beat) +
                    "; last processed sample " + std::to_string(_executor->counters().last_seq) +
                    ")";
  const std::string message = _health.message;
  lock.unlock();
  const std::string callback_error = report_stall(message);
  lock.lock();
  if (!callback_error.empty() && _health.message == message) {
    _health.message += " (" + callback_error + ")";
  }
}

void supervised_loop::stop_supervisor() {
  {
    std::lock_guard lock(_mutex);
    _supervisor_exit = true;
  }
  _wake.notify_all();
  if (_supervisor.joinable()) _supervisor.join();
}

// Polls stopped() until the loop exits, fails (then nothing of it runs) or `timeout` passes;
// true when it timed out.
bool supervised_loop::wait_stopped(std::chrono::milliseconds timeout, tear_down_report& report) {
  const auto start = clock::now();
  for (;;) {
    try {
      if (_executor->stopped()) {
        report.stopped = true;
        return false;
      }
    } catch (...) {
      report.error = "the " + _name + " failed: " + what_of(std::current_exception());
      return false;
    }
    if (clock::now() - start > timeout) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

tear_down_report supervised_loop::tear_down(std::chrono::milliseconds timeout) {
  tear_down_report report;
  if (_torn_down) {
    report.error = "the " + _name + " was already torn down";
    report.counters = counters();
    return report;
  }
  const auto start = clock::now();
  _executor->request_stop();
  const bool timed_out = wait_stopped(timeout, report);
  report.elapsed = clock::now() - start;
  stop_supervisor();

  report.counters = _executor->counters();
  if (report.error.empty()) report.error = failure_text();
  // The misses since the supervisor last looked (it has stopped: this thread alone calls it now).
  const std::string miss_error = report_deadline_misses(report.counters);
  if (report.error.empty()) report.error = miss_error;
  if (report.stopped && report.error.empty()) {
    try {
      _executor->drain_telemetry(true);
      report.mean_iteration_ns = _executor->mean_iteration_ns();
      report.phases = _executor->phase_times();
    } catch (...) {
      report.error = "the " + _name + " stopped, but reading its telemetry failed: " +
                     what_of(std::current_exception());
    }
  }
  if (timed_out && report.error.empty()) {
    report.error = "the " + _name + " did not stop within " + std::to_string(timeout.count()) +
                   " ms of the tear-down request (heartbeat " +
                   std::to_string(_executor->heartbeat()) +
                   "); its resources are abandoned, not freed, since the GPU may still use them";
  }
  if (timed_out) {
    // What the loop may still touch stays allocated. The executor object stays too, until this
    // object goes: counters() on another thread may be reading it right now.
    _executor->abandon();
    _counters_at_tear_down = report.counters;
    _abandoned.store(true);
  }
  _launched.store(false);
  {
    std::lock_guard lock(_mutex);
    _health.launched = false;
  }
  _torn_down = true;
  return report;
}

void supervised_loop::write_dot(const std::string& path) const {
  if (_abandoned.load()) {
    throw execution_error("write_dot: the " + _name + " was abandoned; its graphs are gone");
  }
  _executor->write_dot(path);
}

const std::vector<telemetry_entry>& supervised_loop::telemetry() const noexcept {
  return _abandoned.load() ? _no_telemetry : _executor->telemetry();
}

std::vector<int> supervised_loop::sms_seen() const {
  return _abandoned.load() ? std::vector<int>{} : _executor->sms_seen();
}

std::uint64_t supervised_loop::telemetry_lost() const noexcept {
  return _abandoned.load() ? 0 : _executor->telemetry_lost();
}

}  // namespace resident::detail
