#pragma once
// The persistent kernel, as a template over the device forms it runs (resident/app/device_form.hpp
// says why). Include only from .cu files.
//
// A form is a type with:
//
//   struct my_form {
//     static constexpr const char* name = "my.operator";   // names it in errors and phase times
//     struct args { ... };                                 // trivially copyable, <= 256 bytes
//     // Phase ctx.phase of the form, called by every thread of every block of the kernel
//     // (blocks of persistent_block_threads threads; gridDim.x of them). Each phase ends with a
//     // grid barrier unless the device_form says phase_end::last_block for it.
//     __device__ static void run(const args& a, const resident::form_context& ctx);
//     // Optional: the work of the last block to finish a phase_end::last_block phase (every
//     // thread of that block calls it; it sees what every block wrote in that phase).
//     __device__ static void finish(const args& a, const resident::form_context& ctx);
//   };
//
// and resident::persistent_kernels<my_form, ...>() is a kernel that runs the mailbox's forms and
// the listed ones (resident/io/mailbox_forms.cuh); persistent_kernels_of<...>() lists every form
// itself. Operator::persistent_form() returns device_form::of<my_form>(args, that kernel).
//
// The kernel loops: the handler's forms; the controller step (thread 0 of block 0); if it
// released a sample, the DAG's forms and the end-marker step; until tear-down. Thread 0 of block
// 0 runs the framework steps, the same device functions every mode runs, so counters, policies,
// deadlines, tear-down and the heartbeat are those of the graph modes.

#include <cooperative_groups.h>
#include <cuda/atomic>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "resident/app/device_form.hpp"
#include "resident/app/loop_control.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"

namespace resident {

/// What a form's phase sees.
struct form_context {
  loop_state* loop;    // the run's loop state (resident/app/loop_device.cuh reads it)
  std::byte* scratch;  // the block's dynamic shared memory (device_form::shared_bytes of it)
  unsigned phase;      // 0 .. phases - 1
};

namespace detail {

template <class F>
concept form_with_finish = requires(const typename F::args& a, const form_context& c) {
  F::finish(a, c);
};

template <class F>
__device__ inline const typename F::args& form_args(const form_step& s) {
  return *reinterpret_cast<const typename F::args*>(s.args);
}

/// Runs the phase of the step's form: a fold over the kernel's forms that stops at its index.
template <class... Forms>
__device__ void run_form_phase(const form_step& s, const form_context& ctx) {
  std::uint32_t i = 0;
  (void)((s.form == i++ ? (Forms::run(form_args<Forms>(s), ctx), true) : false) || ...);
}

template <class... Forms>
__device__ void run_form_finish(const form_step& s, const form_context& ctx) {
  std::uint32_t i = 0;
  (void)((s.form == i++ ? (
                              [&] {
                                if constexpr (form_with_finish<Forms>)
                                  Forms::finish(form_args<Forms>(s), ctx);
                              }(),
                              true)
                        : false) ||
         ...);
}

/// Every thread of the launch waits here: a block barrier for one block, a grid barrier (with
/// its memory ordering) for a cooperative grid.
template <bool Grid>
__device__ inline void barrier() {
  if constexpr (Grid) {
    cooperative_groups::this_grid().sync();
  } else {
    resident::device::sync_block();
  }
}

/// A phase that ends with phase_end::last_block: each block counts itself done (its writes
/// released at device scope first); the block that makes the count whole acquires them all, runs
/// finish() and zeroes the count for the next pass. The other blocks do not wait.
template <class... Forms>
__device__ void finish_by_last_block(const form_step& s, const form_context& ctx) {
  __shared__ bool last;
  resident::device::sync_block();  // the block's work of the phase is done
  if (threadIdx.x == 0) {
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device> arrivals(*s.arrivals);
    last = arrivals.fetch_add(1U, cuda::memory_order_acq_rel) + 1U == gridDim.x;
  }
  resident::device::sync_block();
  if (!last) return;
  run_form_finish<Forms...>(s, ctx);
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*s.arrivals)
        .store(0U, cuda::memory_order_relaxed);
  }
}

enum verdict : std::uint32_t { idle = 0, run_dag = 1, stop = 2 };

