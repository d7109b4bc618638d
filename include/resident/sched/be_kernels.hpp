#pragma once
// The best-effort (BE) kernel library, host half: the arguments of each kernel, how many
// logical blocks a launch of it covers, and its launcher. Every kernel follows the
// preemptible-kernel contract (resident/sched/preemptible.hpp): a logical block checks the
// preempt word when it starts (and, in the GEMM-shaped kernels, before every K-step), writes
// nothing until its last check, and commits. The device bodies live in be_kernels.cuh, so a
// merged (padded) kernel can run them next to real-time work.
//
// Idempotent kernels (gemm, gemm_bias_act, conv2d, maxpool2d, fill) may re-run a block on resume;
// the non-idempotent ones (bias_act works in place, row_sum accumulates) must resume exactly,
// skipping the blocks their done words record.
//
// All tensors are fp32 and dense: row-major matrices, NCHW activations, KCRS filters.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

#include "resident/sched/preemptible.hpp"

namespace resident::sched {

/// Output tile of a GEMM-shaped block (gemm, conv2d): be_tile x be_tile outputs, 4x4 per
/// thread, reduced be_k_step at a time through shared memory.
inline constexpr std::int32_t be_tile = 64;
inline constexpr std::int32_t be_k_step = 16;
/// Floats of partial state a GEMM-shaped block checkpoints (be_launch_view::saved_floats).
inline constexpr std::int32_t be_tile_state_floats = be_tile * be_tile;
/// Elements a block of bias_act, maxpool2d or fill handles (outputs, for maxpool2d); also the
/// columns of one row_sum block. Four per thread.
inline constexpr std::int32_t be_chunk = be_block_threads * 4;

/// What a layer applies to its outputs last (PyTorch's definitions): relu max(v, 0); relu6
/// min(max(v, 0), 6); silu v * sigmoid(v); sigmoid 1 / (1 + e^-v); hardswish
/// v * relu6(v + 3) / 6; hardsigmoid relu6(v + 3) / 6.
enum class activation : std::int32_t { none, relu, relu6, silu, sigmoid, hardswish, hardsigmoid };

/// Whether `a` is one of the activations above (a value cast from elsewhere may not be).
[[nodiscard]] constexpr bool valid_activation(activation a) noexcept {
  return static_cast<std::int32_t>(a) >= 0 &&
         static_cast<std::int32_t>(a) <= static_cast<std::int32_t>(activation::hardsigmoid);
}

/// C[m x n] = A[m x k] * B[k x n]. Idempotent.
struct gemm_args {
  const float* a{};
  const float* b{};
  float* c{};
  std::int32_t m{};
  std::int32_t n{};
  std::int32_t k{};
};

/// C[m x n] = act(A[m x k] * B[k x n] + bias[column]): a gemm whose blocks add the bias and
/// apply the activation to their tile before they write it, instead of a bias_act pass over C
/// after it. The same tiles, K-steps and checkpoints as gemm. Unlike bias_act it never reads C,
/// so it is idempotent. It exists for what it saves the memory system: a bias_act pass reads
/// and writes all of C again (16 MB per layer of bench reef's BE MLP), and those writes are
/// what slows a latency-bound RT loop on other SMs most (`bench/probes/interference_probe.cu`).
struct gemm_bias_act_args {
  gemm_args gemm;
  const float* bias{};  // [gemm.n]
  activation act{activation::none};
};

/// Geometry of a 2-D convolution with zero padding: input [n, c, h, w], filter [k, c, r, s],
/// output [n, k, p, q].
struct conv2d_shape {
  std::int32_t n{};
  std::int32_t c{};
  std::int32_t h{};
  std::int32_t w{};
  std::int32_t k{};
  std::int32_t r{};
  std::int32_t s{};
  std::int32_t stride{1};
  std::int32_t pad{0};

