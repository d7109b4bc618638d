#pragma once
// demosaic's device code: the tile load and the per-cell interpolation the kernel runs (one
// 256-thread block per tile), and the device form the persistent mode runs (a 512-thread block
// makes two tiles at a time). Include only from .cu files.

#include "ops/imaging/forms.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/ops/imaging/demosaic_math.hpp"

namespace resident::ops::imaging::detail::demosaic_form {

// A block makes a 64 x 16 pixel tile: 32 x 8 threads, one 2x2 Bayer cell each. Shared memory
// holds the tile and a two-pixel apron (68 x 20 samples) as 32-bit words of two samples; the
// tile's left edge is even, so every word is an aligned pair and each thread reads its 6 x 6
// neighbourhood as three words a row (consecutive words across a warp: no bank conflicts).
constexpr int cells_x = 32;
constexpr int cells_y = 8;
constexpr int tile_w = 2 * cells_x;
constexpr int tile_h = 2 * cells_y;
constexpr int apron = 2;
constexpr int shared_w = tile_w + 2 * apron;  // samples
constexpr int shared_h = tile_h + 2 * apron;
constexpr int shared_words = shared_w / 2;

using demosaic_math::mirror;
using demosaic_math::neighbourhood;

/// The tile at (x0, y0) and its apron into `tile`, by threads `tid` of `block` (every one of
/// them calls it).
__device__ inline void load_tile(const demosaic_args& a, int x0, int y0,
                                 std::uint32_t (&tile)[shared_h][shared_words], int tid,
                                 int block) {
  const bool interior = a.vector_in && x0 >= apron && y0 >= apron &&
                        x0 + tile_w + apron <= a.width && y0 + tile_h + apron <= a.height;
  if (interior) {
    for (int i = tid; i < shared_h * shared_words; i += block) {
      const int r = i / shared_words;
      const int w = i % shared_words;
      const auto* row = reinterpret_cast<const std::uint8_t*>(a.in) +
                        static_cast<std::size_t>(y0 - apron + r) * a.in_pitch;
      tile[r][w] = *reinterpret_cast<const std::uint32_t*>(row + (x0 - apron + 2 * w) * 2);
    }
    return;
  }
  auto* samples = reinterpret_cast<std::uint16_t*>(tile);
  for (int i = tid; i < shared_h * shared_w; i += block) {
    const int r = i / shared_w;
    const int c = i % shared_w;
    const auto* row = reinterpret_cast<const std::uint8_t*>(a.in) +
                      static_cast<std::size_t>(mirror(y0 - apron + r, a.height)) * a.in_pitch;
    samples[r * shared_w + c] =
        reinterpret_cast<const std::uint16_t*>(row)[mirror(x0 - apron + c, a.width)];
  }
}

template <rgb_output Out>
__device__ inline void store_pair(const demosaic_args& a, int x, int y, const int (&left)[3],
                                  const int (&right)[3]) {
  auto* base = static_cast<std::uint8_t*>(a.out);
  const std::size_t row = static_cast<std::size_t>(y) * a.out_pitch;
  const auto level = [&](int s) {  // clamp to [0, max], then to output units
    return static_cast<float>(s < 0 ? 0 : s > a.max_sum ? a.max_sum : s) * a.scale;
  };
  if constexpr (Out == rgb_output::rgba16) {
    std::uint32_t p[4];
    for (int side = 0; side < 2; ++side) {
      const int(&c)[3] = side == 0 ? left : right;
      p[2 * side] = __float2uint_rn(level(c[0])) | __float2uint_rn(level(c[1])) << 16;
      p[2 * side + 1] = __float2uint_rn(level(c[2])) | 0xFFFF0000U;
    }
    auto* dst = base + row + static_cast<std::size_t>(x) * 8;
    if (a.vector_out) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(p[0], p[1], p[2], p[3]);
    } else {
      auto* d = reinterpret_cast<std::uint16_t*>(dst);
      for (int i = 0; i < 4; ++i) {
        d[2 * i] = static_cast<std::uint16_t>(p[i]);
        d[2 * i + 1] = static_cast<std::uint16_t>(p[i] >> 16);
      }
    }
  } else if constexpr (Out == rgb_output::rgba8) {
    std::uint32_t p[2];
    for (int side = 0; side < 2; ++side) {
      const int(&c)[3] = side == 0 ? left : right;
      p[side] = __float2uint_rn(level(c[0])) | __float2uint_rn(level(c[1])) << 8 |
                __float2uint_rn(level(c[2])) << 16 | 0xFF000000U;
    }
    auto* dst = base + row + static_cast<std::size_t>(x) * 4;
    if (a.vector_out) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(p[0], p[1]);
    } else {
      reinterpret_cast<std::uint32_t*>(dst)[0] = p[0];  // rgba8 pixels are 4-byte aligned
      reinterpret_cast<std::uint32_t*>(dst)[1] = p[1];
    }
  } else {
    const std::size_t plane = a.out_pitch * static_cast<std::size_t>(a.height);
    for (int c = 0; c < 3; ++c) {
      auto* dst =
          reinterpret_cast<float*>(base + c * plane + row + static_cast<std::size_t>(x) * 4);
      if (a.vector_out) {
        *reinterpret_cast<float2*>(dst) = make_float2(level(left[c]), level(right[c]));
      } else {
        dst[0] = level(left[c]);
        dst[1] = level(right[c]);
      }
    }
  }
}