/// The leader's verdict, read by every thread after a barrier: from shared memory in one block
/// (no trip to L2 on the way from the decision to the DAG), from the loop state across a grid.
template <bool Grid>
__device__ inline std::uint32_t verdict_of(const loop_state* loop,
                                           const volatile std::uint32_t& shared) {
  if constexpr (Grid) {
    return *static_cast<const volatile std::uint32_t*>(&loop->persistent_next);
  } else {
    return shared;
  }
}

/// The leader publishes its verdict where verdict_of reads it.
__device__ inline void set_verdict(loop_state* loop, volatile std::uint32_t& shared,
                                   std::uint32_t v) {
  loop->persistent_next = v;
  shared = v;
}

/// run_options::phase_times: the first thread's device-clock stamps of one DAG pass, one before
/// the first phase and one after each phase, into the pass's row of loop_state::phase_stamps.
/// Untimed kernels hold an empty one, which compiles to nothing.
template <bool Timed>
struct phase_clock {
  __device__ void start(const loop_state*, bool) {}
  __device__ void lap() {}
  __device__ void finish(loop_state*) {}
};

template <>
struct phase_clock<true> {
  std::uint64_t* row{nullptr};  // null in every thread but the leader
  unsigned next{0};
  std::uint64_t passes{0};
  __device__ void start(const loop_state* loop, bool leader) {
    if (!leader) return;
    row = loop->phase_stamps + 1 + (passes % loop->phase_rows) * loop->phase_stride;
    next = 0;
    lap();
  }
  __device__ void lap() {
    if (row != nullptr) row[next++] = device::globaltimer_ns();  // a store: nothing waits on it
  }
  __device__ void finish(loop_state* loop) {
    if (row == nullptr) return;
    loop->phase_stamps[0] = ++passes;
    row = nullptr;
  }
};

/// One step: its form's phases, each ending as the step says (each barrier lets the next phase,
/// and after the last the next form, see what the phase wrote).
template <bool Grid, bool Timed, class... Forms>
__device__ void run_step(const form_step& s, loop_state* loop, std::byte* scratch,
                         phase_clock<Timed>& clock) {
  const unsigned phases = s.phases;
  const std::uint32_t last_block = s.last_block_phases;
  for (unsigned p = 0; p < phases; ++p) {
    const form_context ctx{loop, scratch, p};
    run_form_phase<Forms...>(s, ctx);
    if ((last_block >> p) & 1U) {
      finish_by_last_block<Forms...>(s, ctx);
    } else {
      barrier<Grid>();
    }
    clock.lap();
  }
}

/// Whether a DAG pass of these steps passes no barrier after its last phase: none at all, or
/// a last phase that ends with last-block work.
__device__ inline bool ends_without_barrier(const form_step* body, int count) {
  if (count == 0) return true;
  const form_step& last = body[count - 1];
  return ((last.last_block_phases >> (last.phases - 1)) & 1U) != 0U;
}

template <bool Grid, bool Timed, int MinBlocks, class... Forms>
__global__ void __launch_bounds__(persistent_block_threads, MinBlocks)
    persistent_kernel(loop_state* loop, const form_step* steps, int handler_steps, int body_steps) {
  extern __shared__ uint4 scratch_words[];  // the forms' dynamic shared memory (0 without)
  auto* scratch = reinterpret_cast<std::byte*>(scratch_words);
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  __shared__ std::uint32_t shared_verdict;
  phase_clock<Timed> clock;  // the DAG passes' stamps (the handler's are not timed)
  phase_clock<false> handler_clock;
  const bool closing_barrier = ends_without_barrier(steps + handler_steps, body_steps);
  for (;;) {
    // The controller's early read of the tear-down word overlaps the handler's polling.
    device::early_read ahead;
    if (leader) ahead = device::read_ahead(loop);
    for (int i = 0; i < handler_steps; ++i) {
      run_step<Grid, false, Forms...>(steps[i], loop, scratch, handler_clock);
    }
    if (leader) {
      // The verdict from the pass's own outcome, not read back from the loop state (a load
      // between the decision and the DAG).
      const device::pass_outcome o = device::controller_decide<false>(loop, ahead);
      set_verdict(loop, shared_verdict, o.stopped ? stop : o.released ? run_dag : idle);
    }
    barrier<Grid>();
    const std::uint32_t v = verdict_of<Grid>(loop, shared_verdict);
    if (v == stop) return;
    if (v == run_dag) {
      clock.start(loop, leader);
      for (int i = 0; i < body_steps; ++i) {
        run_step<Grid, Timed, Forms...>(steps[handler_steps + i], loop, scratch, clock);
      }
      // Every thread read this pass's verdict before the leader writes the next one: a body's
      // forms end in barriers, an empty body (the handler is the only operator) needs its own,
      // or a block still reading would see the next verdict and take another number of
      // barriers than the rest (the grid would hang). A body whose last phase ends with
      // last-block work needs one as well.
      if (closing_barrier) barrier<Grid>();
      if (leader) {
        const bool stopped = device::end_marker_step<false>(loop);
        set_verdict(loop, shared_verdict, stopped ? stop : idle);
      }
      barrier<Grid>();
      clock.lap();
      // The pass that stops is not counted: its row lacks the closing barrier's stamp.
      if (verdict_of<Grid>(loop, shared_verdict) == stop) return;
    }
    barrier<Grid>();  // the verdict is written again only after every thread read it
    if (v == run_dag) {
      clock.lap();
      clock.finish(loop);
    }
  }
}

