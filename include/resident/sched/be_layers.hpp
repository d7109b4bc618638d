#pragma once
// The layers a translated CNN needs beyond be_kernels.hpp (resident.translate: depthwise
// convolution, elementwise affine / residual / gate with an activation, pooling of any window,
// global average pooling, channel concatenation). Every kernel here follows the same
// preemptible-kernel contract as be_kernels.hpp's short kernels: a logical block checks the
// preempt word when it starts (conv2d_layer, GEMM-shaped, also before every K-step, with
// conv2d's checkpoints), computes its outputs in a fixed order (no atomics, so a resumed run
// gives the same bits) and commits; each is idempotent (no kernel reads what it writes).
//
// Tensors are fp32 and dense, NCHW.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "resident/sched/be_kernels.hpp"

namespace resident::sched {

/// A convolution layer: conv2d's implicit GEMM (the same tiles, K-steps and checkpoints) with
/// `groups` (c and k multiples of it; filter [k, c / groups, r, s]; each group a GEMM of its
/// own, its blocks after the previous group's), bias[channel] added when not null and `act`
/// applied before the tile is written. A depthwise convolution (c / groups == 1) is faster as
/// depthwise_conv2d.
struct conv2d_layer_args {
  conv2d_args conv;
  const float* bias{};
  activation act{activation::none};
  std::int32_t groups{1};
};

/// Depthwise convolution (groups == c): filter [k, 1, r, s] with k a multiple of c, output
/// channel o reading input channel o / (k / c); bias[o] added when not null, then `act`. Each
/// output is its r*s products summed in order. be_chunk outputs per block.
struct depthwise_conv2d_args {
  const float* input{};
  const float* filter{};
  const float* bias{};
  float* output{};
  conv2d_shape shape;  // c input channels, k output channels, r x s window
  activation act{activation::none};
};

/// Elementwise over `elements` values laid out [n, channels, inner] (inner = h*w; 1 for
/// [n, features]): out[e] = act((x[e] * scale[c] + shift[c]) * gate[n * channels + c] + y[e]),
/// with c = e / inner % channels and n = e / (inner * channels); each of scale, shift, gate
/// and y may be null (left out). A batch norm that could not be folded is scale and shift, a
/// residual sum x and y, squeeze-excitation x and gate, an activation alone x. `out` must not
/// be x or y. be_chunk values per block.
struct pointwise_args {
  const float* x{};
  const float* y{};
  const float* scale{};
  const float* shift{};
  const float* gate{};
  float* out{};
  std::int64_t elements{};
  std::int32_t inner{};
  std::int32_t channels{};
  activation act{activation::none};
};

enum class pooling : std::int32_t { max, average };

/// Pooling of a kernel_h x kernel_w window with one stride and zero padding both ways: input
/// [n, c, h, w], output [n, c, p, q], p = (h + 2 pad - kernel_h) / stride + 1 (floor). A max
/// takes only cells inside the input (every window holds one when pad <= kernel / 2, which is
/// checked); an average divides by the whole window when count_include_pad, else by the cells
/// inside. be_chunk outputs per block.
struct pool2d_args {
  const float* input{};
  float* output{};
  std::int32_t n{};
  std::int32_t c{};
  std::int32_t h{};
  std::int32_t w{};
  std::int32_t kernel_h{};
  std::int32_t kernel_w{};
  std::int32_t stride{1};
  std::int32_t pad{0};
  pooling kind{pooling::max};
  bool count_include_pad{true};

  [[nodiscard]] constexpr std::int32_t p() const noexcept {
    return (h + 2 * pad - kernel_h) / stride + 1;
  }
  [[nodiscard]] constexpr std::int32_t q() const noexcept {
    return (w + 2 * pad - kernel_w) / stride + 1;
  }
};

/// The mean of each of `planes` planes of `plane` values (an [n*c, h*w] input to [n*c]): one
/// warp per plane, each lane summing its strided share in order, then a fixed shuffle tree.
/// be_block_threads / 32 planes per block.
struct global_avg_pool_args {
  const float* input{};
  float* output{};
  std::int32_t planes{};
  std::int32_t plane{};
};

/// Channel concatenation, one input at a time: input [n, c, inner] is copied to channels
/// offset .. offset + c - 1 of output [n, out_channels, inner]. be_chunk values per block.
struct channel_copy_args {
  const float* input{};
  float* output{};
  std::int32_t n{};
  std::int32_t c{};
  std::int32_t inner{};
  std::int32_t out_channels{};
  std::int32_t offset{};
};

/// `act` applied to v in double precision, as the kernels apply it in single: the references
/// the kernels and translated models are checked against use it.
[[nodiscard]] double activation_fp64(double v, activation act) noexcept;

// Logical blocks of a launch; invalid_argument naming the kernel and the field otherwise.

/// groups * ceil(n*p*q / be_tile) * ceil(k / groups / be_tile).
[[nodiscard]] std::int32_t conv2d_layer_blocks(const conv2d_layer_args& a);
/// ceil(n*k*p*q / be_chunk).
[[nodiscard]] std::int32_t depthwise_conv2d_blocks(const depthwise_conv2d_args& a);
/// ceil(elements / be_chunk).
[[nodiscard]] std::int32_t pointwise_blocks(const pointwise_args& a);
/// ceil(n*c*p*q / be_chunk).
[[nodiscard]] std::int32_t pool2d_blocks(const pool2d_args& a);
/// ceil(planes / (be_block_threads / 32)).
[[nodiscard]] std::int32_t global_avg_pool_blocks(const global_avg_pool_args& a);
/// ceil(n*c*inner / be_chunk).
[[nodiscard]] std::int32_t channel_copy_blocks(const channel_copy_args& a);

// Launch one attempt, as be_kernels.hpp's launch_* do (the same view rules; conv2d_layer's
// checkpoints as conv2d's).
void launch_conv2d_layer(cudaStream_t s, const be_launch_view& v, const conv2d_layer_args& a);
void launch_depthwise_conv2d(cudaStream_t s, const be_launch_view& v,
                             const depthwise_conv2d_args& a);
void launch_pointwise(cudaStream_t s, const be_launch_view& v, const pointwise_args& a);
void launch_pool2d(cudaStream_t s, const be_launch_view& v, const pool2d_args& a);
void launch_global_avg_pool(cudaStream_t s, const be_launch_view& v, const global_avg_pool_args& a);
void launch_channel_copy(cudaStream_t s, const be_launch_view& v, const channel_copy_args& a);

/// Loads the kernels above into the current context (see load_be_kernels).
void load_be_layer_kernels();

[[nodiscard]] be_call make_call(std::string name, const conv2d_layer_args& a);
[[nodiscard]] be_call make_call(std::string name, const depthwise_conv2d_args& a);
[[nodiscard]] be_call make_call(std::string name, const pointwise_args& a);
[[nodiscard]] be_call make_call(std::string name, const pool2d_args& a);
[[nodiscard]] be_call make_call(std::string name, const global_avg_pool_args& a);
[[nodiscard]] be_call make_call(std::string name, const channel_copy_args& a);

}  // namespace resident::sched
