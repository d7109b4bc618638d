#pragma once
// Kernel launches of the imaging operators: ops/launch.cuh's launch_kernel with dynamic shared
// memory. Include only from .cu files of src/ops/imaging.

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "ops/launch.cuh"

namespace resident::ops::imaging::kernels {

using ::resident::ops::detail::begin_dependent_kernel;

/// Launches `kernel` on `s` with `shared` bytes of dynamic shared memory; with `programmatic`,
/// as a programmatic dependent of the stream's previous kernel (the kernel must start with
/// begin_dependent_kernel()). `name` names the kernel in the error.
template <class... Params, class... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
            cudaStream_t s, bool programmatic, Args&&... args) {
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

}  // namespace resident::ops::imaging::kernels
