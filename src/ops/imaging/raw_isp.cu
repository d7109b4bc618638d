#include "resident/ops/imaging/raw_isp.hpp"

#include <cub/block/block_histogram.cuh>

#include <algorithm>
#include <array>
#include <string>

#include "launch.cuh"
#include "params.hpp"
#include "resident/cuda/device.hpp"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::ops::imaging {

namespace {

namespace math = isp_math;

constexpr int positions = 4;  // samples of a Bayer cell
constexpr int levels = static_cast<int>(math::bins_per_channel);
constexpr int stats_threads = levels;  // the gains step takes a bin per thread
constexpr int stats_items = 8;         // pixels per thread and step: one 16-byte vector
constexpr int counted_bins = positions * levels;
// The histogram in shared memory: position in the 2x2 cell * 256 + level, and one bin more
// for the lanes past the image's end (CUB's block histogram counts every item it is given).
// Atomic adds into shared memory: on an H200 at 1080p the whole ISP took 18.9 us (p50) so,
// 34.0 us with CUB's sorting variant and 20.1 us with warp-aggregated adds (__match_any_sync).
using block_histogram = cub::BlockHistogram<std::uint16_t, stats_threads, stats_items,
                                            counted_bins + 1, cub::BLOCK_HISTO_ATOMIC>;

struct stats_args {
  const std::uint16_t* in;
  std::size_t pitch;
  std::uint32_t width;
  std::uint32_t height;
  std::uint32_t black;
  std::uint32_t max;
  io::bayer_order order;
  bool vector;
  int* histogram;  // positions x levels, zero between frames
  unsigned* done;  // blocks finished with this frame, zero between frames
  std::uint64_t* multipliers;
};

/// This thread's 8 pixels of group `g` (row y, columns x0..x0+7) as histogram bins.
__device__ void bins_of_group(const stats_args& a, std::uint64_t g, std::uint32_t groups,
                              std::uint16_t (&bins)[stats_items]) {
  const auto y = static_cast<std::uint32_t>(g / groups);
  const auto x0 = static_cast<std::uint32_t>(g % groups) * stats_items;
  const auto* row = reinterpret_cast<const std::uint16_t*>(
      reinterpret_cast<const std::uint8_t*>(a.in) + y * a.pitch);
  std::uint16_t v[stats_items];
  if (a.vector && x0 + stats_items <= a.width) {
    const uint4 w = *reinterpret_cast<const uint4*>(row + x0);
    const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = static_cast<std::uint16_t>(words[i] & 0xFFFFU);
      v[2 * i + 1] = static_cast<std::uint16_t>(words[i] >> 16);
    }
  } else {
#pragma unroll
    for (int k = 0; k < stats_items; ++k) v[k] = x0 + k < a.width ? row[x0 + k] : 0;
  }
  const unsigned row_position = (y & 1U) * 2U;
#pragma unroll
  for (int k = 0; k < stats_items; ++k) {
    bins[k] = x0 + k < a.width ? static_cast<std::uint16_t>((row_position + (k & 1)) * levels +
                                                            math::bin_of(v[k], a.black, a.max))
                               : static_cast<std::uint16_t>(counted_bins);
  }
}

