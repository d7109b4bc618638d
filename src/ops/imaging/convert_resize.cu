#include "resident/ops/imaging/convert_resize.hpp"

#include <string>

#include "launch.cuh"
#include "params.hpp"
#include "resize_forms.cuh"

namespace resident::ops::imaging {

namespace {

using namespace detail::resize_form;  // NOLINT: the device code (resize_forms.cuh)
using detail::resize_args;

constexpr int block_x = 32;
constexpr int block_y = 8;

template <bool In16, resize_output Out>
__global__ void __launch_bounds__(block_x* block_y) resize_kernel(resize_args a) {
  kernels::begin_dependent_kernel();
  const std::uint32_t x = blockIdx.x * block_x + threadIdx.x;
  const std::uint32_t y = blockIdx.y * block_y + threadIdx.y;
  if (x >= a.out_width || y >= a.out_height) return;
  resize_pixel<In16, Out>(a, x, y);
}

}  // namespace

namespace detail {

resize_args make_resize_args(const void* in, std::size_t in_pitch, void* out, std::size_t out_pitch,
                             const convert_resize_config& config) {
  resize_args a{};
  a.in = static_cast<const std::uint8_t*>(in);
  a.in_pitch = in_pitch;
  a.out = static_cast<std::uint8_t*>(out);
  a.out_pitch = out_pitch;
  a.in_width = config.in_width;
  a.in_height = config.in_height;
  a.out_width = config.out_width;
  a.out_height = config.out_height;
  const float full = config.in_rgba16 ? 65535.0F : 255.0F;
  for (int c = 0; c < 3; ++c) {
    if (config.output == resize_output::planar_f32) {
      a.scale[c] = 1.0F / (full * config.stddev[c]);
      a.offset[c] = -config.mean[c] / config.stddev[c];
    } else {
      a.scale[c] = 255.0F / full;
      a.offset[c] = 0.0F;
    }
  }
  a.in_rgba16 = config.in_rgba16;
  a.output = config.output;
  return a;
}

void launch_convert_resize(const void* in, std::size_t in_pitch, void* out, std::size_t out_pitch,
                           const convert_resize_config& config, cudaStream_t s, bool programmatic) {
  const resize_args a = make_resize_args(in, in_pitch, out, out_pitch, config);
  const dim3 grid((config.out_width + block_x - 1) / block_x,
                  (config.out_height + block_y - 1) / block_y);
  const dim3 block(block_x, block_y);
  const bool planar = config.output == resize_output::planar_f32;
  if (config.in_rgba16) {
    if (planar) {
      kernels::launch("resize_kernel<rgba16, planar_f32>",
                      resize_kernel<true, resize_output::planar_f32>, grid, block, 0, s,
                      programmatic, a);
    } else {
      kernels::launch("resize_kernel<rgba16, rgba8>", resize_kernel<true, resize_output::rgba8>,
                      grid, block, 0, s, programmatic, a);
    }
  } else if (planar) {
    kernels::launch("resize_kernel<rgba8, planar_f32>",
                    resize_kernel<false, resize_output::planar_f32>, grid, block, 0, s,
                    programmatic, a);
  } else {
    kernels::launch("resize_kernel<rgba8, rgba8>", resize_kernel<false, resize_output::rgba8>, grid,
                    block, 0, s, programmatic, a);
  }
}

}  // namespace detail

void convert_resize::setup(OperatorSpec& spec) {
  convert_resize_config& c = _config;
  c.in_width = params::side(spec, "in_width", 1920, false, "input width in pixels");
  c.in_height = params::side(spec, "in_height", 1080, false, "input height in pixels");
  c.in_rgba16 =
      params::choice(spec, "in_format", "rgba16", {"rgba16", "rgba8"}, "input pixel format") == 0;
  c.out_width = params::side(spec, "out_width", 224, false, "output width in pixels");
  c.out_height = params::side(spec, "out_height", 224, false, "output height in pixels");
  c.output = params::choice(spec, "out_format", "planar_f32", {"planar_f32", "rgba8"},
                            "normalized planar float (a classifier's input) or rgba8") == 0
                 ? resize_output::planar_f32
                 : resize_output::rgba8;
  const char* names[3] = {"r", "g", "b"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    c.mean[i] = spec.param<float>("mean_" + n, c.mean[i], "planar_f32: mean subtracted (0..1)");
    c.stddev[i] = spec.param<float>("std_" + n, c.stddev[i], "planar_f32: divisor after the mean");
    if (!(c.stddev[i] > 0.0F)) params::fail(spec, "std_" + n, "must be positive");
  }
  spec.image_input("in", image_desc{c.in_width, c.in_height,
                                    c.in_rgba16 ? pixel_format::rgba16 : pixel_format::rgba8, 0});
  spec.image_output("out",
                    image_desc{c.out_width, c.out_height,
                               c.output == resize_output::planar_f32 ? pixel_format::rgb_planar_f32
                                                                     : pixel_format::rgba8,
                               0});
}

void convert_resize::compute(CaptureContext& ctx) {
  const convert_resize_config& c = _config;
  const image_desc in{c.in_width, c.in_height,
                      c.in_rgba16 ? pixel_format::rgba16 : pixel_format::rgba8, 0};
  const image_desc out{
      c.out_width, c.out_height,
      c.output == resize_output::planar_f32 ? pixel_format::rgb_planar_f32 : pixel_format::rgba8,
      0};
  detail::launch_convert_resize(ctx.device_memory<const void>("in"), in.pitch(),
                                ctx.device_memory<void>("out"), out.pitch(), c, ctx.stream(),
                                ctx.programmatic_launch());
}

}  // namespace resident::ops::imaging
