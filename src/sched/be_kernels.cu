#include "resident/sched/be_kernels.hpp"

#include <string>
#include <utility>

#include "resident/sched/be_kernels.cuh"
#include "resident/sched/be_layers.hpp"
#include "sched/be_launch.cuh"

namespace resident::sched {

// Dispatch from an argument type to its block body, for the kernel templates of be_launch.cuh
// (found there by argument-dependent lookup).
__device__ inline void run_block(const gemm_args& a, be_block& blk) { gemm_block<>(a, blk); }
__device__ inline void run_block(const gemm_bias_act_args& a, be_block& blk) {
  gemm_bias_act_block(a, blk);
}
__device__ inline void run_block(const conv2d_args& a, be_block& blk) { conv2d_block(a, blk); }
__device__ inline void run_block(const bias_act_args& a, be_block& blk) { bias_act_block(a, blk); }
__device__ inline void run_block(const maxpool2d_args& a, be_block& blk) {
  maxpool2d_block(a, blk);
}
__device__ inline void run_block(const row_sum_args& a, be_block& blk) { row_sum_block(a, blk); }
__device__ inline void run_block(const fill_args& a, be_block& blk) { fill_block(a, blk); }

namespace be_detail {
template <>
inline constexpr bool cut_part_way<gemm_args> = true;
template <>
inline constexpr bool cut_part_way<gemm_bias_act_args> = true;
template <>
inline constexpr bool cut_part_way<conv2d_args> = true;
}  // namespace be_detail

using namespace be_detail;

std::int32_t gemm_blocks(const gemm_args& a) {
  constexpr const char* kernel = "gemm";
  require_pointer(kernel, "a", a.a);
  require_pointer(kernel, "b", a.b);
  require_pointer(kernel, "c", a.c);
  require_extent(kernel, "m", a.m);
  require_extent(kernel, "n", a.n);
  require_extent(kernel, "k", a.k);
  return checked_blocks(kernel, ceil_div(a.m, be_tile) * ceil_div(a.n, be_tile));
}

std::int32_t gemm_bias_act_blocks(const gemm_bias_act_args& a) {
  constexpr const char* kernel = "gemm_bias_act";
  require_pointer(kernel, "gemm.a", a.gemm.a);
  require_pointer(kernel, "gemm.b", a.gemm.b);
  require_pointer(kernel, "gemm.c", a.gemm.c);
  require_extent(kernel, "gemm.m", a.gemm.m);
  require_extent(kernel, "gemm.n", a.gemm.n);
  require_extent(kernel, "gemm.k", a.gemm.k);
  require_pointer(kernel, "bias", a.bias);
  check_activation(kernel, a.act);
  return checked_blocks(kernel, ceil_div(a.gemm.m, be_tile) * ceil_div(a.gemm.n, be_tile));
}

std::int32_t conv2d_blocks(const conv2d_args& a) {
  constexpr const char* kernel = "conv2d";
  const conv2d_shape& sh = a.shape;
  require_pointer(kernel, "input", a.input);
  require_pointer(kernel, "filter", a.filter);
  require_pointer(kernel, "output", a.output);
  check_conv2d_shape(kernel, sh);
  const std::int64_t rows = std::int64_t{sh.n} * sh.p() * sh.q();
  require_extent(kernel, "n*p*q (output pixels)", rows);
  require_extent(kernel, "c*r*s (reduction)", std::int64_t{sh.c} * sh.r * sh.s);
  return checked_blocks(kernel, ceil_div(rows, be_tile) * ceil_div(sh.k, be_tile));
}

std::int32_t bias_act_blocks(const bias_act_args& a) {
  constexpr const char* kernel = "bias_act";
  require_pointer(kernel, "x", a.x);
  require_pointer(kernel, "bias", a.bias);
  require_positive(kernel, "elements", a.elements);
  require_positive(kernel, "inner", a.inner);
  require_positive(kernel, "channels", a.channels);
  check_activation(kernel, a.act);
  return checked_blocks(kernel, ceil_div(a.elements, be_chunk));
}

std::int32_t maxpool2d_blocks(const maxpool2d_args& a) {
  constexpr const char* kernel = "maxpool2d";
  require_pointer(kernel, "input", a.input);
  require_pointer(kernel, "output", a.output);
  require_positive(kernel, "n", a.n);
  require_positive(kernel, "c", a.c);
  if (a.h < 2) reject(kernel, "h", "must be >= 2, got " + std::to_string(a.h));
  if (a.w < 2) reject(kernel, "w", "must be >= 2, got " + std::to_string(a.w));
  const std::int64_t outputs = std::int64_t{a.n} * a.c * (a.h / 2) * (a.w / 2);
  return checked_blocks(kernel, ceil_div(outputs, be_chunk));
}

std::int32_t row_sum_blocks(const row_sum_args& a) {
  constexpr const char* kernel = "row_sum";
  require_pointer(kernel, "x", a.x);
  require_pointer(kernel, "out", a.out);
  require_positive(kernel, "rows", a.rows);
  require_extent(kernel, "cols", a.cols);
  return checked_blocks(kernel, std::int64_t{a.rows} * ceil_div(a.cols, be_chunk));
}

std::int32_t fill_blocks(const fill_args& a) {
  constexpr const char* kernel = "fill";
  require_pointer(kernel, "x", a.x);
  require_positive(kernel, "elements", a.elements);
  return checked_blocks(kernel, ceil_div(a.elements, be_chunk));
}

void launch_gemm(cudaStream_t s, const be_launch_view& v, const gemm_args& a) {
  check_saved("gemm", v);
  launch("gemm", s, v, a, gemm_blocks(a));
}

void launch_gemm_bias_act(cudaStream_t s, const be_launch_view& v, const gemm_bias_act_args& a) {
  check_saved("gemm_bias_act", v);
  launch("gemm_bias_act", s, v, a, gemm_bias_act_blocks(a));
}

void launch_conv2d(cudaStream_t s, const be_launch_view& v, const conv2d_args& a) {
  check_saved("conv2d", v);
  launch("conv2d", s, v, a, conv2d_blocks(a));
}

void launch_bias_act(cudaStream_t s, const be_launch_view& v, const bias_act_args& a) {
  launch("bias_act", s, v, a, bias_act_blocks(a));
}

void launch_bias_act(cudaStream_t s, const be_launch_view& v, const bias_act_args& a,
                     launch_dependency d) {
  launch("bias_act", s, v, a, bias_act_blocks(a), d);
}

void launch_maxpool2d(cudaStream_t s, const be_launch_view& v, const maxpool2d_args& a) {
  launch("maxpool2d", s, v, a, maxpool2d_blocks(a));
}

void launch_row_sum(cudaStream_t s, const be_launch_view& v, const row_sum_args& a) {
  launch("row_sum", s, v, a, row_sum_blocks(a));
}

void launch_row_sum(cudaStream_t s, const be_launch_view& v, const row_sum_args& a,
                    launch_dependency d) {
  launch("row_sum", s, v, a, row_sum_blocks(a), d);
}

void load_be_kernels() {
  load_kernels_of<gemm_args>("gemm");
  load_kernels_of<gemm_bias_act_args>("gemm_bias_act");
  load_kernels_of<conv2d_args>("conv2d");
  load_kernels_of<bias_act_args>("bias_act");
  load_kernels_of<maxpool2d_args>("maxpool2d");
  load_kernels_of<row_sum_args>("row_sum");
  load_kernels_of<fill_args>("fill");
  load_be_layer_kernels();
}

void launch_fill(cudaStream_t s, const be_launch_view& v, const fill_args& a) {
  launch("fill", s, v, a, fill_blocks(a));
}

void launch_fill(cudaStream_t s, const be_launch_view& v, const fill_args& a, launch_dependency d) {
  launch("fill", s, v, a, fill_blocks(a), d);
}

be_call make_call(std::string name, const gemm_args& a) {
  return call_for(std::move(name), a, gemm_blocks(a), true, &launch_gemm, be_tile_state_floats);
}

be_call make_call(std::string name, const gemm_bias_act_args& a) {
  return call_for(std::move(name), a, gemm_bias_act_blocks(a), true, &launch_gemm_bias_act,
                  be_tile_state_floats);
}

be_call make_call(std::string name, const conv2d_args& a) {
  return call_for(std::move(name), a, conv2d_blocks(a), true, &launch_conv2d, be_tile_state_floats);
}

be_call make_call(std::string name, const bias_act_args& a) {
  return call_for(std::move(name), a, bias_act_blocks(a), false, &launch_bias_act);
}

be_call make_call(std::string name, const maxpool2d_args& a) {
  return call_for(std::move(name), a, maxpool2d_blocks(a), true, &launch_maxpool2d);
}

be_call make_call(std::string name, const row_sum_args& a) {
  return call_for(std::move(name), a, row_sum_blocks(a), false, &launch_row_sum);
}

be_call make_call(std::string name, const fill_args& a) {
  return call_for(std::move(name), a, fill_blocks(a), true, &launch_fill);
}

}  // namespace resident::sched
