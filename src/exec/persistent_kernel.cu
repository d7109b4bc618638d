// The persistent mode's kernel: one block of persistent_threads threads (or a cooperative grid of
// them) that loops handler -> controller step -> [DAG -> end-marker step] until tear-down, with
// block (grid) barriers between the forms. Thread 0 runs the framework steps (the same device
// functions every mode runs), so the counters, policies, tear-down and heartbeat are those of the
// graph modes.

#include <cooperative_groups.h>

#include <algorithm>

#include "exec/loop_control.cuh"
#include "exec/persistent.hpp"
#include "io/display_forms.cuh"
#include "io/mailbox_forms.cuh"
#include "io/sensor_bridge_forms.cuh"
#include "ops/imaging/csi2_forms.cuh"
#include "ops/imaging/demosaic_forms.cuh"
#include "ops/imaging/isp_forms.cuh"
#include "ops/imaging/resize_forms.cuh"
#include "ops/vector_forms.cuh"
#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

namespace imaging = ::resident::ops::imaging::detail;

// The camera forms assume the persistent kernel's block size.
static_assert(imaging::csi2_form::max_threads == persistent_threads);
static_assert(imaging::isp_form::max_threads == persistent_threads);
static_assert(imaging::demosaic_form::max_threads == persistent_threads);

// Which threads run a form: the element-wise ones spread over every block of the grid; the
// mailbox's and the sum's hold block barriers and run in block 0 alone.
__device__ void run_lab_form(const persistent_step& step, loop_state* loop) {
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
    default:
      break;
  }
}

// The camera forms: each spreads its work over the grid and says what runs in which phase.
__device__ void run_camera_form(const persistent_step& step, unsigned phase, loop_state* loop,
                                std::byte* scratch) {
  switch (step.form) {
    case device_form::frame_rx:
      if (blockIdx.x == 0 && threadIdx.x == 0) {
        io::detail::frame_rx_pass(step.frame_rx.ring, loop, step.frame_rx.out);
      }
      break;
    case device_form::csi2_reconstruct:
      imaging::csi2_form::run(step.csi2, phase, scratch);
      break;
    case device_form::raw_isp:
      imaging::isp_form::run(step.isp, phase, scratch);
      break;
    case device_form::demosaic:
      imaging::demosaic_form::run(step.demosaic, scratch);
      break;
    case device_form::convert_resize:
      imaging::resize_form::run(step.resize);
      break;
    case device_form::display_tx:
      io::detail::display_form::run(step.display, phase, loop);
      break;
    default:
      run_lab_form(step, loop);
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

/// One form, its phases separated by barriers (each phase sees what the one before it wrote,
/// and the next form sees the last).
template <bool Grid, bool Camera>
__device__ void run_step(const persistent_step& step, loop_state* loop, std::byte* scratch) {
  if constexpr (Camera) {
    const unsigned phases = step.phases;
    for (unsigned p = 0; p < phases; ++p) {
      run_camera_form(step, p, loop, scratch);
      barrier<Grid>();
    }
  } else {
    run_lab_form(step, loop);
    barrier<Grid>();
  }
}

template <bool Grid, bool Camera>
__global__ void __launch_bounds__(persistent_threads)
    persistent_kernel(loop_state* loop, const persistent_step* steps, int handler_steps,
                      int body_steps) {
  extern __shared__ uint4 scratch_words[];  // the camera forms' (dynamic: 0 without them)
  auto* scratch = reinterpret_cast<std::byte*>(scratch_words);
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  __shared__ std::uint32_t shared_verdict;
  for (;;) {
    // The controller's early read of the tear-down word overlaps the handler's polling.
    device::early_read ahead;
    if (leader) ahead = device::read_ahead(loop);
    for (int i = 0; i < handler_steps; ++i) run_step<Grid, Camera>(steps[i], loop, scratch);
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
        run_step<Grid, Camera>(steps[handler_steps + i], loop, scratch);
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

using kernel_fn = void (*)(loop_state*, const persistent_step*, int, int);

kernel_fn kernel_of(bool grid, bool camera) {
  if (camera) return grid ? persistent_kernel<true, true> : persistent_kernel<false, true>;
  return grid ? persistent_kernel<true, false> : persistent_kernel<false, false>;
}

/// Above the default 48 KiB a kernel must opt in to its dynamic shared memory.
void allow_shared(kernel_fn k, std::size_t bytes) {
  if (bytes > 48 * 1024) {
    RESIDENT_CUDA_TRY(cudaFuncSetAttribute(reinterpret_cast<const void*>(k),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
  }
}

}  // namespace

int persistent_blocks_per_sm(const persistent_kernel_choice& k) {
  int fit[2] = {0, 0};
  for (const bool grid : {false, true}) {
    const kernel_fn f = kernel_of(grid, k.camera);
    allow_shared(f, k.shared_bytes);
    RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &fit[grid ? 1 : 0], f, persistent_threads, k.shared_bytes));
  }
  return std::min(fit[0], fit[1]);
}

void launch_persistent(loop_state* loop, const persistent_step* steps, int handler_steps,
                       int body_steps, int blocks, const persistent_kernel_choice& k,
                       cudaStream_t s) {
  const kernel_fn f = kernel_of(blocks > 1, k.camera);
  allow_shared(f, k.shared_bytes);
  if (blocks <= 1) {
    f<<<1, persistent_threads, k.shared_bytes, s>>>(loop, steps, handler_steps, body_steps);
    RESIDENT_CUDA_CHECK_LAUNCH(k.camera ? "persistent_kernel<camera>" : "persistent_kernel");
    return;
  }
  void* args[] = {&loop, &steps, &handler_steps, &body_steps};
  RESIDENT_CUDA_TRY(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(f),
                                                dim3(static_cast<unsigned>(blocks)),
                                                dim3(persistent_threads), args, k.shared_bytes, s));
}

}  // namespace resident::detail