/// Each channel's count and sum of levels (the two green cell positions added), then its
/// grey-world multiplier; one bin per thread. The histogram is read past L1 (other blocks wrote
/// it) and left zero for the next frame.
__device__ void write_gains(const stats_args& a) {
  __shared__ unsigned long long partial[stats_threads / 32][6];
  unsigned long long v[6] = {0, 0, 0, 0, 0, 0};  // count and sum of levels, per channel
  for (int k = 0; k < positions; ++k) {
    const int c = io::bayer_channel(a.order, k % 2, k / 2);
    const auto n = static_cast<unsigned long long>(__ldcg(a.histogram + k * levels + threadIdx.x));
    a.histogram[k * levels + threadIdx.x] = 0;
    v[2 * c] += n;
    v[2 * c + 1] += n * threadIdx.x;
  }
  for (int i = 0; i < 6; ++i) {
    for (int offset = 16; offset > 0; offset /= 2)
      v[i] += __shfl_down_sync(0xFFFFFFFFU, v[i], offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32][i] = v[i];
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned long long total[6] = {0, 0, 0, 0, 0, 0};
  for (int w = 0; w < stats_threads / 32; ++w) {
    for (int i = 0; i < 6; ++i) total[i] += partial[w][i];
  }
  for (int c = 0; c < 3; ++c) {
    const double gain = math::grey_world_gain(total[2 * c + 1], total[2 * c], total[3], total[2]);
    a.multipliers[c] = math::multiplier_q16(gain, a.black, a.max);
  }
  *a.done = 0;  // ready for the next launch (kernel boundaries order it)
}

/// The frame's histogram (CUB's block histogram in shared memory per block, added into the
/// global one), and in the last block to finish, the gains from it: one kernel, one pass.
__global__ void __launch_bounds__(stats_threads) statistics_kernel(stats_args a) {
  kernels::begin_dependent_kernel();
  __shared__ typename block_histogram::TempStorage storage;
  __shared__ unsigned counts[counted_bins + 1];
  __shared__ bool last;
  block_histogram histogram(storage);
  histogram.InitHistogram(counts);
  __syncthreads();
  const std::uint32_t groups = (a.width + stats_items - 1) / stats_items;
  const std::uint64_t total = std::uint64_t{groups} * a.height;
  const std::uint64_t step = std::uint64_t{gridDim.x} * blockDim.x;
  // The trip count is the block's, not the thread's: every thread takes part in each step.
  for (std::uint64_t base = std::uint64_t{blockIdx.x} * blockDim.x; base < total; base += step) {
    std::uint16_t bins[stats_items];
    const std::uint64_t g = base + threadIdx.x;
    if (g < total) {
      bins_of_group(a, g, groups, bins);
    } else {
      for (auto& b : bins) b = static_cast<std::uint16_t>(counted_bins);
    }
    histogram.Composite(bins, counts);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < counted_bins; i += blockDim.x) {
    if (counts[i] != 0) atomicAdd(a.histogram + i, static_cast<int>(counts[i]));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // the block's additions (ordered by the barrier) before its count
    last = atomicAdd(a.done, 1U) == gridDim.x - 1;
    if (last) __threadfence();
  }
  __syncthreads();
  if (last) write_gains(a);
}

constexpr int correct_threads = 256;
constexpr std::uint32_t group = 8;  // pixels per thread: one 16-byte vector

/// out = correct(in) with the channel's multiplier. Each thread reads its 8 pixels before it
/// writes them, so `out` may be `in` (no __restrict__ here on purpose).
__global__ void __launch_bounds__(correct_threads)
    correct_kernel(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                   std::uint32_t width, std::uint32_t height, io::bayer_order order,
                   std::uint32_t black, std::uint32_t max, const std::uint64_t* multipliers,
                   bool vector) {
  kernels::begin_dependent_kernel();
  const std::uint32_t groups = (width + group - 1) / group;
  const std::uint64_t total = std::uint64_t{groups} * height;
  const std::uint64_t m[3] = {multipliers[0], multipliers[1], multipliers[2]};
  for (std::uint64_t g = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; g < total;
       g += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto y = static_cast<std::uint32_t>(g / groups);
    const auto x0 = static_cast<std::uint32_t>(g % groups) * group;
    // Channels of even and odd columns on this row (x0 is even).
    const std::uint64_t even = m[io::bayer_channel(order, 0, y)];
    const std::uint64_t odd = m[io::bayer_channel(order, 1, y)];
    const auto* src = reinterpret_cast<const std::uint16_t*>(
                          reinterpret_cast<const std::uint8_t*>(in) + y * pitch) +
                      x0;
    auto* dst =
        reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(out) + y * pitch) + x0;
    if (vector && x0 + group <= width) {
      uint4 v = *reinterpret_cast<const uint4*>(src);
      unsigned* w = &v.x;
      for (int i = 0; i < 4; ++i) {
        const unsigned lo = math::correct(w[i] & 0xFFFFU, black, even, max);
        const unsigned hi = math::correct(w[i] >> 16, black, odd, max);
        w[i] = lo | hi << 16;
      }
      *reinterpret_cast<uint4*>(dst) = v;
    } else {
      for (std::uint32_t x = x0; x < width && x < x0 + group; ++x) {
        dst[x - x0] = math::correct(src[x - x0], black, (x & 1U) != 0U ? odd : even, max);
      }
    }
  }
}

}  // namespace

