#include "bench/reef_kernels.hpp"

#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"

namespace resident::bench {

namespace {

__global__ void rt_done_kernel(const loop_state* loop, rt_done_stamp* ring,
                               std::uint32_t capacity) {
  const std::uint64_t seq = device::current_sample(loop);
  rt_done_stamp& slot = ring[seq % capacity];
  slot.ns = device::globaltimer_ns();
  slot.seq = seq;
}

}  // namespace

void launch_rt_done_stamp(cudaStream_t s, const loop_state* loop, rt_done_stamp* ring,
                          std::uint32_t capacity) {
  rt_done_kernel<<<1, 1, 0, s>>>(loop, ring, capacity);
  RESIDENT_CUDA_CHECK_LAUNCH("rt_done_kernel");
}

}  // namespace resident::bench
