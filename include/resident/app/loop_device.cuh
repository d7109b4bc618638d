#pragma once
// The device API for operators' kernels (include only from .cu files):
//   data-ready handler  publish(loop, seq): the sample ready this iteration (0: none);
//                       last_processed(loop): what `every` asks for next is this + 1;
//                       anticipate_preempt / note_sample_due for preempt_hook::lead_ns
//   egress, body        current_sample(loop): the sample the DAG processes now
//   any                 stamp(loop, stage), let_next_kernel_start(), wait_for_previous_kernels(),
//                       globaltimer_ns(), sleep_ns()
// `loop` is the CaptureContext::loop() pointer passed to the kernel. The rest of this file
// (raise_preempt, clear_preempt, note_sm, stamp_first, the system-scope accessors) serves the
// runtime's own kernels.

#include <cuda/atomic>

#include <cstdint>

#include "resident/detail/loop_state.hpp"

namespace resident::device {

/// %globaltimer in nanoseconds (advances in 32 ns steps on the H200).
__device__ inline std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Sleeps about `ns` nanoseconds, bounded by the global timer (__nanosleep alone may sleep up
/// to twice what it is asked and at most about 1 ms per call).
__device__ inline void sleep_ns(std::uint64_t ns) {
  const std::uint64_t start = globaltimer_ns();
  for (;;) {
    const std::uint64_t elapsed = globaltimer_ns() - start;
    if (elapsed >= ns) return;
    const std::uint64_t left = ns - elapsed;
    __nanosleep(static_cast<unsigned>(left > 500000 ? 500000 : (left + 1) / 2));
  }
}

// Words shared with the host have one writer each. The host has no native atomics with the
// device, so these are plain loads and stores with system-scope ordering, never read-modify-write.
template <class T>
__device__ inline T load_acquire_system(const T& word) {
  return cuda::atomic_ref<T, cuda::thread_scope_system>(const_cast<T&>(word))
      .load(cuda::memory_order_acquire);
}
template <class T>
__device__ inline void store_release_system(T& word, T value) {
  cuda::atomic_ref<T, cuda::thread_scope_system>(word).store(value, cuda::memory_order_release);
}
template <class T>
__device__ inline void store_relaxed_system(T& word, T value) {
  cuda::atomic_ref<T, cuda::thread_scope_system>(word).store(value, cuda::memory_order_relaxed);
}

// Programmatic dependent launch (sm_90; both are no-ops before it). A kernel joined to the one
// before it by a programmatic edge may be scheduled while that one still runs, once it calls
// let_next_kernel_start(), and must call wait_for_previous_kernels() before reading what it
// wrote. The framework's controller and end marker are joined so to kernel handlers and DAGs
// (capture_kernel), the reference operators to each other (launch_edges::programmatic).

/// Lets the kernel after this one be scheduled now. Handler and egress kernels should call it
/// first: on the H200 it took handler -> controller from 0.66 to 0.40 µs (bench overhead).
/// Safe anywhere in the kernel.
__device__ inline void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}
/// Waits until the kernels this one depends on have finished and their writes are visible;
/// returns at once after a plain edge.
__device__ inline void wait_for_previous_kernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}

/// What a data-ready handler's pass reads from the loop state, loaded together at its start:
/// after the sample is seen, every load that a branch waits on is an L2 round trip between
/// sensor and actuator.
struct handler_words {
  std::uint64_t last;      // the last sample processed
  bool have_processed;     // any sample processed yet
  sample_policy policy;    // which sample to take
  std::uint64_t poll_ns;   // the pass's polling budget
  bool preempt_hooked;     // a preemption word to raise for best-effort work
  bool raise_after_input;  // raise it after the input is in (else at detection)
};

__device__ inline handler_words load_handler_words(const loop_state* loop) {
  return {loop->last,    loop->processed > 0,           loop->policy,
          loop->poll_ns, loop->preempt.word != nullptr, loop->preempt.after_input != 0U};
}

/// Handler: report which sample is ready this iteration (0: none). Plain store: the controller
/// kernel runs after the handler's last node, and the kernel boundary orders the two.
__device__ inline void publish(loop_state* loop, std::uint64_t seq) { loop->published = seq; }
/// Handler: the last sample the loop processed (what `every` asks for next is this + 1).
__device__ inline std::uint64_t last_processed(const loop_state* loop) { return loop->last; }
/// When the run asked for it (run_options::record_sms), marks the SM this thread runs on as
/// used by the loop: how a partitioned loop is shown to stay on its partition's SMs.
__device__ inline void note_sm(loop_state* loop) {
  if (loop->record_sms == 0U) return;
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  atomicOr(&loop->sm_seen[(sm >> 5) & 7U], 1U << (sm & 31U));
}
/// Records the %globaltimer for `at` in this iteration's telemetry (a device-memory store).
__device__ inline void stamp(loop_state* loop, stage at) {
  loop->stamp_ns[static_cast<std::size_t>(at)] = globaltimer_ns();
}

