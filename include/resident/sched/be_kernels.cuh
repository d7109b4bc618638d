#pragma once
// Device half of the BE kernel library (resident/sched/be_kernels.hpp): the body of one
// logical block of each kernel. Include only from .cu files.
//
// A body runs on exactly be_block_threads threads, after be_block::begin() returned true, and
// finds its work from blk.index() alone (never blockIdx: a merged kernel runs it in whatever
// CUDA block it likes). Its shared memory is static and under 9 KiB, so one merged kernel can
// hold two bodies. A GEMM-shaped body checks blk.preempted() before every K-step, and when the
// launch gives a checkpoint area it saves its partial sums there before it returns and starts
// from them on the next attempt; every body writes its outputs only after its last check and
// ends with blk.commit(). Each be_block call is block-uniform: all threads reach it.

#include <cub/block/block_reduce.cuh>

#include <cstdint>
#include <type_traits>

#include "resident/cuda/block_sync.cuh"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/preemptible.cuh"

namespace resident::sched {

namespace detail {

// 16 x 16 thread lanes cover a 64 x 64 tile, 4 x 4 outputs each, strided by 16: lane (lr, lc)
// holds rows lr + 16 i and columns lc + 16 j, so neighbouring lanes read neighbouring shared
// words and write neighbouring outputs.
inline constexpr int tile_lanes = 16;
inline constexpr int tile_per_lane = be_tile / tile_lanes;
static_assert(tile_lanes * tile_lanes == be_block_threads);
static_assert(be_tile * be_k_step == 4 * be_block_threads, "each thread loads 4 per tile");

// Tiles are stored reduction-major ([kk][row], [kk][col]); the extra column keeps the
// transposing stores of the loads from hitting one bank.
inline constexpr int tile_pitch = be_tile + 1;
using k_tile = float[be_k_step][tile_pitch];

__device__ inline void multiply_tile(const k_tile& a, const k_tile& b, int row_lane, int col_lane,
                                     float (&acc)[tile_per_lane][tile_per_lane]) {
#pragma unroll
  for (int kk = 0; kk < be_k_step; ++kk) {
    float af[tile_per_lane];
    float bf[tile_per_lane];
#pragma unroll
    for (int i = 0; i < tile_per_lane; ++i) af[i] = a[kk][row_lane + tile_lanes * i];
#pragma unroll
    for (int j = 0; j < tile_per_lane; ++j) bf[j] = b[kk][col_lane + tile_lanes * j];
#pragma unroll
    for (int i = 0; i < tile_per_lane; ++i) {
#pragma unroll
      for (int j = 0; j < tile_per_lane; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
    }
  }
}

// Checkpoint layout: accumulator (i, j) of every thread, thread-minor, so the stores and
// loads of a block are coalesced.
__device__ inline std::int32_t restore_tile(const be_block& blk,
                                            float (&acc)[tile_per_lane][tile_per_lane]) {
  const std::uint32_t steps = blk.saved_steps();
  if (steps == 0U) return 0;
  const float* s = blk.saved_state() + threadIdx.x;
#pragma unroll
  for (int i = 0; i < tile_per_lane; ++i) {
#pragma unroll
    for (int j = 0; j < tile_per_lane; ++j) {
      acc[i][j] = s[(i * tile_per_lane + j) * be_block_threads];
    }
  }
  return static_cast<std::int32_t>(steps) * be_k_step;
}

// Block-uniform: keeps the partial sums of the K-steps before k0, when the launch allows it
// and this attempt added any.
__device__ inline void save_tile(be_block& blk, const float (&acc)[tile_per_lane][tile_per_lane],
                                 std::int32_t k_first, std::int32_t k0) {
  if (!blk.worth_saving(static_cast<std::uint32_t>((k0 - k_first) / be_k_step))) return;
  float* s = blk.saved_state() + threadIdx.x;
#pragma unroll
  for (int i = 0; i < tile_per_lane; ++i) {
#pragma unroll
    for (int j = 0; j < tile_per_lane; ++j)
      __stcs(&s[(i * tile_per_lane + j) * be_block_threads], acc[i][j]);
  }
  blk.checkpoint(static_cast<std::uint32_t>(k0 / be_k_step));
}

}  // namespace detail

/// How a gemm block loads its operands (the same values either way, so the same bits).
/// `per_load`: each K-step computes each load's index from its row and reduction, loads, then
/// multiplies. The BE kernels, held to 64 registers with four blocks per SM to hide the
/// latency, run fastest so (be_probe). `prefetched`: one base per operand, stepped by a fixed
/// stride, and each K-step's loads issued into registers before the step before it multiplies,
/// so their latency overlaps that work. For the RT gemms of bench reef, each block alone on its
/// SM with nothing else to hide the latency, the three-layer body went from 128.6 to 108-109 us
/// with the bases alone and to 86.7-86.8 us with the prefetch (`bench/results/h200/README.md`).
enum class gemm_loads { per_load, prefetched };

namespace detail {

/// `act` applied to v, as PyTorch defines it (be_kernels.hpp, activation).
__device__ inline float apply_activation(float v, activation act) {
  switch (act) {
    case activation::relu:
      return fmaxf(v, 0.0F);
    case activation::relu6:
      return fminf(fmaxf(v, 0.0F), 6.0F);
    case activation::silu:
      return v / (1.0F + expf(-v));
    case activation::sigmoid:
      return 1.0F / (1.0F + expf(-v));
    case activation::hardswish:
      return v * fminf(fmaxf(v + 3.0F, 0.0F), 6.0F) / 6.0F;
    case activation::hardsigmoid:
      return fminf(fmaxf(v + 3.0F, 0.0F), 6.0F) / 6.0F;
    case activation::none:
      break;
  }
  return v;
}

// What a gemm block writes for accumulator `acc` of column `col`.
struct plain_output {
  __device__ float operator()(float acc, std::int32_t) const { return acc; }
};
struct bias_act_output {
  const float* bias;
  activation act;
  __device__ float operator()(float acc, std::int32_t col) const {
    return apply_activation(acc + bias[col], act);
  }
};

template <gemm_loads Loads, class Output>
__device__ inline void gemm_tile(const gemm_args& args, be_block& blk, const Output& output) {
  __shared__ k_tile a_tile;
  __shared__ k_tile b_tile;
  const int t = static_cast<int>(threadIdx.x);
  const std::int32_t tiles_n = (args.n + be_tile - 1) / be_tile;
  const std::int32_t row0 = blk.index() / tiles_n * be_tile;
  const std::int32_t col0 = blk.index() % tiles_n * be_tile;
  const int row_lane = t / tile_lanes;
  const int col_lane = t % tile_lanes;

  // A thread's four loads of a K-step lie a fixed stride apart: A rows a_r + 16 i at reduction
  // a_kk, B reductions b_kk + 4 i at column b_c.
  constexpr int a_rows_per_load = be_block_threads / be_k_step;  // 16
  constexpr int b_rows_per_load = be_block_threads / be_tile;    // 4
  const int a_r = t / be_k_step;
  const int a_kk = t % be_k_step;
  const int b_kk = t / be_tile;
  const int b_c = t % be_tile;
  // prefetched: the operands' bases, and what one load steps over (dead code under per_load).
  const float* a_at = args.a + std::int64_t{row0 + a_r} * args.k + a_kk;
  const float* b_at = args.b + std::int64_t{b_kk} * args.n + col0 + b_c;
  const std::int64_t a_step = std::int64_t{a_rows_per_load} * args.k;
  const std::int64_t b_step = std::int64_t{b_rows_per_load} * args.n;
  const bool b_col_ok = col0 + b_c < args.n;

  float acc[tile_per_lane][tile_per_lane] = {};
  const std::int32_t k_first = restore_tile(blk, acc);
  // prefetched: the next K-step's loads, in flight while this one multiplies.
  float a_next[4];
  float b_next[4];
  auto prefetch = [&](std::int32_t k0) {
    const bool a_k_ok = k0 + a_kk < args.k;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool ok = a_k_ok && row0 + a_r + a_rows_per_load * i < args.m;
      a_next[i] = ok ? a_at[a_step * i + k0] : 0.0F;
    }
    const float* b_k0 = b_at + std::int64_t{k0} * args.n;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool ok = b_col_ok && k0 + b_kk + b_rows_per_load * i < args.k;
      b_next[i] = ok ? b_k0[b_step * i] : 0.0F;
    }
  };
  if constexpr (Loads == gemm_loads::prefetched) {
    if (k_first < args.k) prefetch(k_first);
  }
  for (std::int32_t k0 = k_first; k0 < args.k; k0 += be_k_step) {
    if (blk.preempted()) {
      save_tile(blk, acc, k_first, k0);
      return;  // no output written yet
    }
    if constexpr (Loads == gemm_loads::prefetched) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a_tile[a_kk][a_r + a_rows_per_load * i] = a_next[i];
        b_tile[b_kk + b_rows_per_load * i][b_c] = b_next[i];
      }
    } else {
      // A: 64 rows x 16 k, consecutive threads read consecutive k of a row. B: 16 k x 64
      // columns, consecutive threads read consecutive columns.
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int32_t gr = row0 + a_r + a_rows_per_load * i;
        const std::int32_t gk = k0 + a_kk;
        a_tile[a_kk][a_r + a_rows_per_load * i] =
            gr < args.m && gk < args.k ? args.a[std::int64_t{gr} * args.k + gk] : 0.0F;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::int32_t gk = k0 + b_kk + b_rows_per_load * i;
        const std::int32_t gc = col0 + b_c;
        b_tile[b_kk + b_rows_per_load * i][b_c] =
            gk < args.k && gc < args.n ? args.b[std::int64_t{gk} * args.n + gc] : 0.0F;
      }
    }
    resident::device::sync_block();
    if constexpr (Loads == gemm_loads::prefetched) {
      if (k0 + be_k_step < args.k) prefetch(k0 + be_k_step);
    }
    multiply_tile(a_tile, b_tile, row_lane, col_lane, acc);
    resident::device::sync_block();  // the next step overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < tile_per_lane; ++i) {
    const std::int32_t gr = row0 + row_lane + tile_lanes * i;
    if (gr >= args.m) continue;