  [[nodiscard]] __host__ __device__ constexpr std::int32_t p() const noexcept {
    return (h + 2 * pad - r) / stride + 1;
  }
  [[nodiscard]] __host__ __device__ constexpr std::int32_t q() const noexcept {
    return (w + 2 * pad - s) / stride + 1;
  }
};

/// Convolution as an implicit GEMM: rows are the n*p*q output pixels, columns the k output
/// channels, the reduction runs over c*r*s. Idempotent. (Grouped, with a bias and an
/// activation: conv2d_layer_args, be_layers.hpp.)
struct conv2d_args {
  const float* input{};
  const float* filter{};
  float* output{};
  conv2d_shape shape;
};

/// In place: x[i] = act(x[i] + bias[(i / inner) % channels]) for i < elements; `inner` is the
/// elements per channel (h*w of NCHW; 1 for the columns of a row-major matrix). NOT idempotent.
struct bias_act_args {
  float* x{};
  const float* bias{};
  std::int64_t elements{};
  std::int32_t inner{};
  std::int32_t channels{};
  activation act{activation::none};
};

/// 2x2 max pooling, stride 2: input [n, c, h, w], output [n, c, h/2, w/2] (a trailing odd row
/// or column is dropped). Idempotent.
struct maxpool2d_args {
  const float* input{};
  float* output{};
  std::int32_t n{};
  std::int32_t c{};
  std::int32_t h{};
  std::int32_t w{};
};

/// out[r] += sum of row r of x [rows x cols]; a block adds one be_chunk of one row with a single
/// atomicAdd, so `out` must be zeroed first (a fill) and no block may run twice. NOT idempotent.
struct row_sum_args {
  const float* x{};
  float* out{};
  std::int32_t rows{};
  std::int32_t cols{};
};

/// x[i] = value for i < elements. Idempotent.
struct fill_args {
  float* x{};
  std::int64_t elements{};
  float value{};
};

// Logical blocks of a launch. Each validates its arguments and throws std::invalid_argument
// naming the kernel and the bad field ("gemm: m must be > 0, got 0").

/// ceil(m / be_tile) * ceil(n / be_tile); block b computes tile row b / tiles_n, column
/// b % tiles_n.
[[nodiscard]] std::int32_t gemm_blocks(const gemm_args& a);
/// gemm_blocks(a.gemm), laid out like gemm's; also checks the bias and the activation.
[[nodiscard]] std::int32_t gemm_bias_act_blocks(const gemm_bias_act_args& a);
/// ceil(n*p*q / be_tile) * ceil(k / be_tile), laid out like gemm's.
[[nodiscard]] std::int32_t conv2d_blocks(const conv2d_args& a);
/// ceil(elements / be_chunk).
[[nodiscard]] std::int32_t bias_act_blocks(const bias_act_args& a);
/// ceil(n*c*(h/2)*(w/2) / be_chunk).
[[nodiscard]] std::int32_t maxpool2d_blocks(const maxpool2d_args& a);
/// rows * ceil(cols / be_chunk); block b adds chunk b % chunks of row b / chunks.
[[nodiscard]] std::int32_t row_sum_blocks(const row_sum_args& a);
/// ceil(elements / be_chunk).
[[nodiscard]] std::int32_t fill_blocks(const fill_args& a);

// Launch one attempt: grid_blocks(v) blocks of be_block_threads on `s` (nothing when the
// attempt has no block left). invalid_argument when the arguments are invalid, v.blocks is not
// the kernel's block count, v.done is null, v.attempt is 0 or v.first_block is negative;
// invalid_argument also when v.saved is set without v.progress, or with fewer than
// be_tile_state_floats floats per block for gemm and conv2d; cuda_error when the launch fails.

/// How a launch follows the previous kernel on its stream. `full`: after it has finished (an
/// ordinary launch). `programmatic`: as its programmatic dependent (sm_90 PDL): the kernel may be
/// scheduled while the previous one still runs and waits on the device, before it touches any
/// memory, until that kernel has finished and its writes are visible; in a captured graph the
/// edge becomes programmatic, which takes most of a node's launch latency off a chain of small
/// kernels (the RT model of bench reef). Only plain grids take it (no work counter, no
/// max_grid stride).
enum class launch_dependency { full, programmatic };

void launch_gemm(cudaStream_t s, const be_launch_view& v, const gemm_args& a);
void launch_gemm_bias_act(cudaStream_t s, const be_launch_view& v, const gemm_bias_act_args& a);
void launch_conv2d(cudaStream_t s, const be_launch_view& v, const conv2d_args& a);
void launch_bias_act(cudaStream_t s, const be_launch_view& v, const bias_act_args& a);
void launch_maxpool2d(cudaStream_t s, const be_launch_view& v, const maxpool2d_args& a);
void launch_row_sum(cudaStream_t s, const be_launch_view& v, const row_sum_args& a);
void launch_fill(cudaStream_t s, const be_launch_view& v, const fill_args& a);
// The same, following the previous kernel as `d` says (invalid_argument for a programmatic
// launch that would not be a plain grid).
void launch_bias_act(cudaStream_t s, const be_launch_view& v, const bias_act_args& a,
                     launch_dependency d);
void launch_row_sum(cudaStream_t s, const be_launch_view& v, const row_sum_args& a,
                    launch_dependency d);
void launch_fill(cudaStream_t s, const be_launch_view& v, const fill_args& a, launch_dependency d);

/// Loads every kernel above, and be_layers.hpp's, into the current context (resident::load_kernel).
/// Under lazy module loading a kernel's first launch can wait for the context to go idle, which
/// never happens while a resident loop runs; be_runner calls this before it launches anything.
void load_be_kernels();

/// One kernel launch of a BE sequence, as the scheduler sees it.
struct be_call {
  std::string name;       // e.g. "mlp.fc1.gemm"
  std::int32_t blocks{};  // logical blocks
  bool idempotent{};
  /// Checkpoint floats per logical block (be_launch_view::saved_floats): be_tile_state_floats
  /// for gemm and conv2d, 0 for kernels whose blocks are too short to need one.
  std::int32_t saved_floats{};
  std::function<void(cudaStream_t, const be_launch_view&)> launch;  // launches attempt v
};

// A be_call for one launch of a kernel with fixed arguments (validated here).

[[nodiscard]] be_call make_call(std::string name, const gemm_args& a);
[[nodiscard]] be_call make_call(std::string name, const gemm_bias_act_args& a);
[[nodiscard]] be_call make_call(std::string name, const conv2d_args& a);
[[nodiscard]] be_call make_call(std::string name, const bias_act_args& a);
[[nodiscard]] be_call make_call(std::string name, const maxpool2d_args& a);
[[nodiscard]] be_call make_call(std::string name, const row_sum_args& a);
[[nodiscard]] be_call make_call(std::string name, const fill_args& a);

}  // namespace resident::sched
