#include "resident/exec/run_handle.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "resident/cuda/device.hpp"

#include "resident/partition/green_context.hpp"

namespace resident {

namespace {
using clock = std::chrono::steady_clock;

std::string loop_name(const Application& app, execution_mode mode) {
  return std::string(to_string(mode)) + " loop of application '" + app.name() + "'";
}

// Once per process: lazy module loading and a loop that never lets the context go idle do not
// mix (see lazy_module_loading()). Only a note: a program that loads its kernels first is fine.
void note_lazy_loading() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!lazy_module_loading()) return;  // eager, or the driver cannot say
    std::fprintf(stderr,
                 "resident: note: CUDA loads kernels lazily in this process "
                 "(CUDA_MODULE_LOADING is not EAGER). A kernel launched for the first time while "
                 "a resident loop runs may not start until the loop ends. Set "
                 "CUDA_MODULE_LOADING=EAGER before the first CUDA call, or load such kernels "
                 "before run_async (resident::load_kernel).\n");
  });
}
}  // namespace

run_handle::run_handle(Application& app, execution_mode mode, run_options options)
    : _guard(app, std::string(to_string(mode))), _mode(mode), _options(std::move(options)) {
  {
    // Should anything below throw once the loop runs, the executor's destructor stops it.
    // With a partition: its context is current when the build starts. The executor allocates
    // in the device's primary context (current_device_guard), which outlives the partition, and
    // captures and launches on the partition's streams, so every node runs on its SMs.
    partition::green_context::current_scope in_partition(_options.partition.get());
    _executor = make_executor(app, mode, _options);
    _executor->launch();
  }
  if (is_resident(mode)) note_lazy_loading();
  _launched.store(true);
  _health.launched = true;
  _name = loop_name(app, mode);
  _supervisor = std::thread([this] { supervise(); });
}

run_handle::~run_handle() {
  if (!_torn_down) {
    const tear_down_report r = tear_down();
    if (!r.stopped || !r.error.empty()) {
      std::fprintf(stderr, "resident: tear-down at destruction: %s\n", r.error.c_str());
    }
  }
}

loop_health run_handle::health() const {
  std::lock_guard lock(_mutex);
  return _health;
}

void run_handle::supervise() {
  const auto period = std::clamp<std::chrono::milliseconds>(
      _options.stall_timeout / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(50));
  std::uint64_t last_beat = _executor->heartbeat();
  auto last_change = clock::now();
  std::unique_lock lock(_mutex);
  while (!_supervisor_exit) {
    _wake.wait_for(lock, period);
    if (_supervisor_exit) break;
    lock.unlock();
    try {
      _executor->drain_telemetry(false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "resident: draining telemetry failed: %s\n", e.what());
    }
    lock.lock();
    const auto now = clock::now();
    const std::uint64_t beat = _executor->heartbeat();
    std::string failure = _executor->failure();
    if (!failure.empty() && failure != _health.message) {
      _health.message = failure;
      std::fprintf(stderr, "resident: %s\n", failure.c_str());
    }
    if (beat != last_beat) {
      last_beat = beat;
      last_change = now;
      _health.stalled = false;
      continue;
    }
    if (_health.stalled || now - last_change < _options.stall_timeout) continue;
    _health.stalled = true;
    ++_health.stall_events;
    const auto frozen_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_change).count();
    _health.message = "stall: the heartbeat of the " + _name + " has not advanced for " +
                      std::to_string(frozen_ms) + " ms (frozen at " + std::to_string(beat) +
                      "; last processed sample " + std::to_string(_executor->counters().last_seq) +
                      ")";
    const std::string message = _health.message;
    lock.unlock();  // never call out with the lock held
    if (_options.on_stall) {
      _options.on_stall(message);
    } else {
      std::fprintf(stderr, "resident: %s\n", message.c_str());
    }
    lock.lock();
  }
}

tear_down_report run_handle::tear_down(std::chrono::milliseconds timeout) {
  tear_down_report report;
  if (_torn_down) {
    report.error = "the " + _name + " was already torn down";
    report.counters = _counters_at_tear_down;
    return report;
  }
  const auto start = clock::now();
  _executor->request_stop();
  bool timed_out = false;  // as opposed to stopped, or failed (then nothing of it runs)
  for (;;) {
    try {
      if (_executor->stopped()) {
        report.stopped = true;
        break;
      }
    } catch (const std::exception& e) {
      report.error = "the " + _name + " failed: " + e.what();
      break;
    }
    if (clock::now() - start > timeout) {
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  report.elapsed = clock::now() - start;
  {
    std::lock_guard lock(_mutex);
    _supervisor_exit = true;
  }
  _wake.notify_all();
  if (_supervisor.joinable()) _supervisor.join();

  report.counters = _executor->counters();
  _counters_at_tear_down = report.counters;
  if (report.error.empty()) report.error = _executor->failure();
  if (report.stopped && report.error.empty()) {
    try {
      _executor->drain_telemetry(true);
      report.mean_iteration_ns = _executor->mean_iteration_ns();
      report.phases = _executor->phase_times();
    } catch (const std::exception& e) {
      report.error = "the " + _name + " stopped, but reading its telemetry failed: " + e.what();
    }
  }
  if (timed_out && report.error.empty()) {
    report.error = "the " + _name + " did not stop within " + std::to_string(timeout.count()) +
                   " ms of the tear-down request (heartbeat " +
                   std::to_string(_executor->heartbeat()) +
                   "); its resources are abandoned, not freed, since the GPU may still use them";
  }
  if (timed_out) {
    // What the loop may still touch stays allocated; the executor itself can go. The
    // application stays reserved: a new run would share its port memory with this loop.
    _executor->abandon();
    _executor.reset();
    (void)new Application::run_guard(std::move(_guard));
  }
  _launched.store(false);
  _health.launched = false;
  _torn_down = true;
  return report;
}

void run_handle::write_dot(const std::string& path) const {
  if (!_executor) {
    throw execution_error("write_dot: the " + _name + " was abandoned; its graphs are gone");
  }
  _executor->write_dot(path);
}

std::unique_ptr<run_handle> run_async(Application& app, execution_mode mode, run_options options) {
  return std::make_unique<run_handle>(app, mode, std::move(options));
}

}  // namespace resident