#pragma unroll
    for (int j = 0; j < tile_per_lane; ++j) {
      const std::int32_t gc = col0 + col_lane + tile_lanes * j;
      if (gc < args.n) args.c[std::int64_t{gr} * args.n + gc] = output(acc[i][j], gc);
    }
  }
  blk.commit();
}

}  // namespace detail

template <gemm_loads Loads = gemm_loads::per_load>
__device__ inline void gemm_block(const gemm_args& args, be_block& blk) {
  detail::gemm_tile<Loads>(args, blk, detail::plain_output{});
}

__device__ inline void gemm_bias_act_block(const gemm_bias_act_args& args, be_block& blk) {
  detail::gemm_tile<gemm_loads::per_load>(args.gemm, blk,
                                          detail::bias_act_output{args.bias, args.act});
}

namespace detail {

/// What a convolution block adds to the plain implicit GEMM (conv2d_layer_args): groups, a bias
/// and an activation, read from the kernel's parameters where they are used. The plain conv2d
/// has none, and its instantiation compiles to the plain code (one group, the accumulator
/// written as it is).
struct no_conv2d_extras {
  __device__ static constexpr std::int32_t groups() { return 1; }
};

/// `Extras` is no_conv2d_extras or a type with groups(), bias() and act() (conv2d_layer's).
template <class Extras>
__device__ inline void conv2d_tile(const conv2d_args& args, const Extras& extras, be_block& blk) {
  constexpr bool has_extras = !std::is_same_v<Extras, no_conv2d_extras>;
  __shared__ k_tile a_tile;  // [reduction][output pixel]
  __shared__ k_tile b_tile;  // [reduction][output channel]
  const conv2d_shape& sh = args.shape;
  const int t = static_cast<int>(threadIdx.x);
  const std::int32_t pq = sh.p() * sh.q();
  const std::int32_t rows = sh.n * pq;
  const std::int32_t rs = sh.r * sh.s;
  // Group g reads input channels g*cg.. and writes output channels g*kg..; one group: g = 0.
  const std::int32_t groups = extras.groups();
  const std::int32_t cg = sh.c / groups;
  const std::int32_t kg = sh.k / groups;
  const std::int32_t crs = cg * rs;
  const std::int32_t tiles_k = (kg + be_tile - 1) / be_tile;
  const std::int32_t group_blocks = (rows + be_tile - 1) / be_tile * tiles_k;
  const std::int32_t group = has_extras ? blk.index() / group_blocks : 0;
  const std::int32_t within_group = has_extras ? blk.index() % group_blocks : blk.index();
  const std::int32_t row0 = within_group / tiles_k * be_tile;
  const std::int32_t col0 = within_group % tiles_k * be_tile;
  const float* filter = args.filter + std::int64_t{group} * kg * crs;
  // Pixels run along the fast lane: neighbouring threads read neighbouring input columns and
  // write neighbouring output pixels (NKPQ keeps a channel's pixels contiguous).
  const int row_lane = t % tile_lanes;
  const int col_lane = t / tile_lanes;

  // The input pixel this thread gathers for the A tile is the same on every K-step (element
  // t + 256 i of the tile is row t % 64, reduction t / 64 + 4 i): decompose it once.
  const int a_row = t % be_tile;
  const int a_kk = t / be_tile;
  const std::int32_t pixel = row0 + a_row;
  const bool pixel_ok = pixel < rows;
  const std::int32_t image = pixel_ok ? pixel / pq : 0;
  const std::int32_t within = pixel_ok ? pixel % pq : 0;
  const std::int32_t ih0 = within / sh.q() * sh.stride - sh.pad;
  const std::int32_t iw0 = within % sh.q() * sh.stride - sh.pad;
  const float* in_image =
      args.input + (std::int64_t{image} * sh.c + std::int64_t{group} * cg) * sh.h * sh.w;

  float acc[tile_per_lane][tile_per_lane] = {};
  const std::int32_t k_first = restore_tile(blk, acc);
  for (std::int32_t k0 = k_first; k0 < crs; k0 += be_k_step) {
    if (blk.preempted()) {
      save_tile(blk, acc, k_first, k0);
      return;  // no output written yet
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int kk = a_kk + 4 * i;
      const std::int32_t red = k0 + kk;
      float v = 0.0F;
      if (pixel_ok && red < crs) {
        const std::int32_t ci = red / rs;
        const std::int32_t ih = ih0 + red % rs / sh.s;
        const std::int32_t iw = iw0 + red % sh.s;
        if (ih >= 0 && ih < sh.h && iw >= 0 && iw < sh.w) {
          v = in_image[(std::int64_t{ci} * sh.h + ih) * sh.w + iw];
        }
      }
      a_tile[kk][a_row] = v;
    }
    // The filter is [k][crs]: consecutive threads read consecutive reductions of a channel.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = t + be_block_threads * i;
      const int kk = e % be_k_step;
      const int c = e / be_k_step;
      const std::int32_t red = k0 + kk;
      const std::int32_t gc = col0 + c;
      b_tile[kk][c] = red < crs && gc < kg ? filter[std::int64_t{gc} * crs + red] : 0.0F;
    }
    resident::device::sync_block();
    multiply_tile(a_tile, b_tile, row_lane, col_lane, acc);
    resident::device::sync_block();  // the next step overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < tile_per_lane; ++i) {
    const std::int32_t gr = row0 + row_lane + tile_lanes * i;
    if (gr >= rows) continue;
    const std::int32_t img = gr / pq;
    const std::int32_t pix = gr % pq;
#pragma unroll
    for (int j = 0; j < tile_per_lane; ++j) {
      const std::int32_t gc = col0 + col_lane + tile_lanes * j;
      if (gc >= kg) continue;
      const std::int32_t channel = group * kg + gc;
      float v = acc[i][j];
      if constexpr (has_extras) {
        if (extras.bias() != nullptr) v += extras.bias()[channel];
        v = apply_activation(v, extras.act());
      }
      args.output[(std::int64_t{img} * sh.k + channel) * pq + pix] = v;
    }
  }
  blk.commit();
}

}  // namespace detail

