// What every mode shares: the loop's memory and streams, its counters, failure reporting and the
// telemetry drain.

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <stdexcept>
#include <string>

#include "exec/capture.hpp"
#include "exec/loop_executor.hpp"
#include "resident/cuda/error.hpp"
#include "resident/detail/counter_snapshot.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::detail {

namespace {

/// How long the telemetry drain waits for one of its copies. The supervisor thread drains, and
/// it must go on watching the heartbeat: a copy the GPU does not run is reported, never waited
/// on for ever.
constexpr std::chrono::milliseconds drain_copy_limit{2000};

void wait_for_drain_copy(cudaStream_t s, const char* what) {
  if (stream_view(s).synchronize_for(drain_copy_limit)) return;
  throw std::runtime_error(std::string("telemetry drain: the copy of ") + what +
                           " did not finish within " + std::to_string(drain_copy_limit.count()) +
                           " ms (cudaStreamQuery on the drain stream still returns "
                           "cudaErrorNotReady)");
}

}  // namespace

loop_resources::loop_resources(const Application& app, execution_mode mode,
                               const run_options& options, std::size_t streams)
    : control_mem(sizeof(loop_control)), state_mem(sizeof(loop_state)) {
  const bool resident = is_resident(mode);
  config.policy = options.policy;
  config.free_running = app.has_data_ready_handler() ? 0U : 1U;
  config.resident = resident ? 1U : 0U;
  // Host-driven modes sleep and poll on the host; the device part of their iteration never
  // waits, so it is the same work a resident iteration does.
  config.idle_sleep_ns = resident ? options.idle_sleep_ns : 0;
  config.poll_ns = resident ? options.poll_ns : 0;
  config.deadline_ns = static_cast<std::uint64_t>(options.deadline.count());
  config.control = control_mem.device_as<loop_control>();
  config.record_sms = options.record_sms ? 1U : 0U;
  config.preempt = options.preempt;
  // run_options::validate checked the hook's own numbers; only the app can say whether a
  // handler is there to watch for the sample the word goes up ahead of.
  if (options.preempt.lead_ns > 0 && !app.has_data_ready_handler()) {
    throw std::invalid_argument(
        "run_options::preempt.lead_ns: the application has no data-ready handler to watch for "
        "the sample it raises the word ahead of");
  }
  if (options.preempt.lead_ns > 0 && !resident) {
    // Between samples a host-driven loop runs idle passes whose controller clears the word: an
    // early raise would go up and down on every pass of the lead window.
    throw std::invalid_argument(
        std::string("run_options::preempt.lead_ns needs a resident mode (while or tail); in ") +
        std::string(to_string(mode)) + " mode the handler does not poll between samples");
  }
  if (options.preempt.mirror != nullptr) {
    // The loop keeps the mirror's counts in device memory (so that updating it never reads
    // across PCIe); start them from what the mirror holds, for a signal reused across runs.
    cudaPointerAttributes attr{};
    RESIDENT_CUDA_TRY(cudaPointerGetAttributes(&attr, options.preempt.mirror));
    if (attr.hostPointer == nullptr) {
      throw std::invalid_argument("run_options::preempt.mirror must point to host-mapped memory");
    }
    const auto* m = static_cast<const preempt_mirror*>(attr.hostPointer);
    config.preempt_raises =
        std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(m->raises)).load();
    config.preempt_clears =
        std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(m->clears)).load();
    config.preempt_early_raises =
        std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(m->early_raises)).load();
    config.preempt_withdrawn =
        std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(m->withdrawn)).load();
  }
  if (options.partition) {
    // Work captured or launched on these streams belongs to the partition (its green context).
    loop_stream = options.partition->make_stream(options.stream_priority);
    handler_stream = options.partition->make_stream(options.stream_priority);
  } else if (options.stream_priority != 0) {
    loop_stream = stream(options.stream_priority);
    handler_stream = stream(options.stream_priority);
  }
  // Branch streams are made like the loop stream: a forked capture's kernels belong to the same
  // partition, and eager mode launches them with the same priority.
  for (std::size_t i = 1; i < streams; ++i) {
    branch_streams.push_back(options.partition
                                 ? options.partition->make_stream(options.stream_priority)
                                 : stream(options.stream_priority));
  }
  if (options.telemetry_samples > 0) {
    // Sized to hold every entry asked for (up to 2^20): then the supervisor never needs to
    // drain while the loop runs, and no CUDA call from another thread competes with it.
    const std::size_t ring_entries =
        std::bit_ceil(std::clamp<std::size_t>(options.telemetry_samples, 1024, 1 << 20));
    ring_mem = device_buffer(ring_entries * sizeof(telemetry_entry));
    drain_staging = pinned_buffer(ring_entries * sizeof(telemetry_entry));
    drain_word = pinned_buffer(sizeof(loop_state));
    config.ring = ring_mem.data_as<telemetry_entry>();
    config.ring_capacity = ring_entries;
  }
}

