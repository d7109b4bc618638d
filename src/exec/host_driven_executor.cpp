// The host-driven loop shared by eager and host-graph: a thread that polls the handler's host
// gate, runs one iteration's work and waits for it, sleeping δ on the host when idle.

#include <chrono>
#include <thread>

#include "exec/loop_executor.hpp"
#include "resident/cuda/error.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

host_driven_executor::~host_driven_executor() {
  request_stop();
  if (_thread.joinable()) _thread.join();
}

void host_driven_executor::launch() {
  prepare_launch();
  _thread = std::thread([this] { loop_thread(); });
}

void host_driven_executor::loop_thread() {
  try {
    RESIDENT_CUDA_TRY(cudaSetDevice(options().device));
    // The loop thread launches every iteration: it does so inside the partition, if any.
    const partition::green_context::current_scope in_partition(options().partition.get());
    if (options().on_loop_thread_start) options().on_loop_thread_start();
    const auto& gate = app().handler().host_gate;
    while (!_stop.load(std::memory_order_acquire)) {
      _host_heartbeat.fetch_add(1, std::memory_order_relaxed);
      // The gate reads host memory only (e.g. the sensor's sequence word), so polling it costs
      // no GPU work; the device iteration runs once it says a sample may be there.
      if (gate && !gate(host_load_acquire(res().control()->last_seq), options().policy)) {
        idle_wait();
        continue;
      }
      if (!run_iteration()) idle_wait();
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(_error_mutex);
    _error = std::string(to_string(mode())) + " loop of application '" + app().name() +
             "' failed: " + e.what();
  }
  _exited.store(true, std::memory_order_release);
}

void host_driven_executor::idle_wait() const {
  if (options().idle_sleep_ns > 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(options().idle_sleep_ns));
  }
}

bool host_driven_executor::stopped() {
  if (!_exited.load(std::memory_order_acquire)) return false;
  if (_thread.joinable()) _thread.join();
  return true;
}

std::string host_driven_executor::failure() const {
  std::lock_guard lock(_error_mutex);
  return _error;
}

void host_driven_executor::abandon() noexcept {
  if (_thread.joinable()) _thread.detach();  // it may be blocked in a synchronize forever
  loop_executor::abandon();
}

}  // namespace resident::detail
