#pragma once
// Kernel launches of the imaging operators: ops/launch.cuh's, with dynamic shared memory.
// Include only from .cu files of src/ops/imaging.

#include "ops/launch.cuh"

namespace resident::ops::imaging::kernels {

using ::resident::ops::detail::begin_dependent_kernel;

/// ops::detail::launch_kernel_shared: `shared` bytes of dynamic shared memory, and with
/// `programmatic` a programmatic dependent of the stream's previous kernel.
template <class... Params, class... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
            cudaStream_t s, bool programmatic, Args&&... args) {
  ::resident::ops::detail::launch_kernel_shared(name, kernel, grid, block, shared, s, programmatic,
                                                std::forward<Args>(args)...);
}

}  // namespace resident::ops::imaging::kernels
