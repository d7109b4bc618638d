#pragma once
// Kernel launches of the reference operators, optionally with programmatic dependent launch
// (PDL, sm_90): the kernel may be scheduled while the kernel before it on the stream is still
// running, and waits on the device for that kernel's completion and memory before it touches
// any. In a captured graph this becomes a programmatic edge, which takes most of a dependent
// node's launch latency off the chain. Include only from .cu files of src/ops and src/sched.

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"

namespace resident::ops::detail {

/// First statement of every operator kernel. Lets the next kernel (if it was launched as a
/// programmatic dependent) be scheduled now, then waits until every kernel this one depends on
/// has finished and its writes are visible. Both are no-ops for a plain launch.
__device__ __forceinline__ void begin_dependent_kernel() {
  ::resident::device::let_next_kernel_start();
  ::resident::device::wait_for_previous_kernels();
}

/// Launches `kernel` on `s` with `shared` bytes of dynamic shared memory; with `programmatic`,
/// as a programmatic dependent of the stream's previous kernel. `name` names the kernel in the
/// error.
template <class... Params, class... Args>
void launch_kernel_shared(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                          std::size_t shared, cudaStream_t s, bool programmatic, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = s;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (programmatic) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  const cudaError_t status = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (status != cudaSuccess) [[unlikely]] {
    ::resident::detail::throw_cuda_error(status, name, __FILE__, __LINE__);
  }
}

/// The same without dynamic shared memory.
template <class... Params, class... Args>
void launch_kernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                   cudaStream_t s, bool programmatic, Args&&... args) {
  launch_kernel_shared(name, kernel, grid, block, 0, s, programmatic, std::forward<Args>(args)...);
}

}  // namespace resident::ops::detail