/// The kernel set of a list of forms; MinBlocks: __launch_bounds__'s blocks per SM.
template <int MinBlocks, class... Forms>
struct persistent_kernel_set_of {
  static_assert(sizeof...(Forms) > 0, "a persistent kernel runs at least one form");
  using kernel_fn = void (*)(loop_state*, const form_step*, int, int);

  static constexpr const form_type* forms[] = {&form_type_of<Forms>...};

  static kernel_fn kernel(bool grid, bool timed) {
    if (timed) {
      return grid ? persistent_kernel<true, true, MinBlocks, Forms...>
                  : persistent_kernel<false, true, MinBlocks, Forms...>;
    }
    return grid ? persistent_kernel<true, false, MinBlocks, Forms...>
                : persistent_kernel<false, false, MinBlocks, Forms...>;
  }

  /// Above the default 48 KiB a kernel must opt in to its dynamic shared memory.
  static void allow_shared(kernel_fn k, std::size_t bytes) {
    if (bytes > 48 * 1024) {
      RESIDENT_CUDA_TRY(cudaFuncSetAttribute(reinterpret_cast<const void*>(k),
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(bytes)));
    }
  }

  static int blocks_per_sm(bool timed, std::size_t shared_bytes) {
    int fit[2] = {0, 0};
    for (const bool grid : {false, true}) {
      const kernel_fn f = kernel(grid, timed);
      allow_shared(f, shared_bytes);
      RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &fit[grid ? 1 : 0], f, persistent_block_threads, shared_bytes));
    }
    return std::min(fit[0], fit[1]);
  }

  static void launch(const persistent_launch& l) {
    const kernel_fn f = kernel(l.blocks > 1, l.timed);
    allow_shared(f, l.shared_bytes);
    if (l.blocks <= 1) {
      f<<<1, persistent_block_threads, l.shared_bytes, l.stream>>>(l.loop, l.steps, l.handler_steps,
                                                                   l.body_steps);
      RESIDENT_CUDA_CHECK_LAUNCH("persistent_kernel");
      return;
    }
    loop_state* loop = l.loop;
    const form_step* steps = l.steps;
    int handler = l.handler_steps;
    int body = l.body_steps;
    void* args[] = {&loop, &steps, &handler, &body};
    RESIDENT_CUDA_TRY(cudaLaunchCooperativeKernel(
        reinterpret_cast<const void*>(f), dim3(static_cast<unsigned>(l.blocks)),
        dim3(persistent_block_threads), args, l.shared_bytes, l.stream));
  }

  static inline const persistent_kernel_set set{forms, &blocks_per_sm, &launch};
};

}  // namespace detail

/// A persistent kernel that runs exactly the listed forms (instantiated in the calling
/// translation unit, which must be a .cu file).
template <class... Forms>
[[nodiscard]] const persistent_kernel_set& persistent_kernels_of() {
  return detail::persistent_kernel_set_of<1, Forms...>::set;
}

}  // namespace resident
