// The host-driven loop shared by eager and host-graph: a thread that polls the handler's host
// gate, runs one iteration's work and waits for it, sleeping δ on the host when idle.

#include <chrono>
#include <cstdio>
#include <thread>

#include "exec/loop_executor.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

namespace {
/// How long a destructor waits for a loop thread it stops itself.
constexpr std::chrono::milliseconds destructor_stop_limit{2000};
}  // namespace

/// Everything the loop thread touches. Shared by the executor and the thread, so a thread that
/// was abandoned inside a wait that never returned in time frees it when it finally exits.
struct host_driven_executor::host_loop {
  run_options options;
  std::string name;
  std::function<bool(std::uint64_t, sample_policy)> gate;
  std::shared_ptr<loop_resources> res;
  iteration_fn iteration;
  std::atomic<bool> stop{false};
  std::atomic<bool> exited{false};
  std::atomic<std::uint64_t> heartbeat{0};
  std::mutex error_mutex;
  std::string error;
};

host_driven_executor::~host_driven_executor() {
  if (!_thread.joinable()) return;
  request_stop();
  const auto deadline = std::chrono::steady_clock::now() + destructor_stop_limit;
  while (!_loop->exited.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr,
                   "resident: the %s did not stop within %lld ms of its executor's destruction; "
                   "its thread is left to finish on its own\n",
                   loop_name().c_str(), static_cast<long long>(destructor_stop_limit.count()));
      abandon();
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  _thread.join();
}

void host_driven_executor::launch() {
  {
    const current_device_guard on_device(options().device);
    prepare_launch();
  }
  _loop = std::make_shared<host_loop>();
  _loop->options = options();
  _loop->name = loop_name();
  _loop->gate = handler().host_gate;
  _loop->res = shared_res();
  _loop->iteration = make_iteration();
  _thread = std::thread([loop = _loop] { loop_thread(loop); });
}

void host_driven_executor::loop_thread(const std::shared_ptr<host_loop>& loop) {
  try {
    RESIDENT_CUDA_TRY(cudaSetDevice(loop->options.device));
    // The loop thread launches every iteration: it does so inside the partition, if any.
    const partition::green_context::current_scope in_partition(loop->options.partition.get());
    if (loop->options.on_loop_thread_start) loop->options.on_loop_thread_start();
    const loop_control& control = *loop->res->control();
    const auto idle_wait = [&] {
      if (loop->options.idle_sleep_ns > 0) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(loop->options.idle_sleep_ns));
      }
    };
    while (!loop->stop.load(std::memory_order_acquire)) {
      loop->heartbeat.fetch_add(1, std::memory_order_relaxed);
      // The gate reads host memory only (e.g. the sensor's sequence word), so polling it costs
      // no GPU work; the device iteration runs once it says a sample may be there.
      if (loop->gate && !loop->gate(host_load_acquire(control.last_seq), loop->options.policy)) {
        idle_wait();
        continue;
      }
      if (!loop->iteration()) idle_wait();
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(loop->error_mutex);
    loop->error = loop->name + " failed: " + e.what();
  }
  loop->exited.store(true, std::memory_order_release);
}

void host_driven_executor::request_stop() noexcept {
  if (_loop) _loop->stop.store(true, std::memory_order_release);
}

bool host_driven_executor::stopped() {
  if (!_loop || !_loop->exited.load(std::memory_order_acquire)) return false;
  if (_thread.joinable()) _thread.join();
  return true;
}

std::string host_driven_executor::failure() const {
  if (!_loop) return {};
  std::lock_guard lock(_loop->error_mutex);
  return _loop->error;
}

std::uint64_t host_driven_executor::heartbeat() const noexcept {
  return _loop ? _loop->heartbeat.load(std::memory_order_relaxed) : 0;
}

void host_driven_executor::abandon() noexcept {
  if (!_thread.joinable()) return;
  request_stop();
  // The thread owns what it touches (host_loop); the operators and port memory its iterations
  // use stay alive through the leaked lifetime, since its last GPU work may still run.
  _thread.detach();
  leak_loop_memory();
}

}  // namespace resident::detail
