#pragma once
// convert_resize's device code: one output pixel (bilinear taps, normalization), run by the
// kernels (a thread per pixel) and by the persistent mode's device form (the grid's threads
// take pixels in turn). Include only from .cu files.

#include "ops/imaging/forms.hpp"

namespace resident::ops::imaging::detail::resize_form {

template <bool In16>
__device__ inline float4 texel(const resize_args& a, std::uint32_t x, std::uint32_t y) {
  const std::uint8_t* row = a.in + std::size_t{y} * a.in_pitch;
  if constexpr (In16) {
    const ushort4 p = reinterpret_cast<const ushort4*>(row)[x];
    return make_float4(p.x, p.y, p.z, p.w);
  } else {
    const uchar4 p = reinterpret_cast<const uchar4*>(row)[x];
    return make_float4(p.x, p.y, p.z, p.w);
  }
}

/// Output pixel (x, y), inside the output.
template <bool In16, resize_output Out>
__device__ inline void resize_pixel(const resize_args& a, std::uint32_t x, std::uint32_t y) {
  // Source positions in double: a float coordinate of a 4K row carries ~2e-4 of a pixel error.
  const resize_tap tx = resize_source(x, a.in_width, a.out_width);
  const resize_tap ty = resize_source(y, a.in_height, a.out_height);
  const auto fx = static_cast<float>(tx.weight);
  const auto fy = static_cast<float>(ty.weight);
  const float4 p00 = texel<In16>(a, tx.i0, ty.i0);
  const float4 p10 = texel<In16>(a, tx.i1, ty.i0);
  const float4 p01 = texel<In16>(a, tx.i0, ty.i1);
  const float4 p11 = texel<In16>(a, tx.i1, ty.i1);
  const auto lerp2 = [&](float v00, float v10, float v01, float v11) {
    return (1.0F - fy) * ((1.0F - fx) * v00 + fx * v10) + fy * ((1.0F - fx) * v01 + fx * v11);
  };
  const float rgb[3] = {lerp2(p00.x, p10.x, p01.x, p11.x), lerp2(p00.y, p10.y, p01.y, p11.y),
                        lerp2(p00.z, p10.z, p01.z, p11.z)};
  if constexpr (Out == resize_output::planar_f32) {
    const std::size_t plane = a.out_pitch * a.out_height;
    for (int c = 0; c < 3; ++c) {
      reinterpret_cast<float*>(a.out + c * plane + std::size_t{y} * a.out_pitch)[x] =
          rgb[c] * a.scale[c] + a.offset[c];
    }
  } else {
    unsigned packed = 0xFF000000U;
    for (int c = 0; c < 3; ++c) {
      const unsigned v = __float2uint_rn(rgb[c] * a.scale[c]);
      packed |= (v > 255U ? 255U : v) << (8 * c);
    }
    reinterpret_cast<unsigned*>(a.out + std::size_t{y} * a.out_pitch)[x] = packed;
  }
}

template <bool In16, resize_output Out>
__device__ void run_pixels(const resize_args& a) {
  const std::uint64_t total = std::uint64_t{a.out_width} * a.out_height;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    resize_pixel<In16, Out>(a, static_cast<std::uint32_t>(i % a.out_width),
                            static_cast<std::uint32_t>(i / a.out_width));
  }
}

/// The persistent mode's form: the grid's threads take output pixels in turn.
__device__ inline void run(const resize_args& a) {
  const bool planar = a.output == resize_output::planar_f32;
  if (a.in_rgba16) {
    if (planar) {
      run_pixels<true, resize_output::planar_f32>(a);
    } else {
      run_pixels<true, resize_output::rgba8>(a);
    }
  } else if (planar) {
    run_pixels<false, resize_output::planar_f32>(a);
  } else {
    run_pixels<false, resize_output::rgba8>(a);
  }
}

}  // namespace resident::ops::imaging::detail::resize_form