/// Real-time loops (run_options::preempt): raise the preempt word for this iteration, once.
/// Single thread, on the path from sensor to actuator. The word is device memory, so
/// best-effort blocks see it within an L2 round trip. The host-mapped mirror is updated with
/// relaxed posted writes: a release would put a system-scope fence (a PCIe round trip) on that
/// path, and nothing needs the order here (a host that sees the count early only stops
/// submitting early; `last_raise_ns` is informational). Clearing keeps its release: a host
/// must not resume before the word is down.
__device__ inline void raise_preempt(loop_state* loop) {
  if (loop->preempt.word == nullptr || loop->preempt_raised != 0U) return;
  loop->preempt_raised = 1U;
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*loop->preempt.word)
      .store(1U, cuda::memory_order_relaxed);
  const std::uint64_t now = globaltimer_ns();
  loop->stamp_ns[static_cast<std::size_t>(stage::preempt_raised)] = now;
  if (preempt_mirror* m = loop->preempt.mirror; m != nullptr) {
    store_relaxed_system(m->last_raise_ns, now);
    store_relaxed_system(m->raises, ++loop->preempt_raises);
  }
}
/// Clears what raise_preempt raised (end marker, after the iteration's last DAG node).
__device__ inline void clear_preempt(loop_state* loop) {
  if (loop->preempt.word == nullptr || loop->preempt_raised == 0U) return;
  loop->preempt_raised = 0U;
  loop->preempt_early = 0U;  // whoever clears it (end marker, idle pass, withdrawal) ends that too
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*loop->preempt.word)
      .store(0U, cuda::memory_order_release);
  if (preempt_mirror* m = loop->preempt.mirror; m != nullptr) {
    store_relaxed_system(m->last_clear_ns, globaltimer_ns());
    store_release_system(m->clears, ++loop->preempt_clears);
  }
}
/// preempt_hook::lead_ns, for a handler's polling loop (one thread, `now` from its latest poll
/// that found no sample): raises the word once the next sample is less than the lead away, and
/// withdraws that raise if the sample is a lead late. Off the RT path: nothing waits for it.
__device__ inline void anticipate_preempt(loop_state* loop, std::uint64_t now) {
  if (!loop->preempt.anticipates()) return;
  switch (
      anticipate(now, loop->preempt_due_ns, loop->preempt.lead_ns, loop->preempt_raised != 0U)) {
    case anticipation::raise:
      raise_preempt(loop);
      loop->preempt_early = 1U;
      if (preempt_mirror* m = loop->preempt.mirror; m != nullptr) {
        store_relaxed_system(m->early_raises, ++loop->preempt_early_raises);
      }
      break;
    case anticipation::withdraw:
      loop->preempt_due_ns = 0;  // expect nothing until the next sample anchors the schedule
      if (loop->preempt_early != 0U) {
        clear_preempt(loop);
        loop->stamp_ns[static_cast<std::size_t>(stage::preempt_raised)] = 0;
        if (preempt_mirror* m = loop->preempt.mirror; m != nullptr) {
          store_relaxed_system(m->withdrawn, ++loop->preempt_withdrawn);
        }
      }
      break;
    case anticipation::wait:
      break;
  }
}
/// The handler took a new sample, detected at `detect`: the early raise (if any) was for it,
/// and the schedule moves on to the next one.
__device__ inline void note_sample_due(loop_state* loop, std::uint64_t detect) {
  if (!loop->preempt.anticipates()) return;
  loop->preempt_early = 0U;
  loop->preempt_due_ns =
      next_sample_due(detect, loop->preempt_due_ns, loop->preempt.period_ns, loop->preempt.lead_ns);
}
/// Stamps `at` once per iteration from whichever block gets there first (e.g. the first block
/// of a multi-block body kernel marking body_start). Any thread may call it.
__device__ inline void stamp_first(loop_state* loop, stage at) {
  atomicCAS(reinterpret_cast<unsigned long long*>(&loop->stamp_ns[static_cast<std::size_t>(at)]),
            0ULL, static_cast<unsigned long long>(globaltimer_ns()));
}

/// Egress: the sample the DAG is processing in this iteration.
__device__ inline std::uint64_t current_sample(const loop_state* loop) { return loop->current; }

}  // namespace resident::device
