#include "resident/ops/imaging/raw_isp.hpp"

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_histogram.cuh>

#include <array>
#include <string>

#include "launch.cuh"
#include "params.hpp"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::ops::imaging {

namespace {

namespace math = isp_math;

/// The histogram's samples: the frame as 2x2 Bayer cells of four samples each (top-left,
/// top-right, bottom-left, bottom-right), every sample its 8-bit level after black-level
/// correction. Counted as four 256-bin histograms (CUB's multi-channel histogram), one per cell
/// position, which CUB privatizes in shared memory (it does so up to 256 bins a histogram; one
/// 768-bin histogram would take global atomics). The gains kernel adds the two green positions.
struct cell_sample_level {
  const std::uint8_t* image;
  std::size_t pitch;
  std::uint32_t cells_per_row;
  std::uint32_t black;
  std::uint32_t max;
  __host__ __device__ int operator()(std::uint32_t i) const {
    const std::uint32_t cell = i / 4;
    const std::uint32_t k = i % 4;
    const std::uint32_t y = cell / cells_per_row * 2 + k / 2;
    const std::uint32_t x = cell % cells_per_row * 2 + k % 2;
    const std::uint16_t v = reinterpret_cast<const std::uint16_t*>(image + y * pitch)[x];
    return static_cast<int>(math::bin_of(v, black, max));
  }
};
using sample_iterator =
    thrust::transform_iterator<cell_sample_level, thrust::counting_iterator<std::uint32_t>, int>;

sample_iterator samples_of(const std::uint16_t* in, std::size_t pitch, const raw_isp_config& c) {
  const cell_sample_level f{reinterpret_cast<const std::uint8_t*>(in), pitch, c.width / 2,
                            c.black_level, (1U << c.bits) - 1U};
  return sample_iterator(thrust::counting_iterator<std::uint32_t>(0), f);
}

constexpr int positions = 4;  // samples of a Bayer cell
constexpr int levels = static_cast<int>(math::bins_per_channel);

/// Enqueues CUB's histogram (or, with no storage, asks for its temporary storage size).
cudaError_t cell_histogram(void* storage, std::size_t& bytes, const std::uint16_t* in,
                           std::size_t pitch, const raw_isp_config& c, int* histogram,
                           cudaStream_t s) {
  const ::cuda::std::array<int*, positions> out{histogram, histogram + levels,
                                                histogram + 2 * levels, histogram + 3 * levels};
  const ::cuda::std::array<int, positions> num_levels{levels + 1, levels + 1, levels + 1,
                                                      levels + 1};
  const ::cuda::std::array<int, positions> lower{0, 0, 0, 0};
  const ::cuda::std::array<int, positions> upper{levels, levels, levels, levels};
  const auto cells = static_cast<std::int64_t>(c.width / 2) * (c.height / 2);
  return cub::DeviceHistogram::MultiHistogramEven<positions, positions>(
      storage, bytes, samples_of(in, pitch, c), out, num_levels, lower, upper, cells, s);
}

constexpr int gains_threads = static_cast<int>(math::bins_per_channel);  // a bin per thread

/// One block: each channel's count and sum of levels (the two green cell positions added),
/// then its grey-world multiplier.
__global__ void __launch_bounds__(gains_threads)
    gains_kernel(const int* histogram, std::uint64_t* multipliers, io::bayer_order order,
                 std::uint32_t black, std::uint32_t max) {
  kernels::begin_dependent_kernel();
  __shared__ unsigned long long partial[gains_threads / 32][6];
  unsigned long long v[6] = {0, 0, 0, 0, 0, 0};  // count and sum of levels, per channel
  for (int k = 0; k < positions; ++k) {
    const int c = io::bayer_channel(order, k % 2, k / 2);
    const auto n = static_cast<unsigned long long>(histogram[k * levels + threadIdx.x]);
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
  for (int w = 0; w < gains_threads / 32; ++w) {
    for (int i = 0; i < 6; ++i) total[i] += partial[w][i];
  }
  for (int c = 0; c < 3; ++c) {
    const double gain = math::grey_world_gain(total[2 * c + 1], total[2 * c], total[3], total[2]);
    multipliers[c] = math::multiplier_q16(gain, black, max);
  }
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
      _multipliers(3 * sizeof(std::uint64_t)) {
  const std::uint32_t max = (1U << config.bits) - 1U;
  const std::uint64_t unit = math::multiplier_q16(1.0, config.black_level, max);
  const std::array<std::uint64_t, 3> none{unit, unit, unit};
  // Without white balance these stay; with it the gains kernel overwrites them every frame.
  RESIDENT_CUDA_TRY(
      cudaMemcpy(_multipliers.data(), none.data(), sizeof(none), cudaMemcpyHostToDevice));
  if (!config.grey_world) return;
  RESIDENT_CUDA_TRY(cell_histogram(nullptr, _cub_bytes, nullptr, 2 * std::size_t{config.width},
                                   config, histogram(), cudaStream_t{}));
  _cub_storage = device_buffer(_cub_bytes);
}

namespace detail {

void launch_raw_isp_histogram(const std::uint16_t* in, std::size_t pitch,
                              const raw_isp_workspace& ws, cudaStream_t s) {
  std::size_t bytes = ws.cub_storage_bytes();
  RESIDENT_CUDA_TRY(
      cell_histogram(ws.cub_storage(), bytes, in, pitch, ws.config(), ws.histogram(), s));
}

void launch_raw_isp_gains(const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  const raw_isp_config& c = ws.config();
  kernels::launch("raw_isp_gains_kernel", gains_kernel, dim3(1), dim3(gains_threads), 0, s,
                  programmatic, static_cast<const int*>(ws.histogram()), ws.multipliers(), c.order,
                  c.black_level, (1U << c.bits) - 1U);
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
  if (ws.config().grey_world) {
    // CUB's kernels take plain launches (they do not wait on the device for their inputs).
    launch_raw_isp_histogram(in, pitch, ws, s);
    launch_raw_isp_gains(ws, s, programmatic);
  }
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
