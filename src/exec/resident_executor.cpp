// What while and tail share: a loop the GPU releases, launched once; stopped by the tear-down
// word; torn down by the destructor if the caller did not.

#include <chrono>
#include <cstdio>
#include <thread>

#include "exec/loop_executor.hpp"
#include "resident/cuda/device.hpp"

namespace resident::detail {

namespace {
/// How long a destructor waits for a loop it stops itself (tear_down() takes the caller's own).
constexpr std::chrono::milliseconds destructor_stop_limit{2000};
}  // namespace

resident_executor::resident_executor(Application& app, execution_mode mode,
                                     const run_options& options)
    : loop_executor(app, mode, options) {}

resident_executor::~resident_executor() {
  // The mode's destructor stopped the loop (stop_before_destruction); its graphs are gone now.
  if (_running) leak_loop_memory();
}

void resident_executor::stop_before_destruction() noexcept {
  if (!_running) return;  // never launched, already seen stopped, or abandoned
  request_stop();
  const auto deadline = std::chrono::steady_clock::now() + destructor_stop_limit;
  for (;;) {
    try {
      if (stopped()) return;
    } catch (const std::exception& e) {
      // The loop failed; its stream reported the error. Nothing of it runs any more.
      std::fprintf(stderr, "resident: %s ended with an error at destruction: %s\n",
                   loop_name().c_str(), e.what());
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::fprintf(stderr,
               "resident: the %s did not stop within %lld ms of its executor's destruction; its "
               "memory is left allocated, since the GPU may still use it\n",
               loop_name().c_str(), static_cast<long long>(destructor_stop_limit.count()));
  abandon();
}

void resident_executor::launch() {
  const current_device_guard on_device(options().device);
  prepare_launch();
  launch_graphs();
  _running = true;
}

void resident_executor::request_stop() noexcept {
  host_store_release(res().control()->tear_down, 1U);
}

bool resident_executor::stopped() {
  try {
    // The controller (or end marker) raises `stopped` before the loop's last kernel ends; the
    // stream then drains.
    if (host_load_acquire(res().control()->stopped) == 0U) {
      (void)res().loop_stream.view().ready();  // surfaces an asynchronous error as cuda_error
      return false;
    }
    const bool done = res().loop_stream.view().ready();
    if (done) _running = false;
    return done;
  } catch (...) {
    _running = false;  // the loop's stream failed: nothing of the loop runs any more
    throw;
  }
}

void resident_executor::abandon() noexcept {
  if (!_running) return;
  _running = false;
  leak_graphs();
  leak_loop_memory();
}

}  // namespace resident::detail
