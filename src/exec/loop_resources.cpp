#include <chrono>
#include <cstdio>
#include <filesystem>

#include "exec/loop_executor.hpp"
#include "resident/cuda/error.hpp"

namespace resident::detail {

loop_resources::loop_resources(const Application& app, execution_mode mode,
                               const run_options& options)
    : control_mem(sizeof(loop_control)), state_mem(sizeof(loop_state)) {
  const bool resident = is_resident(mode);
  config.policy = options.policy;
  config.free_running = app.has_data_ready_handler() ? 0U : 1U;
  config.resident = resident ? 1U : 0U;
  // Host-driven modes sleep and poll on the host; the device part of their iteration never
  // waits, so it is the same work a resident iteration does.
  config.idle_sleep_ns = resident ? options.idle_sleep_ns : 0;
  config.poll_ns = resident ? options.poll_ns : 0;
  config.control = control_mem.device_as<loop_control>();
}

void loop_resources::upload_config(std::uint64_t start) {
  start_seq = start;
  config.last = start;
  // Before launch the host is the only writer of the control block.
  control()->last_seq = start;
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(state(), &config, sizeof(loop_state), cudaMemcpyHostToDevice,
                                    loop_stream.get()));
  loop_stream.synchronize();
}

loop_executor::loop_executor(Application& app, execution_mode mode, const run_options& options)
    : _app(app), _mode(mode), _options(options), _plan(&app.plan()) {
  if (is_resident(mode) && !app.has_data_ready_handler()) {
    throw composition_error(
        std::string(to_string(mode)) + " mode needs a data-ready handler: application '" +
        app.name() +
        "' registers none (call register_data_ready_handler() in compose()); without one the "
        "GPU loop would have nothing to wait for");
  }
  RESIDENT_CUDA_TRY(cudaSetDevice(options.device));
  app.materialize();
  _res = std::make_unique<loop_resources>(app, mode, options);
}

loop_counters loop_executor::counters() const noexcept {
  const loop_control& c = *_res->control();
  loop_counters out;
  out.last_seq = host_load_acquire(c.last_seq);  // pairs with the end marker's release
  out.processed = host_load_acquire(c.processed);
  out.dropped = host_load_acquire(c.dropped);
  out.repeated = host_load_acquire(c.repeated);
  out.iterations = host_load_acquire(c.heartbeat);
  out.start_seq = _res->start_seq;
  return out;
}

std::uint64_t loop_executor::heartbeat() const noexcept {
  return host_load_acquire(_res->control()->heartbeat);
}

std::string loop_executor::failure() const {
  const auto code = static_cast<cudaError_t>(host_load_acquire(_res->control()->device_error));
  if (code == cudaSuccess) return {};
  return std::string(to_string(_mode)) + " loop of application '" + _app.name() +
         "' failed on the device: cudaGraphLaunch (tail launch) returned " +
         cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")";
}

void loop_executor::abandon() noexcept {
  // The GPU may still read and write this memory: leaking it is the only safe choice.
  (void)_res.release();
}

void loop_executor::prepare_launch() {
  const auto& start_after = _app.handler().start_after;
  _res->upload_config(start_after ? start_after() : 0);
  if (!_options.dot_path.empty()) write_dot(_options.dot_path);
}

// ---- host-driven loop ------------------------------------------------------------------------

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
