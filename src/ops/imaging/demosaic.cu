#include "resident/ops/imaging/demosaic.hpp"

#include <string>

#include "demosaic_forms.cuh"
#include "launch.cuh"
#include "params.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/demosaic_math.hpp"

namespace resident::ops::imaging {

namespace {

using namespace detail::demosaic_form;  // NOLINT: the device code (demosaic_forms.cuh)
using detail::demosaic_args;

template <int RX, int RY, bool Malvar, rgb_output Out>
__global__ void __launch_bounds__(cells_x* cells_y) demosaic_kernel(demosaic_args a) {
  kernels::begin_dependent_kernel();
  __shared__ std::uint32_t tile[shared_h][shared_words];
  const int x0 = static_cast<int>(blockIdx.x) * tile_w;
  const int y0 = static_cast<int>(blockIdx.y) * tile_h;
  load_tile(a, x0, y0, tile, static_cast<int>(threadIdx.y * cells_x + threadIdx.x),
            cells_x * cells_y);
  resident::device::sync_block();
  demosaic_cell<Out>(a, tile, static_cast<int>(threadIdx.x), static_cast<int>(threadIdx.y), x0, y0,
                     RX, RY, Malvar);
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

demosaic_args make_demosaic_args(const std::uint16_t* bayer, std::size_t in_pitch, void* rgb,
                                 std::size_t out_pitch, const demosaic_config& config) {
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
  // Where red sits in the 2x2 cell: rggb (0, 0), grbg (1, 0), gbrg (0, 1), bggr (1, 1).
  a.rx = config.order == io::bayer_order::grbg || config.order == io::bayer_order::bggr ? 1 : 0;
  a.ry = config.order == io::bayer_order::gbrg || config.order == io::bayer_order::bggr ? 1 : 0;
  a.malvar = config.algorithm == demosaic_algorithm::malvar;
  a.output = config.output;
  return a;
}

void launch_demosaic(const std::uint16_t* bayer, std::size_t in_pitch, void* rgb,
                     std::size_t out_pitch, const demosaic_config& config, cudaStream_t s,
                     bool programmatic) {
  const demosaic_args a = make_demosaic_args(bayer, in_pitch, rgb, out_pitch, config);
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
