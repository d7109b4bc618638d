#pragma once
// The loop's memory layouts, shared by the runtime's own kernels (handler, controller, end
// marker, egress) and executors. Internal: not part of the API, and free to change. Device code
// outside the runtime uses resident/app/loop_device.cuh, never these fields.
//
// Two places, chosen for cost: `loop_state` lives in device memory because the loop touches it
// every iteration; `loop_control` is host-mapped and holds only what the host must see or set.
// The H200 has no host-native atomics, so every shared word has exactly one writer and is
// accessed with acquire/release (device: system-scope cuda::atomic_ref; host: std::atomic_ref).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "resident/app/loop.hpp"

namespace resident {

/// Response times of processed samples against run_options::deadline (device clock, ns): kept in
/// the loop state, mirrored to the control block when one changes (the end-marker step).
struct response_words {
  std::uint64_t max_response_ns;  // release -> commit
  std::uint64_t deadline_misses;
  std::uint64_t worst_overrun_ns;
  std::uint64_t max_arrival_response_ns;  // arrival -> commit
  std::uint64_t arrival_deadline_misses;
  std::uint64_t worst_arrival_overrun_ns;
};

/// Host-mapped words. The host writes only `tear_down`; the device writes everything else.
/// The host-written word sits on its own cache line so device writes never share its line.
struct alignas(64) loop_control {
  std::uint32_t tear_down;  // host: request the loop to stop
  std::uint32_t pad0[15];
  // --- device-written, one 64-byte line -----------------------------------------------------
  std::uint64_t heartbeat;    // controller passes so far (idle ones included)
  std::uint64_t last_seq;     // last processed sample
  std::uint64_t processed;    // samples the DAG processed (each once)
  std::uint64_t dropped;      // samples skipped over (overrun) and never processed
  std::uint64_t repeated;     // DAG runs on a sample already processed
  std::uint32_t stopped;      // resident modes: the loop has exited
  std::int32_t device_error;  // a device-side launch failed (cudaError_t), 0 otherwise
  std::uint64_t pad1[2];
  // --- device-written response times, written before last_seq's release and only when one of
  // them changes (rarely, after warm-up) ---------------------------------------------------------
  response_words responses;
  std::uint64_t pad2[2];
};
static_assert(sizeof(loop_control) == 192);

/// Device-memory state of one loop. Written only by the loop's own kernels, one at a time.
struct loop_state {
  // --- per iteration ------------------------------------------------------------------------
  std::uint64_t published;        // handler -> controller: sample ready this iteration (0: none)
  std::uint64_t current;          // controller -> DAG/egress: sample the DAG processes now
  std::uint64_t last;             // last processed sample
  std::uint64_t pending_dropped;  // controller -> end marker
  std::uint32_t released;         // the DAG was released this iteration
  std::uint32_t repeat;           // the release re-processes `last`
  std::uint32_t stop_requested;   // the loop stopped (persistent: its kernel then returns)
  std::uint32_t persistent_next;  // persistent: the leader's verdict for every block
  // --- counters (mirrored to loop_control by the controller and the end marker) -----------
  std::uint64_t iterations;
  std::uint64_t processed;
  std::uint64_t dropped;
  std::uint64_t repeated;
  // --- configuration, fixed for the run -----------------------------------------------------
  sample_policy policy;
  std::uint32_t free_running;     // no handler: every iteration releases sample last + 1
  std::uint32_t resident;         // the GPU releases iterations: the controller reads tear_down
  std::uint32_t has_while;        // `while_handle` is valid (WHILE mode)
  std::uint32_t has_if;           // `if_handle` is valid (WHILE and host-graph modes)
  std::uint32_t record_sms;       // the loop's own kernels note their SM in sm_seen
  std::uint32_t fuse_controller;  // the handler's kernel runs the controller step at its end
  std::uint32_t fuse_end_marker;  // the egress kernel runs the end-marker step at its end
  std::uint64_t deadline_ns;      // run_options::deadline (0: none)
  std::uint64_t idle_sleep_ns;    // controller sleep when nothing was released (0 spins)
  std::uint64_t poll_ns;          // how long a handler may poll inside its kernel
  loop_control* control;          // device pointer of the host-mapped control block
  cudaGraphConditionalHandle while_handle;
  cudaGraphConditionalHandle if_handle;
  cudaGraphExec_t main_exec;  // tail mode: graph M (handler, dispatcher)
  cudaGraphExec_t work_exec;  // tail mode: graph W (DAG, end marker + relaunch)
  // --- telemetry (device memory; the host drains the ring off the critical path) -----------
  std::uint64_t stamp_ns[stage_count];  // this iteration's stamps
  telemetry_entry* ring;                // nullptr: telemetry off
  std::uint64_t ring_capacity;          // entries (a power of two)
  std::uint64_t ring_written;           // entries written so far (next: written % capacity)
  std::uint64_t first_pass_ns;          // %globaltimer at the first and the latest controller
  std::uint64_t last_pass_ns;           // pass: (last - first) / (iterations - 1) is the mean
  std::uint32_t sm_seen[8];             // bit s: a loop kernel ran on SM s (record_sms only)
  // --- persistent mode's phase times (run_options::phase_times), device memory --------------
  std::uint64_t* phase_stamps;  // [0]: DAG passes stamped, then rows of phase_stride stamps
  std::uint32_t phase_stride;   // stamps per pass: one before the first phase, one per barrier
  std::uint32_t phase_rows;     // rows kept: pass p writes row p % phase_rows
  // --- preemption (real-time loops sharing the GPU with best-effort work) ------------------
  preempt_hook preempt;          // raised when a sample is ready, cleared after the end marker
  std::uint32_t preempt_raised;  // this iteration raised the word (the end marker clears it)
  std::uint64_t preempt_raises;  // the mirror's counts, kept here so that updating the mirror
  std::uint64_t preempt_clears;  // is a posted write, never a PCIe read on the RT path
  std::uint64_t preempt_early_raises;
  std::uint64_t preempt_withdrawn;
  std::uint64_t preempt_due_ns;  // the next sample is due then (preempt_hook::lead_ns), or 0
  std::uint32_t preempt_early;   // the word is up ahead of a sample that has not come yet
  // --- response times (run_options::deadline); mirrored to loop_control when they change ----
  response_words responses;
};

}  // namespace resident
