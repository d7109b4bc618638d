// Deterministic sum: one block, each thread accumulates a fixed strided subset in fp64, then a
// fixed-shape block reduction. Same input, same bits, in every mode and on every run.

#include <cub/block/block_reduce.cuh>

#include "ops/launch.cuh"
#include "resident/ops/vector_forms.cuh"
#include "resident/cuda/error.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::ops::detail {

namespace {

__global__ void __launch_bounds__(reduce_threads)
    sum_reduce_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n) {
  begin_dependent_kernel();
  sum_reduce_block(in, out, n);
}

// Same order of accumulation as sum_reduce_kernel over the first `*valid` values, so a masked
// batch sums exactly as an unpadded one of the same count.
__global__ void __launch_bounds__(reduce_threads)
    masked_sum_reduce_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n,
                             const std::int64_t* __restrict__ valid) {
  using block_reduce = cub::BlockReduce<double, reduce_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  const std::int64_t v = *valid;
  const std::int64_t count = v < 0 ? 0 : (v < n ? v : n);
  double partial = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += reduce_threads) partial += in[i];
  const double total = block_reduce(temp).Sum(partial);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total);
}

}  // namespace

void launch_sum_reduce(const float* in, float* out, std::int64_t n, cudaStream_t s,
                       bool programmatic) {
  launch_kernel("sum_reduce_kernel", sum_reduce_kernel, dim3(1), dim3(reduce_threads), s,
                programmatic, in, out, n);
}

void launch_masked_sum_reduce(const float* in, float* out, std::int64_t n,
                              const std::int64_t* valid, cudaStream_t s) {
  masked_sum_reduce_kernel<<<1, reduce_threads, 0, s>>>(in, out, n, valid);
  RESIDENT_CUDA_CHECK_LAUNCH("masked_sum_reduce_kernel");
}

sum_reduce_node make_sum_reduce_node(const float* in, float* out, std::int64_t n) {
  return sum_reduce_node(sum_reduce_kernel, dim3(1), dim3(reduce_threads), 0, in, out, n);
}

}  // namespace resident::ops::detail
