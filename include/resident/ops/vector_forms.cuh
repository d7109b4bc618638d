#pragma once
// The lab vector operators' device forms: the bodies their kernels run, callable by any thread
// range, so the persistent mode's kernel (src/exec/persistent_kernel.cu) runs the very same
// arithmetic (same bits) without a launch. Include only from .cu files.

#include <cub/block/block_reduce.cuh>

#include <cstdint>

#include "resident/app/persistent_kernel.cuh"

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

namespace resident::ops {

/// The vector operators' device forms (persistent mode): the element-wise ones spread over every
/// block of the grid, the sum runs in block 0.
struct vector_form_args {
  const float* in;
  float* out;
  std::int64_t elements;
  float scale;
  float offset;
};

namespace detail {
__device__ inline std::int64_t grid_first() {
  return blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return std::int64_t{gridDim.x} * blockDim.x; }
}  // namespace detail

struct copy_form {
  static constexpr const char* name = "ops.copy";
  using args = vector_form_args;
  __device__ static void run(const args& a, const form_context&) {
    detail::copy_range(a.in, a.out, a.elements, detail::grid_first(), detail::grid_stride());
  }
};

struct affine_form {
  static constexpr const char* name = "ops.affine";
  using args = vector_form_args;
  __device__ static void run(const args& a, const form_context&) {
    detail::affine_range(a.in, a.out, a.elements, a.scale, a.offset, detail::grid_first(),
                         detail::grid_stride());
  }
};

struct square_form {
  static constexpr const char* name = "ops.square";
  using args = vector_form_args;
  __device__ static void run(const args& a, const form_context&) {
    detail::square_range(a.in, a.out, a.elements, detail::grid_first(), detail::grid_stride());
  }
};

struct sum_reduce_form {
  static constexpr const char* name = "ops.sum_reduce";
  using args = vector_form_args;
  __device__ static void run(const args& a, const form_context&) {
    if (blockIdx.x == 0) detail::sum_reduce_block(a.in, a.out, a.elements);
  }
};

}  // namespace resident::ops
