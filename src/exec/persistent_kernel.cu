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

/// run_options::phase_times: the first thread's device-clock stamps of one DAG pass, one before
/// the first phase and one after each barrier, into the pass's row of loop_state::phase_stamps.
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

/// One form, its phases separated by barriers (each phase sees what the one before it wrote,
/// and the next form sees the last).
template <bool Grid, bool Camera, bool Timed>
__device__ void run_step(const persistent_step& step, loop_state* loop, std::byte* scratch,
                         phase_clock<Timed>& clock) {
  if constexpr (Camera) {
    const unsigned phases = step.phases;
    for (unsigned p = 0; p < phases; ++p) {
      run_camera_form(step, p, loop, scratch);
      barrier<Grid>();
      clock.lap();
    }
  } else {
    run_lab_form(step, loop);
    barrier<Grid>();
    clock.lap();
  }
}

// The camera kernel asks for two blocks per SM (at most 64 registers, some spilled): its forms
// are latency-bound (a line's serial CRC chain, a demosaic tile pair per block), and twice the
// blocks in flight took a 1080p frame from 91.1 to 85.3 us and a 4K one from 240.3 to 207.2 us
// on the H200, against one block per SM (116 registers). docs/findings.md, "Camera pipeline".
template <bool Grid, bool Camera, bool Timed>
__global__ void __launch_bounds__(persistent_threads, Camera ? 2 : 1)
    persistent_kernel(loop_state* loop, const persistent_step* steps, int handler_steps,
                      int body_steps) {
  extern __shared__ uint4 scratch_words[];  // the camera forms' (dynamic: 0 without them)
  auto* scratch = reinterpret_cast<std::byte*>(scratch_words);
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  __shared__ std::uint32_t shared_verdict;
  phase_clock<Timed> clock;  // the DAG passes' stamps (the handler's are not timed)
  phase_clock<false> handler_clock;
  for (;;) {
    // The controller's early read of the tear-down word overlaps the handler's polling.
    device::early_read ahead;
    if (leader) ahead = device::read_ahead(loop);
    for (int i = 0; i < handler_steps; ++i) {
      run_step<Grid, Camera>(steps[i], loop, scratch, handler_clock);
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
        run_step<Grid, Camera>(steps[handler_steps + i], loop, scratch, clock);
      }
      // Every thread read this pass's verdict before the leader writes the next one: a body's
      // forms end in barriers, an empty body (the handler is the only operator) needs its own,
      // or a block still reading would see the next verdict and take another number of
      // barriers than the rest (the grid would hang).
      if (body_steps == 0) barrier<Grid>();
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

using kernel_fn = void (*)(loop_state*, const persistent_step*, int, int);

template <bool Timed>
kernel_fn kernel_of(bool grid, bool camera) {
  if (camera) {
    return grid ? persistent_kernel<true, true, Timed> : persistent_kernel<false, true, Timed>;
  }
  return grid ? persistent_kernel<true, false, Timed> : persistent_kernel<false, false, Timed>;
}

kernel_fn kernel_of(const persistent_kernel_choice& k, bool grid) {
  return k.timed ? kernel_of<true>(grid, k.camera) : kernel_of<false>(grid, k.camera);
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
    const kernel_fn f = kernel_of(k, grid);
    allow_shared(f, k.shared_bytes);
    RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &fit[grid ? 1 : 0], f, persistent_threads, k.shared_bytes));
  }
  return std::min(fit[0], fit[1]);
}

void launch_persistent(loop_state* loop, const persistent_step* steps, int handler_steps,
                       int body_steps, int blocks, const persistent_kernel_choice& k,
                       cudaStream_t s) {
  const kernel_fn f = kernel_of(k, blocks > 1);
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
