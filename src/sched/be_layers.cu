#include "resident/sched/be_layers.hpp"

#include <string>
#include <utility>

#include "resident/sched/be_layers.cuh"
#include "sched/be_launch.cuh"

namespace resident::sched {

// Dispatch from an argument type to its block body, for the kernel templates of be_launch.cuh.
__device__ inline void run_block(const conv2d_layer_args& a, be_block& blk) {
  conv2d_layer_block(a, blk);
}
__device__ inline void run_block(const depthwise_conv2d_args& a, be_block& blk) {
  depthwise_conv2d_block(a, blk);
}
__device__ inline void run_block(const pointwise_args& a, be_block& blk) {
  pointwise_block(a, blk);
}
__device__ inline void run_block(const pool2d_args& a, be_block& blk) { pool2d_block(a, blk); }
__device__ inline void run_block(const global_avg_pool_args& a, be_block& blk) {
  global_avg_pool_block(a, blk);
}
__device__ inline void run_block(const channel_copy_args& a, be_block& blk) {
  channel_copy_block(a, blk);
}

namespace be_detail {
template <>
inline constexpr bool cut_part_way<conv2d_layer_args> = true;
}  // namespace be_detail

using namespace be_detail;

namespace {

// The window of a convolution or a pooling fits the padded input.
void check_window(const char* kernel, std::int32_t h, std::int32_t w, std::int32_t r,
                  std::int32_t s, std::int32_t stride, std::int32_t pad) {
  require_positive(kernel, "stride", stride);
  if (pad < 0) reject(kernel, "pad", "must be >= 0, got " + std::to_string(pad));
  if (std::int64_t{h} + 2 * std::int64_t{pad} < r) {
    reject(kernel, "window height",
           std::to_string(r) + " exceeds the padded height " +
               std::to_string(std::int64_t{h} + 2 * pad));
  }
  if (std::int64_t{w} + 2 * std::int64_t{pad} < s) {
    reject(kernel, "window width",
           std::to_string(s) + " exceeds the padded width " +
               std::to_string(std::int64_t{w} + 2 * pad));
  }
}

}  // namespace

std::int32_t conv2d_layer_blocks(const conv2d_layer_args& a) {
  constexpr const char* kernel = "conv2d_layer";
  const conv2d_shape& sh = a.conv.shape;
  require_pointer(kernel, "conv.input", a.conv.input);
  require_pointer(kernel, "conv.filter", a.conv.filter);
  require_pointer(kernel, "conv.output", a.conv.output);
  check_conv2d_shape(kernel, sh);
  require_positive(kernel, "groups", a.groups);
  if (sh.c % a.groups != 0 || sh.k % a.groups != 0) {
    reject(kernel, "groups",
           std::to_string(a.groups) + " must divide c (" + std::to_string(sh.c) + ") and k (" +
               std::to_string(sh.k) + ")");
  }
  check_activation(kernel, a.act);
  const std::int64_t rows = std::int64_t{sh.n} * sh.p() * sh.q();
  require_extent(kernel, "n*p*q (output pixels)", rows);
  require_extent(kernel, "c/groups*r*s (reduction)", std::int64_t{sh.c / a.groups} * sh.r * sh.s);
  return checked_blocks(kernel, std::int64_t{a.groups} * ceil_div(rows, be_tile) *
                                    ceil_div(sh.k / a.groups, be_tile));
}

std::int32_t depthwise_conv2d_blocks(const depthwise_conv2d_args& a) {
  constexpr const char* kernel = "depthwise_conv2d";
  const conv2d_shape& sh = a.shape;
  require_pointer(kernel, "input", a.input);
  require_pointer(kernel, "filter", a.filter);
  require_pointer(kernel, "output", a.output);
  check_conv2d_shape(kernel, sh);
  if (sh.k % sh.c != 0) {
    reject(kernel, "k",
           std::to_string(sh.k) + " must be a multiple of c (" + std::to_string(sh.c) + ")");
  }
  check_activation(kernel, a.act);
  require_extent(kernel, "h*w", std::int64_t{sh.h} * sh.w);
  const std::int64_t outputs = std::int64_t{sh.n} * sh.k * sh.p() * sh.q();
  require_extent(kernel, "n*k*p*q (outputs)", outputs);
  return checked_blocks(kernel, ceil_div(outputs, be_chunk));
}

std::int32_t pointwise_blocks(const pointwise_args& a) {
  constexpr const char* kernel = "pointwise";
  require_pointer(kernel, "x", a.x);
  require_pointer(kernel, "out", a.out);
  if (a.out == a.x || a.out == a.y) {
    reject(kernel, "out", "must not be x or y (a block run again would read its own output)");
  }
  require_positive(kernel, "elements", a.elements);
  require_positive(kernel, "inner", a.inner);
  require_positive(kernel, "channels", a.channels);
  if (a.elements % (std::int64_t{a.inner} * a.channels) != 0) {
    reject(kernel, "elements",
           std::to_string(a.elements) + " is not a whole number of images of channels * inner = " +
               std::to_string(std::int64_t{a.inner} * a.channels));
  }
  check_activation(kernel, a.act);
  return checked_blocks(kernel, ceil_div(a.elements, be_chunk));
}

std::int32_t pool2d_blocks(const pool2d_args& a) {
  constexpr const char* kernel = "pool2d";
  require_pointer(kernel, "input", a.input);
  require_pointer(kernel, "output", a.output);
  require_extent(kernel, "n", a.n);
  require_extent(kernel, "c", a.c);
  require_extent(kernel, "h", a.h);
  require_extent(kernel, "w", a.w);
  require_extent(kernel, "kernel_h", a.kernel_h);
  require_extent(kernel, "kernel_w", a.kernel_w);
  check_window(kernel, a.h, a.w, a.kernel_h, a.kernel_w, a.stride, a.pad);
  if (a.kind != pooling::max && a.kind != pooling::average) {
    reject(kernel, "kind",
           "is not a pooling (" + std::to_string(static_cast<std::int32_t>(a.kind)) + ")");
  }
  if (2 * a.pad > a.kernel_h || 2 * a.pad > a.kernel_w) {
    // PyTorch's rule too: a window of padding alone would have nothing to take.
    reject(kernel, "pad", std::to_string(a.pad) + " exceeds half the window");
  }
  require_extent(kernel, "h*w", std::int64_t{a.h} * a.w);
  const std::int64_t outputs = std::int64_t{a.n} * a.c * a.p() * a.q();
  require_extent(kernel, "n*c*p*q (outputs)", outputs);
  return checked_blocks(kernel, ceil_div(outputs, be_chunk));
}

std::int32_t global_avg_pool_blocks(const global_avg_pool_args& a) {
  constexpr const char* kernel = "global_avg_pool";
  require_pointer(kernel, "input", a.input);
  require_pointer(kernel, "output", a.output);
  require_extent(kernel, "planes", a.planes);
  require_extent(kernel, "plane", a.plane);
  return checked_blocks(kernel, ceil_div(a.planes, be_block_threads / 32));
}

std::int32_t channel_copy_blocks(const channel_copy_args& a) {
  constexpr const char* kernel = "channel_copy";
  require_pointer(kernel, "input", a.input);
  require_pointer(kernel, "output", a.output);
  require_extent(kernel, "n", a.n);
  require_extent(kernel, "c", a.c);
  require_extent(kernel, "inner", a.inner);
  require_extent(kernel, "out_channels", a.out_channels);
  if (a.offset < 0 || std::int64_t{a.offset} + a.c > a.out_channels) {
    reject(kernel, "offset",
           std::to_string(a.offset) + " + c (" + std::to_string(a.c) +
               ") must lie within out_channels (" + std::to_string(a.out_channels) + ")");
  }
  const std::int64_t values = std::int64_t{a.n} * a.c * a.inner;
  require_extent(kernel, "n*c*inner", values);
  require_extent(kernel, "n*out_channels*inner", std::int64_t{a.n} * a.out_channels * a.inner);
  return checked_blocks(kernel, ceil_div(values, be_chunk));
}

void launch_conv2d_layer(cudaStream_t s, const be_launch_view& v, const conv2d_layer_args& a) {
  check_saved("conv2d_layer", v);
  launch("conv2d_layer", s, v, a, conv2d_layer_blocks(a));
}

void launch_depthwise_conv2d(cudaStream_t s, const be_launch_view& v,
                             const depthwise_conv2d_args& a) {
  launch("depthwise_conv2d", s, v, a, depthwise_conv2d_blocks(a));
}

void launch_pointwise(cudaStream_t s, const be_launch_view& v, const pointwise_args& a) {
  launch("pointwise", s, v, a, pointwise_blocks(a));
}

void launch_pool2d(cudaStream_t s, const be_launch_view& v, const pool2d_args& a) {
  launch("pool2d", s, v, a, pool2d_blocks(a));
}

void launch_global_avg_pool(cudaStream_t s, const be_launch_view& v,
                            const global_avg_pool_args& a) {
  launch("global_avg_pool", s, v, a, global_avg_pool_blocks(a));
}

void launch_channel_copy(cudaStream_t s, const be_launch_view& v, const channel_copy_args& a) {
  launch("channel_copy", s, v, a, channel_copy_blocks(a));
}

void load_be_layer_kernels() {
  load_kernels_of<conv2d_layer_args>("conv2d_layer");
  load_kernels_of<depthwise_conv2d_args>("depthwise_conv2d");
  load_kernels_of<pointwise_args>("pointwise");
  load_kernels_of<pool2d_args>("pool2d");
  load_kernels_of<global_avg_pool_args>("global_avg_pool");
  load_kernels_of<channel_copy_args>("channel_copy");
}

be_call make_call(std::string name, const conv2d_layer_args& a) {
  return call_for(std::move(name), a, conv2d_layer_blocks(a), true, &launch_conv2d_layer,
                  be_tile_state_floats);
}

be_call make_call(std::string name, const depthwise_conv2d_args& a) {
  return call_for(std::move(name), a, depthwise_conv2d_blocks(a), true, &launch_depthwise_conv2d);
}

be_call make_call(std::string name, const pointwise_args& a) {
  return call_for(std::move(name), a, pointwise_blocks(a), true, &launch_pointwise);
}

be_call make_call(std::string name, const pool2d_args& a) {
  return call_for(std::move(name), a, pool2d_blocks(a), true, &launch_pool2d);
}

be_call make_call(std::string name, const global_avg_pool_args& a) {
  return call_for(std::move(name), a, global_avg_pool_blocks(a), true, &launch_global_avg_pool);
}

be_call make_call(std::string name, const channel_copy_args& a) {
  return call_for(std::move(name), a, channel_copy_blocks(a), true, &launch_channel_copy);
}

}  // namespace resident::sched
