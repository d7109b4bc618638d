// The framework kernels of every iteration. Each is one thread: the work is a handful of loads
// and stores, and a single writer is what makes the shared words safe without host atomics.

#include "exec/loop_kernels.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

using device::load_acquire_system;
using device::store_relaxed_system;
using device::store_release_system;

struct pass_result {
  release_decision decision;
  bool stop;
};

// One controller pass, shared by the WHILE controller and the tail dispatcher.
__device__ pass_result control_pass(loop_state* s) {
  const std::uint64_t now = device::globaltimer_ns();
  s->stamp_ns[static_cast<std::size_t>(stage::controller_start)] = now;
  if (s->iterations == 0) s->first_pass_ns = now;
  s->last_pass_ns = now;
  loop_control& c = *s->control;
  const std::uint64_t iteration = ++s->iterations;
  // Relaxed: the heartbeat is a liveness signal only; nothing is read through it.
  store_relaxed_system(c.heartbeat, iteration);
  // Acquire pairs with the host's release store of the request. Host-driven modes stop on the
  // host and skip this PCIe read.
  if (s->resident && load_acquire_system(c.tear_down) != 0) {
    s->released = 0;
    return {{}, true};
  }
  const std::uint64_t published = s->free_running ? s->last + 1 : s->published;
  s->published = 0;  // consumed: a handler must publish afresh every iteration
  const release_decision d = decide_release(s->policy, published, s->last, s->processed > 0);
  s->released = d.run ? 1U : 0U;
  s->repeat = d.repeat ? 1U : 0U;
  s->current = d.seq;
  s->pending_dropped = d.dropped;
  device::stamp(s, stage::controller_end);
  return {d, false};
}

// Files this iteration's stamps into the ring (device memory only) and clears them.
__device__ void record_telemetry(loop_state* s) {
  if (s->ring != nullptr) {
    telemetry_entry& e = s->ring[s->ring_written & (s->ring_capacity - 1)];
    e.seq = s->current;
    e.repeat = s->repeat;
    for (std::size_t i = 0; i < stage_count; ++i) e.stamp_ns[i] = s->stamp_ns[i];
    // The host drains by reading ring_written first: the entry must be complete before it.
    __threadfence();
    ++s->ring_written;
  }
  for (std::size_t i = 0; i < stage_count; ++i) s->stamp_ns[i] = 0;
}

__device__ void commit(loop_state* s) {
  device::stamp(s, stage::end_marker);
  record_telemetry(s);
  if (s->repeat != 0U) {
    ++s->repeated;
  } else {
    ++s->processed;
    s->dropped += s->pending_dropped;
    s->last = s->current;
  }
  loop_control& c = *s->control;
  store_relaxed_system(c.processed, s->processed);
  store_relaxed_system(c.dropped, s->dropped);
  store_relaxed_system(c.repeated, s->repeated);
  // Release: a host that acquires last_seq also sees the counters written above.
  store_release_system(c.last_seq, s->last);
}

__device__ void fail(loop_state* s, cudaError_t error) {
  store_relaxed_system(s->control->device_error, static_cast<std::int32_t>(error));
  store_release_system(s->control->stopped, 1U);
}

__global__ void controller_kernel(loop_state* s) {
  const pass_result r = control_pass(s);
  if (s->has_if != 0U) cudaGraphSetConditional(s->if_handle, r.decision.run ? 1U : 0U);
  if (r.stop) {
    if (s->has_while != 0U) cudaGraphSetConditional(s->while_handle, 0U);
    store_release_system(s->control->stopped, 1U);
    return;
  }
  if (!r.decision.run && s->idle_sleep_ns > 0) device::sleep_ns(s->idle_sleep_ns);
}

__global__ void end_marker_kernel(loop_state* s) { commit(s); }

__global__ void tail_dispatcher_kernel(loop_state* s) {
  const pass_result r = control_pass(s);
  if (r.stop) {
    store_release_system(s->control->stopped, 1U);
    return;  // no tail launch: the chain of graphs ends here
  }
  cudaGraphExec_t next = s->work_exec;
  if (!r.decision.run) {
    if (s->idle_sleep_ns > 0) device::sleep_ns(s->idle_sleep_ns);
    next = s->main_exec;
  }
  const cudaError_t e = cudaGraphLaunch(next, cudaStreamGraphTailLaunch);
  if (e != cudaSuccess) fail(s, e);
}

__global__ void tail_end_marker_kernel(loop_state* s) {
  commit(s);
  const cudaError_t e = cudaGraphLaunch(s->main_exec, cudaStreamGraphTailLaunch);
  if (e != cudaSuccess) fail(s, e);
}

}  // namespace

void launch_controller(loop_state* loop, cudaStream_t s) {
  controller_kernel<<<1, 1, 0, s>>>(loop);
  RESIDENT_CUDA_CHECK_LAUNCH("controller_kernel");
}

void launch_end_marker(loop_state* loop, cudaStream_t s) {
  end_marker_kernel<<<1, 1, 0, s>>>(loop);
  RESIDENT_CUDA_CHECK_LAUNCH("end_marker_kernel");
}

void launch_tail_dispatcher(loop_state* loop, cudaStream_t s) {
  tail_dispatcher_kernel<<<1, 1, 0, s>>>(loop);
  RESIDENT_CUDA_CHECK_LAUNCH("tail_dispatcher_kernel");
}

void launch_tail_end_marker(loop_state* loop, cudaStream_t s) {
  tail_end_marker_kernel<<<1, 1, 0, s>>>(loop);
  RESIDENT_CUDA_CHECK_LAUNCH("tail_end_marker_kernel");
}

}  // namespace resident::detail