raw_isp_workspace::raw_isp_workspace(const raw_isp_config& config)
    : _config(config),
      _histogram(positions * levels * sizeof(int)),
      _multipliers(3 * sizeof(std::uint64_t)),
      _done(sizeof(unsigned)) {
  const std::uint32_t max = (1U << config.bits) - 1U;
  const std::uint64_t unit = math::multiplier_q16(1.0, config.black_level, max);
  const std::array<std::uint64_t, 3> none{unit, unit, unit};
  // Without white balance these stay; with it the statistics kernel overwrites them every frame.
  RESIDENT_CUDA_TRY(
      cudaMemcpy(_multipliers.data(), none.data(), sizeof(none), cudaMemcpyHostToDevice));
  // Zero between frames from here on: the kernel's last block clears what it read.
  RESIDENT_CUDA_TRY(cudaMemset(_histogram.data(), 0, _histogram.size()));
  RESIDENT_CUDA_TRY(cudaMemset(_done.data(), 0, _done.size()));
  const int device = current_device();
  int sms = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int per_sm = 0;
  RESIDENT_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, statistics_kernel, stats_threads, 0));
  // Every block resident at once: the blocks merge into one histogram, and fewer, fuller blocks
  // mean fewer global additions.
  const std::uint64_t groups =
      std::uint64_t{(config.width + stats_items - 1) / stats_items} * config.height;
  _statistics_blocks = static_cast<unsigned>(std::clamp<std::uint64_t>(
      (groups + stats_threads - 1) / stats_threads, 1, std::uint64_t(sms) * std::max(per_sm, 1)));
}

namespace detail {

void launch_raw_isp_statistics(const std::uint16_t* in, std::size_t pitch,
                               const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  const raw_isp_config& c = ws.config();
  stats_args a{};
  a.in = in;
  a.pitch = pitch;
  a.width = c.width;
  a.height = c.height;
  a.black = c.black_level;
  a.max = (1U << c.bits) - 1U;
  a.order = c.order;
  a.vector = ((reinterpret_cast<std::uintptr_t>(in) | pitch) % 16) == 0;
  a.histogram = ws.histogram();
  a.done = ws.done_counter();
  a.multipliers = ws.multipliers();
  kernels::launch("raw_isp_statistics_kernel", statistics_kernel, dim3(ws.statistics_blocks()),
                  dim3(stats_threads), 0, s, programmatic, a);
}

void launch_raw_isp_correct(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                            const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  const raw_isp_config& c = ws.config();
  const std::uint64_t groups = std::uint64_t{(c.width + group - 1) / group} * c.height;
  const auto blocks = static_cast<unsigned>(
      std::min<std::uint64_t>((groups + correct_threads - 1) / correct_threads, 65535));
  const bool vector =
      ((reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out) | pitch) %
       16) == 0;
  kernels::launch("raw_isp_correct_kernel", correct_kernel, dim3(blocks), dim3(correct_threads), 0,
                  s, programmatic, in, out, pitch, c.width, c.height, c.order, c.black_level,
                  (1U << c.bits) - 1U, static_cast<const std::uint64_t*>(ws.multipliers()), vector);
}

void launch_raw_isp(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                    const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  if (ws.config().grey_world) launch_raw_isp_statistics(in, pitch, ws, s, programmatic);
  launch_raw_isp_correct(in, out, pitch, ws, s, programmatic);
}

}  // namespace detail

void raw_isp::setup(OperatorSpec& spec) {
  _config.width = params::side(spec, "width", 1920, true, "image width in pixels");
  _config.height = params::side(spec, "height", 1080, true, "image height in pixels");
  _config.order = params::order(spec);
  _config.bits = params::bits(spec);
  const auto black = spec.param<std::int64_t>("black_level", 256, "sensor black level");
  const std::int64_t max = (std::int64_t{1} << _config.bits) - 1;
  if (black < 0 || black >= max) {
    params::fail(spec, "black_level",
                 "must be in [0, " + std::to_string(max) + ") for " + std::to_string(_config.bits) +
                     "-bit samples, got " + std::to_string(black));
  }
  _config.black_level = static_cast<std::uint32_t>(black);
  _config.grey_world = params::choice(spec, "white_balance", "grey_world", {"grey_world", "none"},
                                      "white balance: grey-world gains, or none") == 0;
  const image_desc image = bayer_image(_config.width, _config.height, _config.order);
  spec.image_input("in", image);
  spec.image_output("out", image);
  spec.in_place("out", "in");  // the corrected frame replaces the raw one: no second buffer
}

void raw_isp::initialize() { _workspace = std::make_unique<raw_isp_workspace>(_config); }

void raw_isp::compute(CaptureContext& ctx) {
  detail::launch_raw_isp(ctx.device_memory<const std::uint16_t>("in"),
                         ctx.device_memory<std::uint16_t>("out"),
                         bayer_image(_config.width, _config.height, _config.order).pitch(),
                         *_workspace, ctx.stream(), ctx.programmatic_launch());
}

}  // namespace resident::ops::imaging
