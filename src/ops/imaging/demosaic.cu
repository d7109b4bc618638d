#include "resident/ops/imaging/demosaic.hpp"

#include <string>

#include "launch.cuh"
#include "params.hpp"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/demosaic_math.hpp"

namespace resident::ops::imaging {

namespace {

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

struct demosaic_args {
  const std::uint16_t* in;
  std::size_t in_pitch;
  void* out;
  std::size_t out_pitch;
  int width;
  int height;
  int max_sum;  // 16 * max: results are sums in sixteenths of a sample
  float scale;  // output units per sixteenth
  bool vector_in;
  bool vector_out;
};

using demosaic_math::mirror;
using demosaic_math::neighbourhood;

__device__ void load_tile(const demosaic_args& a, int x0, int y0,
                          std::uint32_t (&tile)[shared_h][shared_words]) {
  const int tid = threadIdx.y * cells_x + threadIdx.x;
  constexpr int block = cells_x * cells_y;
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
__device__ void store_pair(const demosaic_args& a, int x, int y, const int (&left)[3],
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

template <int RX, int RY, bool Malvar, rgb_output Out>
__global__ void __launch_bounds__(cells_x* cells_y) demosaic_kernel(demosaic_args a) {
  kernels::begin_dependent_kernel();
  __shared__ std::uint32_t tile[shared_h][shared_words];
  const int x0 = static_cast<int>(blockIdx.x) * tile_w;
  const int y0 = static_cast<int>(blockIdx.y) * tile_h;
  load_tile(a, x0, y0, tile);
  __syncthreads();
  const int x = x0 + 2 * static_cast<int>(threadIdx.x);
  const int y = y0 + 2 * static_cast<int>(threadIdx.y);
  if (x >= a.width || y >= a.height) return;  // even sizes: a cell is wholly in or out
  neighbourhood h;
#pragma unroll
  for (int r = 0; r < 6; ++r) {
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t w = tile[2 * threadIdx.y + r][threadIdx.x + k];
      h.n[r][2 * k] = static_cast<int>(w & 0xFFFFU);
      h.n[r][2 * k + 1] = static_cast<int>(w >> 16);
    }
  }
#pragma unroll
  for (int py = 0; py < 2; ++py) {
    int left[3];
    int right[3];
    demosaic_math::pixel_rgb(h, 0, py, RX, RY, Malvar, left);
    demosaic_math::pixel_rgb(h, 1, py, RX, RY, Malvar, right);
    store_pair<Out>(a, x, y + py, left, right);
  }
}

template <int RX, int RY, bool Malvar>
void launch_for(const demosaic_args& a, rgb_output out, dim3 grid, cudaStream_t s,
                bool programmatic) {
  const dim3 block(cells_x, cells_y);
  switch (out) {
    case rgb_output::rgba16:
      kernels::launch("demosaic_kernel<rgba16>",
                      demosaic_kernel<RX, RY, Malvar, rgb_output::rgba16>, grid, block, 0, s,
                      programmatic, a);
      break;
    case rgb_output::rgba8:
      kernels::launch("demosaic_kernel<rgba8>", demosaic_kernel<RX, RY, Malvar, rgb_output::rgba8>,
                      grid, block, 0, s, programmatic, a);
      break;
    case rgb_output::planar_f32:
      kernels::launch("demosaic_kernel<planar_f32>",
                      demosaic_kernel<RX, RY, Malvar, rgb_output::planar_f32>, grid, block, 0, s,
                      programmatic, a);
      break;
  }
}

template <int RX, int RY>
void launch_for(const demosaic_args& a, const demosaic_config& c, dim3 grid, cudaStream_t s,
                bool programmatic) {
  if (c.algorithm == demosaic_algorithm::malvar) {
    launch_for<RX, RY, true>(a, c.output, grid, s, programmatic);
  } else {
    launch_for<RX, RY, false>(a, c.output, grid, s, programmatic);
  }
}

bool aligned(const void* p, std::size_t pitch, std::size_t to) {
  return (reinterpret_cast<std::uintptr_t>(p) | pitch) % to == 0;
}

}  // namespace

namespace detail {

void launch_demosaic(const std::uint16_t* bayer, std::size_t in_pitch, void* rgb,
                     std::size_t out_pitch, const demosaic_config& config, cudaStream_t s,
                     bool programmatic) {
  const unsigned max = (1U << config.bits) - 1U;
  const float units = config.output == rgb_output::rgba16  ? 65535.0F
                      : config.output == rgb_output::rgba8 ? 255.0F
                                                           : 1.0F;
  demosaic_args a{};
  a.in = bayer;
  a.in_pitch = in_pitch;
  a.out = rgb;
  a.out_pitch = out_pitch;
  a.width = static_cast<int>(config.width);
  a.height = static_cast<int>(config.height);
  a.max_sum = static_cast<int>(16 * max);
  a.scale = units / static_cast<float>(16 * max);
  a.vector_in = aligned(bayer, in_pitch, 4);
  a.vector_out = aligned(rgb, out_pitch, config.output == rgb_output::rgba16 ? 16 : 8);
  const dim3 grid((config.width + tile_w - 1) / tile_w, (config.height + tile_h - 1) / tile_h);
  switch (config.order) {
    case io::bayer_order::rggb:
      launch_for<0, 0>(a, config, grid, s, programmatic);
      break;
    case io::bayer_order::grbg:
      launch_for<1, 0>(a, config, grid, s, programmatic);
      break;
    case io::bayer_order::gbrg:
      launch_for<0, 1>(a, config, grid, s, programmatic);
      break;
    case io::bayer_order::bggr:
      launch_for<1, 1>(a, config, grid, s, programmatic);
      break;
  }
}

}  // namespace detail

void demosaic::setup(OperatorSpec& spec) {
  _config.width = params::side(spec, "width", 1920, true, "image width in pixels");
  _config.height = params::side(spec, "height", 1080, true, "image height in pixels");
  _config.order = params::order(spec);
  _config.bits = params::bits(spec);
  _config.algorithm = params::choice(spec, "algorithm", "malvar", {"malvar", "bilinear"},
                                     "Malvar-He-Cutler or bilinear interpolation") == 0
                          ? demosaic_algorithm::malvar
                          : demosaic_algorithm::bilinear;
  constexpr rgb_output outputs[] = {rgb_output::rgba16, rgb_output::rgba8, rgb_output::planar_f32};
  _config.output = outputs[params::choice(
      spec, "output", "rgba16", {"rgba16", "rgba8", "planar_f32"}, "output pixel format")];
  spec.image_input("bayer", bayer_image(_config.width, _config.height, _config.order));
  spec.image_output("rgb",
                    image_desc{_config.width, _config.height, pixel_format_of(_config.output), 0});
}

void demosaic::compute(CaptureContext& ctx) {
  const image_desc in = bayer_image(_config.width, _config.height, _config.order);
  const image_desc out{_config.width, _config.height, pixel_format_of(_config.output), 0};
  detail::launch_demosaic(ctx.device_memory<const std::uint16_t>("bayer"), in.pitch(),
                          ctx.device_memory<void>("rgb"), out.pitch(), _config, ctx.stream(),
                          ctx.programmatic_launch());
}

}  // namespace resident::ops::imaging
