#include "resident/ops/imaging/raw_isp.hpp"

#include <cub/device/device_histogram.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <array>
#include <string>

#include "launch.cuh"
#include "params.hpp"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::ops::imaging {

namespace {

namespace math = isp_math;

/// Sample index -> histogram bin (channel * 256 + 8-bit level): what CUB's histogram counts.
struct pixel_bin {
  const std::uint8_t* image;
  std::size_t pitch;
  std::uint32_t width;
  std::uint32_t black;
  std::uint32_t max;
  io::bayer_order order;
  __host__ __device__ int operator()(std::uint32_t i) const {
    const std::uint32_t y = i / width;
    const std::uint32_t x = i - y * width;
    const std::uint16_t v = reinterpret_cast<const std::uint16_t*>(image + y * pitch)[x];
    return io::bayer_channel(order, x, y) * static_cast<int>(math::bins_per_channel) +
           static_cast<int>(math::bin_of(v, black, max));
  }
};
using bin_iterator =
    thrust::transform_iterator<pixel_bin, thrust::counting_iterator<std::uint32_t>, int>;

bin_iterator bins_of(const std::uint16_t* in, std::size_t pitch, const raw_isp_config& c) {
  const pixel_bin f{reinterpret_cast<const std::uint8_t*>(in), pitch, c.width, c.black_level,
                    (1U << c.bits) - 1U, c.order};
  return bin_iterator(thrust::counting_iterator<std::uint32_t>(0), f);
}

constexpr int histogram_levels = static_cast<int>(math::histogram_bins) + 1;

constexpr int gains_threads = static_cast<int>(math::bins_per_channel);  // a bin per thread

/// One block: each channel's count and sum of levels, then its grey-world multiplier.
__global__ void __launch_bounds__(gains_threads)
    gains_kernel(const int* histogram, std::uint64_t* multipliers, std::uint32_t black,
                 std::uint32_t max) {
  kernels::begin_dependent_kernel();
  __shared__ unsigned long long partial[gains_threads / 32][6];
  unsigned long long v[6];  // count and sum of levels, per channel
  for (int c = 0; c < 3; ++c) {
    const auto n = static_cast<unsigned long long>(histogram[c * gains_threads + threadIdx.x]);
    v[2 * c] = n;
    v[2 * c + 1] = n * threadIdx.x;
  }
  for (int i = 0; i < 6; ++i) {
    for (int offset = 16; offset > 0; offset /= 2) v[i] += __shfl_down_sync(0xFFFFFFFFU, v[i], offset);
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
                          reinterpret_cast<const std::uint8_t*>(in) + y * pitch) + x0;
    auto* dst = reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(out) + y * pitch) +
                x0;
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
      _histogram(math::histogram_bins * sizeof(int)),
      _multipliers(3 * sizeof(std::uint64_t)) {
  const std::uint32_t max = (1U << config.bits) - 1U;
  const std::uint64_t unit = math::multiplier_q16(1.0, config.black_level, max);
  const std::array<std::uint64_t, 3> none{unit, unit, unit};
  // Without white balance these stay; with it the gains kernel overwrites them every frame.
  RESIDENT_CUDA_TRY(cudaMemcpy(_multipliers.data(), none.data(), sizeof(none),
                               cudaMemcpyHostToDevice));
  if (!config.grey_world) return;
  const bin_iterator samples = bins_of(nullptr, 2 * std::size_t{config.width}, config);
  RESIDENT_CUDA_TRY(cub::DeviceHistogram::HistogramEven(
      nullptr, _cub_bytes, samples, histogram(), histogram_levels, 0, histogram_levels - 1,
      static_cast<std::int64_t>(config.width) * config.height, cudaStream_t{}));
  _cub_storage = device_buffer(_cub_bytes);
}

namespace detail {

void launch_raw_isp_histogram(const std::uint16_t* in, std::size_t pitch,
                              const raw_isp_workspace& ws, cudaStream_t s) {
  const raw_isp_config& c = ws.config();
  std::size_t bytes = ws.cub_storage_bytes();
  RESIDENT_CUDA_TRY(cub::DeviceHistogram::HistogramEven(
      ws.cub_storage(), bytes, bins_of(in, pitch, c), ws.histogram(), histogram_levels, 0,
      histogram_levels - 1, static_cast<std::int64_t>(c.width) * c.height, s));
}

void launch_raw_isp_gains(const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  const raw_isp_config& c = ws.config();
  kernels::launch("raw_isp_gains_kernel", gains_kernel, dim3(1), dim3(gains_threads), 0, s,
                  programmatic, static_cast<const int*>(ws.histogram()), ws.multipliers(),
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
                  (1U << c.bits) - 1U, static_cast<const std::uint64_t*>(ws.multipliers()),
                  vector);
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
                 "must be in [0, " + std::to_string(max) + ") for " +
                     std::to_string(_config.bits) + "-bit samples, got " + std::to_string(black));
  }
  _config.black_level = static_cast<std::uint32_t>(black);
  _config.grey_world = params::choice(spec, "white_balance", "grey_world", {"grey_world", "none"},
                                      "white balance: grey-world gains, or none") == 0;
  const image_desc image = bayer_image(_config.width, _config.height, _config.order);
  spec.image_input("in", image);
  spec.image_output("out", image);
}

void raw_isp::initialize() { _workspace = std::make_unique<raw_isp_workspace>(_config); }

void raw_isp::compute(CaptureContext& ctx) {
  detail::launch_raw_isp(ctx.device_memory<const std::uint16_t>("in"),
                         ctx.device_memory<std::uint16_t>("out"),
                         bayer_image(_config.width, _config.height, _config.order).pitch(),
                         *_workspace, ctx.stream(), ctx.programmatic_launch());
}

}  // namespace resident::ops::imaging
