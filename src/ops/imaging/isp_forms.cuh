#pragma once
// raw_isp's device code for any block size (a multiple of 32, at least the 256 levels' worth of
// threads for the gains step, at most max_threads): the statistics pass (CUB's block histogram,
// added into the frame's global one), the grey-world gains, the correction. The kernels run it,
// and so does the persistent mode's device form (a grid barrier between the steps instead of the
// last-block count). Include only from .cu files.

#include <cub/block/block_histogram.cuh>

#include "ops/imaging/forms.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::ops::imaging::detail::isp_form {

namespace math = isp_math;

constexpr int positions = 4;  // samples of a Bayer cell
constexpr int levels = static_cast<int>(math::bins_per_channel);
constexpr int stats_items = 8;  // pixels per thread and step: one 16-byte vector
constexpr int counted_bins = positions * levels;
constexpr int max_threads = 512;
constexpr std::uint32_t group = 8;  // correction: pixels per thread, one 16-byte vector

// The histogram in shared memory: position in the 2x2 cell * 256 + level, and one bin more
// for the lanes past the image's end (CUB's block histogram counts every item it is given).
// Atomic adds into shared memory: on an H200 at 1080p the whole ISP took 18.9 us (p50) so,
// 34.0 us with CUB's sorting variant and 20.1 us with warp-aggregated adds (__match_any_sync).
template <int Threads>
using block_histogram = cub::BlockHistogram<std::uint16_t, Threads, stats_items, counted_bins + 1,
                                            cub::BLOCK_HISTO_ATOMIC>;

/// This thread's 8 pixels of group `g` (row y, columns x0..x0+7) as histogram bins.
__device__ inline void bins_of_group(const stats_args& a, std::uint64_t g, std::uint32_t groups,
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

/// The block's share of the frame's histogram (groups of 8 pixels, the grid's blocks in turn),
/// counted in shared memory (`counts`: counted_bins + 1 words) and added into the global one.
/// Every thread of a Threads-thread block calls it.
template <int Threads>
__device__ void histogram_pass(const stats_args& a, unsigned* counts,
                               typename block_histogram<Threads>::TempStorage& storage) {
  block_histogram<Threads> histogram(storage);
  histogram.InitHistogram(counts);
  resident::device::sync_block();
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
  resident::device::sync_block();
  for (int i = threadIdx.x; i < counted_bins; i += blockDim.x) {
    if (counts[i] != 0) atomicAdd(a.histogram + i, static_cast<int>(counts[i]));
  }
}

/// Each channel's count and sum of levels (the two green cell positions added), then its
/// grey-world multiplier; one bin per thread (threads past the 256 levels add nothing). The
/// histogram is read past L1 (other blocks wrote it) and left zero for the next frame.
__device__ inline void write_gains(const stats_args& a) {
  __shared__ unsigned long long partial[max_threads / 32][6];
  unsigned long long v[6] = {0, 0, 0, 0, 0, 0};  // count and sum of levels, per channel
  const int bin = static_cast<int>(threadIdx.x);
  if (bin < levels) {
    for (int k = 0; k < positions; ++k) {
      const int c = io::bayer_channel(a.order, k % 2, k / 2);
      const auto n = static_cast<unsigned long long>(__ldcg(a.histogram + k * levels + bin));
      a.histogram[k * levels + bin] = 0;
      v[2 * c] += n;
      v[2 * c + 1] += n * static_cast<unsigned>(bin);
    }
  }
  for (int i = 0; i < 6; ++i) {
    for (int offset = 16; offset > 0; offset /= 2)
      v[i] += __shfl_down_sync(0xFFFFFFFFU, v[i], offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32][i] = v[i];
  }
  resident::device::sync_block();
  if (threadIdx.x != 0) return;
  unsigned long long total[6] = {0, 0, 0, 0, 0, 0};
  for (unsigned w = 0; w < blockDim.x / 32; ++w) {
    for (int i = 0; i < 6; ++i) total[i] += partial[w][i];
  }
  for (int c = 0; c < 3; ++c) {
    const double gain = math::grey_world_gain(total[2 * c + 1], total[2 * c], total[3], total[2]);
    a.multipliers[c] = math::multiplier_q16(gain, a.black, a.max);
  }
  *a.done = 0;  // ready for the next launch (kernel boundaries order it)
}

/// out = correct(in) with the channel's multiplier, groups of 8 pixels from `first` by
/// `stride`. Each thread reads its 8 pixels before it writes them, so `out` may be `in` (no
/// __restrict__ here on purpose).
__device__ inline void correct_range(const correct_args& a, std::uint64_t first,
                                     std::uint64_t stride) {
  const std::uint32_t groups = (a.width + group - 1) / group;
  const std::uint64_t total = std::uint64_t{groups} * a.height;
  const std::uint64_t m[3] = {a.multipliers[0], a.multipliers[1], a.multipliers[2]};
  for (std::uint64_t g = first; g < total; g += stride) {
    const auto y = static_cast<std::uint32_t>(g / groups);
    const auto x0 = static_cast<std::uint32_t>(g % groups) * group;
    // Channels of even and odd columns on this row (x0 is even).
    const std::uint64_t even = m[io::bayer_channel(a.order, 0, y)];
    const std::uint64_t odd = m[io::bayer_channel(a.order, 1, y)];
    const auto* src = reinterpret_cast<const std::uint16_t*>(
                          reinterpret_cast<const std::uint8_t*>(a.in) + y * a.pitch) +
                      x0;
    auto* dst =
        reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(a.out) + y * a.pitch) + x0;
    if (a.vector && x0 + group <= a.width) {
      uint4 v = *reinterpret_cast<const uint4*>(src);
      unsigned* w = &v.x;
      for (int i = 0; i < 4; ++i) {
        const unsigned lo = math::correct(w[i] & 0xFFFFU, a.black, even, a.max);
        const unsigned hi = math::correct(w[i] >> 16, a.black, odd, a.max);
        w[i] = lo | hi << 16;
      }
      *reinterpret_cast<uint4*>(dst) = v;
    } else {
      for (std::uint32_t x = x0; x < a.width && x < x0 + group; ++x) {
        dst[x - x0] = math::correct(src[x - x0], a.black, (x & 1U) != 0U ? odd : even, a.max);
      }
    }
  }
}

static_assert((counted_bins + 1) * sizeof(unsigned) + 16 +
                      sizeof(typename block_histogram<max_threads>::TempStorage) <=
                  isp_form_shared_bytes(),
              "forms.hpp's size of the form's shared memory holds its layout");

/// The persistent mode's form (blocks of max_threads threads, isp_form_shared_bytes of
/// scratch); a grid barrier between phases.
__device__ inline void run(const isp_args& a, unsigned phase, std::byte* scratch) {
  if (!a.grey_world) phase = 2;
  if (phase == 0) {
    auto* counts = reinterpret_cast<unsigned*>(scratch);
    auto* storage = reinterpret_cast<typename block_histogram<max_threads>::TempStorage*>(
        scratch + (counted_bins + 1) * sizeof(unsigned) + 16);
    histogram_pass<max_threads>(a.stats, counts, *storage);
    resident::device::sync_block();  // the counts are read before the scratch is used again
  } else if (phase == 1) {
    if (blockIdx.x == 0) write_gains(a.stats);
  } else {
    correct_range(a.correct, std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x,
                  std::uint64_t{gridDim.x} * blockDim.x);
  }
}

}  // namespace resident::ops::imaging::detail::isp_form