/// The cell (cx, cy) of the tile at (x0, y0): its 6 x 6 neighbourhood from the shared tile,
/// its four pixels interpolated and stored. RX, RY and Malvar are constants in the kernels.
template <rgb_output Out>
__device__ __forceinline__ void demosaic_cell(const demosaic_args& a,
                                              const std::uint32_t (&tile)[shared_h][shared_words],
                                              int cx, int cy, int x0, int y0, int rx, int ry,
                                              bool malvar) {
  const int x = x0 + 2 * cx;
  const int y = y0 + 2 * cy;
  if (x >= a.width || y >= a.height) return;  // even sizes: a cell is wholly in or out
  neighbourhood h;
#pragma unroll
  for (int r = 0; r < 6; ++r) {
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t w = tile[2 * cy + r][cx + k];
      h.n[r][2 * k] = static_cast<int>(w & 0xFFFFU);
      h.n[r][2 * k + 1] = static_cast<int>(w >> 16);
    }
  }
#pragma unroll
  for (int py = 0; py < 2; ++py) {
    int left[3];
    int right[3];
    demosaic_math::pixel_rgb(h, 0, py, rx, ry, malvar, left);
    demosaic_math::pixel_rgb(h, 1, py, rx, ry, malvar, right);
    store_pair<Out>(a, x, y + py, left, right);
  }
}

constexpr int tile_threads = cells_x * cells_y;
constexpr int max_threads = 512;
constexpr int tiles_at_once = max_threads / tile_threads;

static_assert(demosaic_form_shared_bytes() ==
                  tiles_at_once * shared_h * shared_words * sizeof(std::uint32_t),
              "forms.hpp's size of the form's shared memory is a tile per half block");

template <rgb_output Out>
__device__ void run_tiles(const demosaic_args& a, std::byte* scratch) {
  using tile_t = std::uint32_t[shared_h][shared_words];
  const int tiles_x = (a.width + tile_w - 1) / tile_w;
  const int tiles = tiles_x * ((a.height + tile_h - 1) / tile_h);
  const int half = static_cast<int>(threadIdx.x) / tile_threads;
  const int tid = static_cast<int>(threadIdx.x) % tile_threads;
  auto& tile = reinterpret_cast<tile_t*>(scratch)[half];
  // Every block takes the same turns' barriers; a half past the last tile only waits.
  const int step = static_cast<int>(gridDim.x) * tiles_at_once;
  for (int base = static_cast<int>(blockIdx.x) * tiles_at_once; base < tiles; base += step) {
    const int t = base + half;
    const int x0 = t % tiles_x * tile_w;
    const int y0 = t / tiles_x * tile_h;
    if (t < tiles) load_tile(a, x0, y0, tile, tid, tile_threads);
    resident::device::sync_block();
    if (t < tiles) {
      demosaic_cell<Out>(a, tile, tid % cells_x, tid / cells_x, x0, y0, a.rx, a.ry, a.malvar);
    }
    resident::device::sync_block();  // the tile is read before the next turn loads over it
  }
}

/// The persistent mode's form (blocks of max_threads threads): the grid's blocks take tiles in
/// turn, two at a time.
__device__ inline void run(const demosaic_args& a, std::byte* scratch) {
  switch (a.output) {
    case rgb_output::rgba16:
      run_tiles<rgb_output::rgba16>(a, scratch);
      break;
    case rgb_output::rgba8:
      run_tiles<rgb_output::rgba8>(a, scratch);
      break;
    case rgb_output::planar_f32:
      run_tiles<rgb_output::planar_f32>(a, scratch);
      break;
  }
}

}  // namespace resident::ops::imaging::detail::demosaic_form
