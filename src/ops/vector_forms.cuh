#pragma once
// The lab vector operators' device forms: the bodies their kernels run, callable by any thread
// range, so the persistent mode's kernel (src/exec/persistent_kernel.cu) runs the very same
// arithmetic (same bits) without a launch. Include only from .cu files.

#include <cub/block/block_reduce.cuh>

#include <cstdint>

namespace resident::ops::detail {

/// Threads `first`, `first + stride`, ... of `n` values: out = scale * in + offset.
__device__ inline void affine_range(const float* __restrict__ in, float* __restrict__ out,
                                    std::int64_t n, float scale, float offset, std::int64_t first,
                                    std::int64_t stride) {
  for (std::int64_t i = first; i < n; i += stride) out[i] = fmaf(scale, in[i], offset);
}

__device__ inline void square_range(const float* __restrict__ in, float* __restrict__ out,
                                    std::int64_t n, std::int64_t first, std::int64_t stride) {
  for (std::int64_t i = first; i < n; i += stride) {
    const float x = in[i];
    out[i] = x * x;
  }
}

__device__ inline void copy_range(const float* __restrict__ in, float* __restrict__ out,
                                  std::int64_t n, std::int64_t first, std::int64_t stride) {
  for (std::int64_t i = first; i < n; i += stride) out[i] = in[i];
}

/// The deterministic sum's block size: its form needs a block of exactly this many threads.
inline constexpr int reduce_threads = 512;

/// One block of reduce_threads threads: out[0] = the sum of in[0..n), each thread accumulating
/// a fixed strided subset in fp64, then a fixed-shape block reduction. Every thread must call it.
__device__ inline void sum_reduce_block(const float* __restrict__ in, float* __restrict__ out,
                                        std::int64_t n) {
  using block_reduce = cub::BlockReduce<double, reduce_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  double partial = 0.0;
  for (std::int64_t i = threadIdx.x; i < n; i += reduce_threads) partial += in[i];
  const double total = block_reduce(temp).Sum(partial);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total);
}

}  // namespace resident::ops::detail
