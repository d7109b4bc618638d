// The framework kernels of every iteration: one thread each, calling the steps in
// resident/app/loop_control.cuh. A single writer is what keeps the shared words safe without
// host-native atomics.

#include "exec/loop_kernels.hpp"
#include "resident/app/loop_control.cuh"
#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

__global__ void controller_kernel(loop_state* s) { device::controller_step<false>(s); }
__global__ void end_marker_kernel(loop_state* s) { device::end_marker_step<false>(s); }
// Only these two reference the device-side cudaGraphLaunch (see loop_control.cuh).
__global__ void tail_dispatcher_kernel(loop_state* s) { device::controller_step<true>(s); }
__global__ void tail_end_marker_kernel(loop_state* s) { device::end_marker_step<true>(s); }

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