std::vector<cudaStream_t> loop_resources::dag_streams() const {
  std::vector<cudaStream_t> out{loop_stream.get()};
  for (const auto& s : branch_streams) out.push_back(s.get());
  return out;
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
    : _mode(mode), _options(options), _app_name(app.name()) {
  // make_executor checked the application on the CPU (plan, handler); it holds the run's device
  // current while the executor is built.
  app.materialize(options.device);
  _plan = app.plan();
  _streams = plan_streams(_plan.body_producers, options.capture);
  _handler = app.handler();
  _lifetime =
      std::make_shared<const app_lifetime>(app_lifetime{app.operators(), app.port_memory()});
  _res = std::make_shared<loop_resources>(app, mode, options, _streams.streams);
  // Touched now, not as the drain fills it: a run's memory must not grow with its telemetry
  // (bench soak checks the process's RSS). resize() writes every entry; clear() keeps the
  // capacity. With a streaming consumer (on_telemetry) the run keeps no entry at all.
  if (!options.on_telemetry) {
    _telemetry.resize(options.telemetry_samples);
    _telemetry.clear();
  }
}

std::string loop_executor::loop_name() const {
  return std::string(to_string(_mode)) + " loop of application '" + _app_name + "'";
}

void loop_executor::leak_loop_memory() noexcept {
  // Deliberately never freed: these holders keep the memory alive for the rest of the process.
  (void)new std::shared_ptr<loop_resources>(_res);
  (void)new std::shared_ptr<const app_lifetime>(_lifetime);
}

void loop_executor::drain_telemetry(bool force) {
  if (_res->config.ring == nullptr) return;
  std::lock_guard lock(_drain_mutex);
  if (!force) {
    // Every DAG run files one entry; the host-mapped counters say how many there were without a
    // CUDA call. Drain once the ring is half full, or, for a streaming consumer, once what a slow
    // loop filed is telemetry_max_age old (a 60 Hz camera takes a minute to fill half of 8,192).
    const loop_control& c = *_res->control();
    const std::uint64_t runs = host_load_acquire(c.processed) + host_load_acquire(c.repeated);
    const auto age = _options.telemetry_max_age;
    const bool stale = _options.on_telemetry && age.count() > 0 && runs > _drained &&
                       std::chrono::steady_clock::now() - _last_drain >= age;
    if (runs - _drained < _res->config.ring_capacity / 2 && !stale) return;
  }
  _last_drain = std::chrono::steady_clock::now();
  const cudaStream_t s = _res->drain_stream.get();
  auto* word = _res->drain_word.data_as<std::uint64_t>();
  const auto read_written = [&] {
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(word, &loop()->ring_written, sizeof(std::uint64_t),
                                      cudaMemcpyDeviceToHost, s));
    wait_for_drain_copy(s, "the ring's write count");
    return *word;
  };
  const std::uint64_t written = read_written();
  if (written == _drained) return;
  const std::uint64_t capacity = _res->config.ring_capacity;
  std::uint64_t from = _drained;
  if (written - from > capacity) {  // the ring wrapped over entries never drained
    _telemetry_lost += written - from - capacity;
    from = written - capacity;
  }
  const std::uint64_t count = written - from;
  const std::uint64_t first = from & (capacity - 1);
  const std::uint64_t head_part = std::min(count, capacity - first);
  auto* staging = _res->drain_staging.data_as<telemetry_entry>();
  const telemetry_entry* ring = _res->config.ring;
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(staging, ring + first, head_part * sizeof(telemetry_entry),
                                    cudaMemcpyDeviceToHost, s));
  if (count > head_part) {
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(staging + head_part, ring,
                                      (count - head_part) * sizeof(telemetry_entry),
                                      cudaMemcpyDeviceToHost, s));
  }
  wait_for_drain_copy(s, "the ring's entries");
  // Entries the loop may have overwritten while they were being copied are not trusted.
  const std::uint64_t after = read_written();
  const std::uint64_t trusted_from = after > capacity ? std::max(from, after - capacity) : from;
  _telemetry_lost += trusted_from - from;
  _drained = written;
  const std::span<const telemetry_entry> batch(staging + (trusted_from - from),
                                               staging + (written - from));
  if (_options.on_telemetry) {
    try {
      _options.on_telemetry(batch);
    } catch (...) {
      _telemetry_lost += batch.size();
      throw;  // the supervisor reports it and goes on
    }
    return;
  }
  for (const telemetry_entry& e : batch) {
    if (_telemetry.size() < _telemetry.capacity()) {
      _telemetry.push_back(e);
    } else {
      ++_telemetry_lost;
    }
  }
}

double loop_executor::mean_iteration_ns() {
  loop_state now{};
  RESIDENT_CUDA_TRY(cudaMemcpy(&now, loop(), sizeof(loop_state), cudaMemcpyDeviceToHost));
  if (now.iterations < 2 || now.last_pass_ns <= now.first_pass_ns) return 0.0;
  return static_cast<double>(now.last_pass_ns - now.first_pass_ns) /
         static_cast<double>(now.iterations - 1);
}

loop_counters loop_executor::counters() const noexcept {
  // A loop commits at most once per DAG run, so a torn read ends when that commit's release
  // reaches the host (microseconds); 10 ms only bounds this noexcept call against a
  // pathological writer.
  return snapshot_counters(*_res->control(), _res->start_seq, std::chrono::milliseconds(10));
}

std::uint64_t loop_executor::heartbeat() const noexcept {
  return host_load_acquire(_res->control()->heartbeat);
}

std::string loop_executor::failure() const {
  const auto code = static_cast<cudaError_t>(host_load_acquire(_res->control()->device_error));
  if (code == cudaSuccess) return {};
  return loop_name() + " failed on the device: cudaGraphLaunch (tail launch) returned " +
         cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")";
}

void loop_executor::prepare_launch() {
  const auto& start_after = _handler.start_after;
  _res->upload_config(start_after ? start_after() : 0);
  if (!_options.dot_path.empty()) write_dot(_options.dot_path);
}

std::vector<int> loop_executor::sms_seen() {
  std::uint32_t mask[8] = {};
  RESIDENT_CUDA_TRY(cudaMemcpy(mask, loop()->sm_seen, sizeof mask, cudaMemcpyDeviceToHost));
  std::vector<int> sms;
  for (int word = 0; word < 8; ++word) {
    for (int bit = 0; bit < 32; ++bit) {
      if ((mask[word] >> bit) & 1U) sms.push_back(word * 32 + bit);
    }
  }
  return sms;
}

}  // namespace resident::detail