__device__ inline void conv2d_block(const conv2d_args& args, be_block& blk) {
  detail::conv2d_tile(args, detail::no_conv2d_extras{}, blk);
}

namespace detail {

// Calls f(e) for each of this thread's elements of the block's chunk (four, strided by the
// block size) that lies below `count`.
template <class F>
__device__ inline void for_chunk_elements(const be_block& blk, std::int64_t count, F&& f) {
  const std::int64_t base = std::int64_t{blk.index()} * be_chunk + threadIdx.x;
#pragma unroll
  for (int i = 0; i < be_chunk / be_block_threads; ++i) {
    const std::int64_t e = base + be_block_threads * i;
    if (e >= count) break;
    f(e);
  }
}

}  // namespace detail

__device__ inline void bias_act_block(const bias_act_args& args, be_block& blk) {
  detail::for_chunk_elements(blk, args.elements, [&](std::int64_t e) {
    args.x[e] =
        detail::apply_activation(args.x[e] + args.bias[e / args.inner % args.channels], args.act);
  });
  blk.commit();
}

__device__ inline void maxpool2d_block(const maxpool2d_args& args, be_block& blk) {
  const std::int32_t oh = args.h / 2;
  const std::int32_t ow = args.w / 2;
  const std::int64_t plane = std::int64_t{oh} * ow;
  const std::int64_t outputs = std::int64_t{args.n} * args.c * plane;
  detail::for_chunk_elements(blk, outputs, [&](std::int64_t e) {
    const std::int64_t nc = e / plane;
    const std::int64_t within = e % plane;
    const float* src = args.input + (nc * args.h + within / ow * 2) * args.w + within % ow * 2;
    args.output[e] = fmaxf(fmaxf(src[0], src[1]), fmaxf(src[args.w], src[args.w + 1]));
  });
  blk.commit();
}

__device__ inline void row_sum_block(const row_sum_args& args, be_block& blk) {
  using block_reduce = cub::BlockReduce<float, be_block_threads>;
  __shared__ typename block_reduce::TempStorage temp;
  const std::int32_t chunks = (args.cols + be_chunk - 1) / be_chunk;
  const std::int32_t row = blk.index() / chunks;
  const std::int32_t col0 =
      blk.index() % chunks * be_chunk + static_cast<std::int32_t>(threadIdx.x);
  const float* x = args.x + std::int64_t{row} * args.cols;
  float partial = 0.0F;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::int32_t c = col0 + be_block_threads * i;
    if (c < args.cols) partial += x[c];
  }
  const float total = block_reduce(temp).Sum(partial);
  // One atomic per block: a block that ran twice would show up as a doubled chunk.
  if (threadIdx.x == 0) atomicAdd(args.out + row, total);
  blk.commit();
}

__device__ inline void fill_block(const fill_args& args, be_block& blk) {
  detail::for_chunk_elements(blk, args.elements, [&](std::int64_t e) { args.x[e] = args.value; });
  blk.commit();
}

}  // namespace resident::sched
