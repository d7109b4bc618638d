#pragma once
// The controller and end-marker steps of an iteration, as device functions for the framework's
// kernels. `Tail` selects the tail-mode mechanism (device graph launches). It is a template
// parameter on purpose: a kernel that so much as references the device-side cudaGraphLaunch
// can no longer be launched from the host (cudaErrorNotSupported) nor run in a host-launched
// graph, so only kernels captured into tail mode's device-launched graphs may contain it. A
// handler or egress kernel that carries a step (fused iteration, src/exec/fusion.hpp) is
// therefore instantiated twice and launched per capture target. Include only from .cu files.

#include "resident/app/loop_device.cuh"

namespace resident::device {

namespace detail {

// Issues the read of the host's tear-down request (a host-mapped word: one PCIe round trip,
// about 1.2 µs on the H200). Callers issue it early and look at the value late where they can,
// so the round trip overlaps other work instead of adding to it. Relaxed: the request carries
// no data, and the host only needs it seen within one iteration.
__device__ inline std::uint32_t tear_down_word(const loop_state* s) {
  if (s->resident == 0U) return 0U;
  return cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system>(
             const_cast<std::uint32_t&>(s->control->tear_down))
      .load(cuda::memory_order_relaxed);
}

__device__ inline void stop_loop(loop_state* s) {
  s->stop_requested = 1U;
  if (s->has_while != 0U) cudaGraphSetConditional(s->while_handle, 0U);
  store_release_system(s->control->stopped, 1U);
}

__device__ inline void fail(loop_state* s, cudaError_t error) {
  s->stop_requested = 1U;
  store_relaxed_system(s->control->device_error, static_cast<std::int32_t>(error));
  store_release_system(s->control->stopped, 1U);
}

// Files this iteration's stamps into the telemetry ring (device memory only), clears them.
__device__ inline void record_telemetry(loop_state* s) {
  if (s->ring != nullptr) {
    telemetry_entry& e = s->ring[s->ring_written & (s->ring_capacity - 1)];
    e.seq = s->current;
    e.repeat = s->repeat;
    for (std::size_t i = 0; i < stage_count; ++i) e.stamp_ns[i] = s->stamp_ns[i];
    __threadfence();  // the host reads ring_written first: the entry must be complete before it
    ++s->ring_written;
  }
  for (std::size_t i = 0; i < stage_count; ++i) s->stamp_ns[i] = 0;
}

// One response time against the deadline: the longest seen, misses, the worst overrun.
// Returns whether any of them changed.
__device__ inline bool account_response(std::uint64_t response, std::uint64_t deadline,
                                        std::uint64_t& longest, std::uint64_t& misses,
                                        std::uint64_t& worst_overrun) {
  bool changed = false;
  if (response > longest) {
    longest = response;
    changed = true;
  }
  if (deadline != 0 && response > deadline) {
    ++misses;
    if (response - deadline > worst_overrun) worst_overrun = response - deadline;
    changed = true;
  }
  return changed;
}

// A processed sample's release -> commit (and arrival -> commit where its handler stamped the
// arrival), from this iteration's stamps, before they are cleared. The host-mapped mirror is
// written only when a value changed: after warm-up the longest response rarely grows, so a
// loop that meets its deadline adds no PCIe write per sample.
__device__ inline void account_deadline(loop_state* s) {
  const std::uint64_t release = s->stamp_ns[static_cast<std::size_t>(stage::controller_end)];
  const std::uint64_t committed = s->stamp_ns[static_cast<std::size_t>(stage::commit)];
  const std::uint64_t end =
      committed != 0 ? committed : s->stamp_ns[static_cast<std::size_t>(stage::end_marker)];
  const std::uint64_t arrival = s->stamp_ns[static_cast<std::size_t>(stage::arrival)];
  const std::uint64_t deadline = s->deadline_ns;
  response_words& r = s->responses;
  bool changed = false;
  if (release != 0 && end >= release) {
    changed |= account_response(end - release, deadline, r.max_response_ns, r.deadline_misses,
                                r.worst_overrun_ns);
  }
  if (arrival != 0 && end >= arrival) {
    changed |= account_response(end - arrival, deadline, r.max_arrival_response_ns,
                                r.arrival_deadline_misses, r.worst_arrival_overrun_ns);
  }
  if (!changed) return;
  response_words& mirror = s->control->responses;
  store_relaxed_system(mirror.max_response_ns, r.max_response_ns);
  store_relaxed_system(mirror.deadline_misses, r.deadline_misses);
  store_relaxed_system(mirror.worst_overrun_ns, r.worst_overrun_ns);
  store_relaxed_system(mirror.max_arrival_response_ns, r.max_arrival_response_ns);
  store_relaxed_system(mirror.arrival_deadline_misses, r.arrival_deadline_misses);
  store_relaxed_system(mirror.worst_arrival_overrun_ns, r.worst_arrival_overrun_ns);
}

}  // namespace detail

/// One controller pass: applies the sample policy to what the handler published and releases
/// the DAG (IF predicate, or tail launch of graph W) or idles (δ sleep; tail: relaunch M).
/// Single thread.
/// What a controller pass reads ahead: whether the pass before it idled and, if so, the tear-down
/// word, read as early as the caller can (see controller_step).
struct early_read {
  bool expect_idle{false};
  std::uint32_t tear_down{0};
};

/// Issues the early read for the coming controller pass. Only an idle pass acts on tear-down.
/// After an idle pass another is likely, so the read is issued early and overlaps the work before
/// the pass; after a releasing pass it is not: a pass that releases would wait for the read
/// before it could finish, adding a PCIe round trip between sensor and actuator.
__device__ inline early_read read_ahead(const loop_state* s) {
  early_read r;
  r.expect_idle = s->released == 0U;
  if (r.expect_idle) r.tear_down = detail::tear_down_word(s);
  return r;
}

/// What a pass decided, for a caller that acts on it (the persistent kernel): the DAG was
/// released, or the loop stopped. Both are also in the loop state (released, stop_requested).
struct pass_outcome {
  bool released{false};
  bool stopped{false};
};

/// The controller pass, after read_ahead() (a fused handler issues it at its kernel's start, so
/// the round trip overlaps the handler's polling).
template <bool Tail>
__device__ inline pass_outcome controller_decide(loop_state* s, early_read ahead);

template <bool Tail>
__device__ inline void controller_step(loop_state* s) {
  // The controller kernel may start early (see let_next_kernel_start): the read overlaps the
  // handler's end.
  controller_decide<Tail>(s, read_ahead(s));
}

template <bool Tail>
__device__ inline pass_outcome controller_decide(loop_state* s, early_read ahead) {
  // Every loop-state word the pass needs is loaded up front, together. Each load is an L2 round
  // trip (a kernel starts with a cold L1), and a pass that branches on one word before loading
  // the next pays them one after another: nine such round trips were most of the controller's
  // 1.1 µs (bench overhead). The run's configuration can be read before the wait (the host
  // wrote it before launch); the per-iteration words only after it.
  const bool free_running = s->free_running != 0U;
  const bool record_sms = s->record_sms != 0U;
  const bool has_if = s->has_if != 0U;
  const bool preempt_hooked = s->preempt.word != nullptr;
  const sample_policy policy = s->policy;
  const std::uint64_t idle_sleep = s->idle_sleep_ns;
  loop_control* const control = s->control;
  const cudaGraphConditionalHandle if_handle = s->if_handle;
  wait_for_previous_kernels();
  const std::uint64_t handler_published = s->published;
  const std::uint64_t last = s->last;
  const std::uint64_t processed = s->processed;
  const std::uint64_t iteration = s->iterations + 1;
  const bool first_pass = iteration == 1;

  const std::uint64_t now = globaltimer_ns();
  s->stamp_ns[static_cast<std::size_t>(stage::controller_start)] = now;
  if (record_sms) note_sm(s);
  if (first_pass) s->first_pass_ns = now;
  s->last_pass_ns = now;
  s->iterations = iteration;
  // Relaxed: the heartbeat is a liveness signal; nothing is read through it.
  store_relaxed_system(control->heartbeat, iteration);

  const std::uint64_t published = free_running ? last + 1 : handler_published;
  s->published = 0;  // consumed: a handler publishes afresh every iteration
  const release_decision d = decide_release(policy, published, last, processed > 0);
  s->released = d.run ? 1U : 0U;
  s->repeat = d.repeat ? 1U : 0U;
  s->current = d.seq;
  s->pending_dropped = d.dropped;
  // An idle pass acts on tear-down; a releasing pass leaves it to the end marker, so the DAG of
  // a released sample always runs. Either way: within one iteration.
  bool stop = false;
  if (!d.run) stop = (ahead.expect_idle ? ahead.tear_down : detail::tear_down_word(s)) != 0U;
  // Raised for a repeat (newest policy) or by a handler that does not raise; cleared when a
  // handler raised for a sample it then could not deliver (the ring lapped it), so an idle
  // loop never holds best-effort work off.
  if (preempt_hooked) {
    if (d.run) {
      raise_preempt(s);
    } else {
      clear_preempt(s);
    }
  }
  if (has_if) cudaGraphSetConditional(if_handle, d.run ? 1U : 0U);
  stamp(s, stage::controller_end);
  if (stop) {
    detail::stop_loop(s);  // tail: no launch, the chain of graphs ends here
    return {false, true};
  }
  if (!d.run && idle_sleep > 0) sleep_ns(idle_sleep);
  if constexpr (Tail) {
    const cudaError_t e =
        cudaGraphLaunch(d.run ? s->work_exec : s->main_exec, cudaStreamGraphTailLaunch);
    if (e != cudaSuccess) {
      detail::fail(s, e);
      return {d.run, true};
    }
  }
  return {d.run, false};
}

/// Commits the iteration (counters, last processed sample, host-visible mirror, telemetry),
/// then ends the loop if tear-down was requested, or (tail) relaunches graph M. Single thread.
/// Returns whether the loop stopped (tear-down, or a failed tail launch).
template <bool Tail>
__device__ inline bool end_marker_step(loop_state* s) {
  // Not before the wait: this kernel may start while the egress kernel still writes to host
  // memory, and a PCIe read of ours in flight then was seen to slow the egress commit
  // (release -> commit +0.5 µs in bench io). After it, the read overlaps our own commit.
  wait_for_previous_kernels();
  // Host-gated iterations (fusion.hpp) run the DAG without a device condition: one that
  // released nothing is not counted (host-driven modes only; the others end the pass here only
  // when released).
  if constexpr (!Tail) {
    if (s->released == 0U) return false;
  }
  const std::uint32_t tear_down = detail::tear_down_word(s);
  stamp(s, stage::end_marker);
  note_sm(s);
  if (s->repeat == 0U) detail::account_deadline(s);  // before the stamps are cleared
  detail::record_telemetry(s);
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
  clear_preempt(s);  // the iteration's real-time work is done: best-effort work may resume
  if (tear_down != 0U) {
    detail::stop_loop(s);
    return true;
  }
  if constexpr (Tail) {
    const cudaError_t e = cudaGraphLaunch(s->main_exec, cudaStreamGraphTailLaunch);
    if (e != cudaSuccess) {
      detail::fail(s, e);
      return true;
    }
  }
  return false;
}

}  // namespace resident::device
