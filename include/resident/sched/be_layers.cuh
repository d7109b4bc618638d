#pragma once
// Device half of be_layers.hpp: the body of one logical block of each layer kernel, under the
// rules of be_kernels.cuh (be_block_threads threads, work from blk.index() alone, outputs
// written after the last check, blk.commit() at the end). Include only from .cu files.

#include <cstdint>

#include "resident/sched/be_kernels.cuh"
#include "resident/sched/be_layers.hpp"

namespace resident::sched {

namespace detail {

/// conv2d_layer's extras, read from its arguments where conv2d_tile uses them.
struct conv2d_layer_extras {
  const conv2d_layer_args& a;
  __device__ std::int32_t groups() const { return a.groups; }
  __device__ const float* bias() const { return a.bias; }
  __device__ activation act() const { return a.act; }
};

}  // namespace detail

__device__ inline void conv2d_layer_block(const conv2d_layer_args& args, be_block& blk) {
  detail::conv2d_tile(args.conv, detail::conv2d_layer_extras{args}, blk);
}

__device__ inline void depthwise_conv2d_block(const depthwise_conv2d_args& args, be_block& blk) {
  const conv2d_shape& sh = args.shape;
  const std::int32_t p = sh.p();
  const std::int32_t q = sh.q();
  const std::int64_t plane = std::int64_t{p} * q;
  const std::int32_t multiplier = sh.k / sh.c;
  detail::for_chunk_elements(blk, std::int64_t{sh.n} * sh.k * plane, [&](std::int64_t e) {
    const std::int64_t nk = e / plane;  // image * k + output channel
    const auto out_channel = static_cast<std::int32_t>(nk % sh.k);
    const auto image = static_cast<std::int32_t>(nk / sh.k);
    const auto within = static_cast<std::int32_t>(e % plane);
    const std::int32_t ih0 = within / q * sh.stride - sh.pad;
    const std::int32_t iw0 = within % q * sh.stride - sh.pad;
    const float* in =
        args.input + (std::int64_t{image} * sh.c + out_channel / multiplier) * sh.h * sh.w;
    const float* f = args.filter + std::int64_t{out_channel} * sh.r * sh.s;
    float acc = 0.0F;
    for (std::int32_t i = 0; i < sh.r; ++i) {
      const std::int32_t ih = ih0 + i;
      if (ih < 0 || ih >= sh.h) continue;
      for (std::int32_t j = 0; j < sh.s; ++j) {
        const std::int32_t iw = iw0 + j;
        if (iw >= 0 && iw < sh.w) acc = fmaf(in[ih * sh.w + iw], f[i * sh.s + j], acc);
      }
    }
    if (args.bias != nullptr) acc += args.bias[out_channel];
    args.output[e] = detail::apply_activation(acc, args.act);
  });
  blk.commit();
}

__device__ inline void pointwise_block(const pointwise_args& args, be_block& blk) {
  const std::int64_t per_image = std::int64_t{args.inner} * args.channels;
  detail::for_chunk_elements(blk, args.elements, [&](std::int64_t e) {
    const auto c = static_cast<std::int32_t>(e / args.inner % args.channels);
    float v = args.x[e];
    if (args.scale != nullptr) v *= args.scale[c];
    if (args.shift != nullptr) v += args.shift[c];
    if (args.gate != nullptr) v *= args.gate[e / per_image * args.channels + c];
    if (args.y != nullptr) v += args.y[e];
    args.out[e] = detail::apply_activation(v, args.act);
  });
  blk.commit();
}

__device__ inline void pool2d_block(const pool2d_args& args, be_block& blk) {
  const std::int32_t p = args.p();
  const std::int32_t q = args.q();
  const std::int64_t plane = std::int64_t{p} * q;
  detail::for_chunk_elements(blk, std::int64_t{args.n} * args.c * plane, [&](std::int64_t e) {
    const std::int64_t nc = e / plane;
    const auto within = static_cast<std::int32_t>(e % plane);
    const std::int32_t ih0 = within / q * args.stride - args.pad;
    const std::int32_t iw0 = within % q * args.stride - args.pad;
    const float* in = args.input + nc * args.h * args.w;
    const bool max = args.kind == pooling::max;
    float acc = max ? -INFINITY : 0.0F;
    std::int32_t inside = 0;
    for (std::int32_t i = 0; i < args.kernel_h; ++i) {
      const std::int32_t ih = ih0 + i;
      if (ih < 0 || ih >= args.h) continue;
      for (std::int32_t j = 0; j < args.kernel_w; ++j) {
        const std::int32_t iw = iw0 + j;
        if (iw < 0 || iw >= args.w) continue;
        const float v = in[ih * args.w + iw];
        acc = max ? fmaxf(acc, v) : acc + v;
        ++inside;
      }
    }
    if (!max) {
      const std::int32_t divisor = args.count_include_pad ? args.kernel_h * args.kernel_w : inside;
      acc /= static_cast<float>(divisor);
    }
    args.output[e] = acc;
  });
  blk.commit();
}

__device__ inline void global_avg_pool_block(const global_avg_pool_args& args, be_block& blk) {
  constexpr int warps = be_block_threads / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int32_t plane_index =
      blk.index() * warps + static_cast<std::int32_t>(threadIdx.x / 32);
  if (plane_index < args.planes) {  // whole warps: the shuffles below see every lane
    const float* in = args.input + std::int64_t{plane_index} * args.plane;
    float sum = 0.0F;
    for (std::int32_t i = lane; i < args.plane; i += 32) sum += in[i];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      sum += __shfl_xor_sync(0xFFFFFFFFU, sum, offset);
    }
    if (lane == 0) args.output[plane_index] = sum / static_cast<float>(args.plane);
  }
  blk.commit();
}

__device__ inline void channel_copy_block(const channel_copy_args& args, be_block& blk) {
  const std::int64_t per_image = std::int64_t{args.c} * args.inner;
  detail::for_chunk_elements(blk, std::int64_t{args.n} * per_image, [&](std::int64_t e) {
    const std::int64_t image = e / per_image;
    const std::int64_t rest = e % per_image;  // channel * inner + position
    args.output[(image * args.out_channels + args.offset) * args.inner + rest] = args.input[e];
  });
  blk.commit();
}

}  // namespace resident::sched
