// The persistent mode's kernel: one block of persistent_threads threads (or a cooperative grid of
// them) that loops handler -> controller step -> [DAG -> end-marker step] until tear-down, with
// block (grid) barriers between the forms. Thread 0 runs the framework steps (the same device
// functions every mode runs), so the counters, policies, tear-down and heartbeat are those of the
// graph modes.

#include <cooperative_groups.h>

#include <algorithm>

#include "exec/loop_control.cuh"
#include "exec/persistent.hpp"
#include "io/mailbox_forms.cuh"
#include "ops/vector_forms.cuh"
#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

// Which threads run a form: the element-wise ones spread over every block of the grid; the
// mailbox's and the sum's hold block barriers and run in block 0 alone.
__device__ void run_form(const persistent_step& step, loop_state* loop) {
  const auto* in = static_cast<const float*>(step.in);
  auto* out = static_cast<float*>(step.out);
  const std::int64_t first = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  const bool leader_block = blockIdx.x == 0;
  switch (step.form) {
    case device_form::mailbox_rx:
      if (leader_block) {
        io::detail::mailbox_rx_pass(step.mailbox, loop, static_cast<std::byte*>(step.out));
      }
      break;
    case device_form::mailbox_tx:
      if (leader_block) {
        io::detail::mailbox_tx_commit(step.mailbox, loop, static_cast<const std::byte*>(step.in));
      }
      break;
    case device_form::copy:
      ops::detail::copy_range(in, out, step.elements, first, stride);
      break;
    case device_form::affine:
      ops::detail::affine_range(in, out, step.elements, step.scale, step.offset, first, stride);
      break;
    case device_form::square:
      ops::detail::square_range(in, out, step.elements, first, stride);
      break;
    case device_form::sum_reduce:
      if (leader_block) ops::detail::sum_reduce_block(in, out, step.elements);
      break;
  }
}

enum verdict : std::uint32_t { idle = 0, run_dag = 1, stop = 2 };

/// Every thread of the launch waits here: a block barrier for one block, a grid barrier (with
/// its memory ordering) for a cooperative grid.
template <bool Grid>
__device__ void barrier() {
  if constexpr (Grid) {
    cooperative_groups::this_grid().sync();
  } else {
    __syncthreads();
  }
}

/// The leader's verdict, read by every thread after a barrier: from shared memory in one block
/// (no trip to L2 on the way from the decision to the DAG), from the loop state across a grid.
template <bool Grid>
__device__ std::uint32_t verdict_of(const loop_state* loop, const volatile std::uint32_t& shared) {
  if constexpr (Grid) {
    return *static_cast<const volatile std::uint32_t*>(&loop->persistent_next);
  } else {
    return shared;
  }
}

/// The leader publishes its verdict where verdict_of reads it.
__device__ void set_verdict(loop_state* loop, volatile std::uint32_t& shared, std::uint32_t v) {
  loop->persistent_next = v;
  shared = v;
}

template <bool Grid>
__global__ void __launch_bounds__(persistent_threads)
    persistent_kernel(loop_state* loop, const persistent_step* steps, int handler_steps,
                      int body_steps) {
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  __shared__ std::uint32_t shared_verdict;
  for (;;) {
    // The controller's early read of the tear-down word overlaps the handler's polling.
    device::early_read ahead;
    if (leader) ahead = device::read_ahead(loop);
    for (int i = 0; i < handler_steps; ++i) {
      run_form(steps[i], loop);
      barrier<Grid>();  // each form sees what the one before it wrote
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
      for (int i = 0; i < body_steps; ++i) {
        run_form(steps[handler_steps + i], loop);
        barrier<Grid>();
      }
      if (leader) {
        const bool stopped = device::end_marker_step<false>(loop);
        set_verdict(loop, shared_verdict, stopped ? stop : idle);
      }
      barrier<Grid>();
      if (verdict_of<Grid>(loop, shared_verdict) == stop) return;
    }
    barrier<Grid>();  // the verdict is written again only after every thread read it
  }
}

}  // namespace

int persistent_blocks_per_sm() {
  int one = 0;
  int grid = 0;
  RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&one, persistent_kernel<false>,
                                                                  persistent_threads, 0));
  RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&grid, persistent_kernel<true>,
                                                                  persistent_threads, 0));
  return std::min(one, grid);
}

void launch_persistent(loop_state* loop, const persistent_step* steps, int handler_steps,
                       int body_steps, int blocks, cudaStream_t s) {
  if (blocks <= 1) {
    persistent_kernel<false>
        <<<1, persistent_threads, 0, s>>>(loop, steps, handler_steps, body_steps);
    RESIDENT_CUDA_CHECK_LAUNCH("persistent_kernel");
    return;
  }
  void* args[] = {&loop, &steps, &handler_steps, &body_steps};
  RESIDENT_CUDA_TRY(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_kernel<true>),
                                                dim3(static_cast<unsigned>(blocks)),
                                                dim3(persistent_threads), args, 0, s));
}

}  // namespace resident::detail
