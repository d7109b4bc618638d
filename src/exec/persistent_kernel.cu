// The persistent mode's kernel: one block of persistent_threads threads that loops handler ->
// controller step -> [DAG -> end-marker step] until tear-down, with block barriers between the
// forms. Thread 0 runs the framework steps (the same device functions every mode runs), so the
// counters, policies, tear-down and heartbeat are those of the graph modes.

#include "exec/loop_control.cuh"
#include "exec/persistent.hpp"
#include "io/mailbox_forms.cuh"
#include "ops/vector_forms.cuh"
#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

// One form, block-wide: every thread calls it (the mailbox's and the sum's forms hold barriers).
__device__ void run_form(const persistent_step& step, loop_state* loop) {
  const auto* in = static_cast<const float*>(step.in);
  auto* out = static_cast<float*>(step.out);
  const std::int64_t first = threadIdx.x;
  const std::int64_t stride = blockDim.x;
  switch (step.form) {
    case device_form::mailbox_rx:
      io::detail::mailbox_rx_pass(step.mailbox, loop, static_cast<std::byte*>(step.out));
      break;
    case device_form::mailbox_tx:
      io::detail::mailbox_tx_commit(step.mailbox, loop, static_cast<const std::byte*>(step.in));
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
      ops::detail::sum_reduce_block(in, out, step.elements);
      break;
  }
}

enum verdict : int { idle = 0, run_dag = 1, stop = 2 };

__global__ void __launch_bounds__(persistent_threads)
    persistent_kernel(loop_state* loop, const persistent_step* steps, int handler_steps,
                      int body_steps) {
  __shared__ int next;
  for (;;) {
    // The controller's early read of the tear-down word overlaps the handler's polling.
    device::early_read ahead;
    if (threadIdx.x == 0) ahead = device::read_ahead(loop);
    for (int i = 0; i < handler_steps; ++i) {
      run_form(steps[i], loop);
      __syncthreads();  // each form sees what the one before it wrote
    }
    if (threadIdx.x == 0) {
      device::controller_decide<false>(loop, ahead);
      next = loop->stop_requested != 0U ? stop : (loop->released != 0U ? run_dag : idle);
    }
    __syncthreads();
    const int v = next;
    if (v == stop) return;
    if (v == run_dag) {
      for (int i = 0; i < body_steps; ++i) {
        run_form(steps[handler_steps + i], loop);
        __syncthreads();
      }
      if (threadIdx.x == 0) {
        device::end_marker_step<false>(loop);
        next = loop->stop_requested != 0U ? stop : idle;
      }
      __syncthreads();
      if (next == stop) return;
    }
    __syncthreads();  // `next` is written again only after every thread read it
  }
}

}  // namespace

int persistent_blocks_per_sm() {
  int blocks = 0;
  RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, persistent_kernel,
                                                                  persistent_threads, 0));
  return blocks;
}

void launch_persistent(loop_state* loop, const persistent_step* steps, int handler_steps,
                       int body_steps, cudaStream_t s) {
  persistent_kernel<<<1, persistent_threads, 0, s>>>(loop, steps, handler_steps, body_steps);
  RESIDENT_CUDA_CHECK_LAUNCH("persistent_kernel");
}

}  // namespace resident::detail
