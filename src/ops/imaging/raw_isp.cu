#include "resident/ops/imaging/raw_isp.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "isp_forms.cuh"
#include "launch.cuh"
#include "params.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/device.hpp"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::ops::imaging {

namespace {

using namespace detail::isp_form;  // NOLINT: the device code (isp_forms.cuh)
using detail::correct_args;
using detail::stats_args;

constexpr int stats_threads = levels;  // the gains step takes a bin per thread
constexpr int correct_threads = 256;

/// The frame's histogram (CUB's block histogram in shared memory per block, added into the
/// global one), and in the last block to finish, the gains from it: one kernel, one pass.
__global__ void __launch_bounds__(stats_threads) statistics_kernel(stats_args a) {
  kernels::begin_dependent_kernel();
  __shared__ typename block_histogram<stats_threads>::TempStorage storage;
  __shared__ unsigned counts[counted_bins + 1];
  __shared__ bool last;
  histogram_pass<stats_threads>(a, counts, storage);
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    __threadfence();  // the block's additions (ordered by the barrier) before its count
    last = atomicAdd(a.done, 1U) == gridDim.x - 1;
    if (last) __threadfence();
  }
  resident::device::sync_block();
  if (last) write_gains(a);
}

__global__ void __launch_bounds__(correct_threads) correct_kernel(correct_args a) {
  kernels::begin_dependent_kernel();
  correct_range(a, blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x,
                std::uint64_t{gridDim.x} * blockDim.x);
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

isp_args make_isp_args(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                       const raw_isp_workspace& ws) {
  const raw_isp_config& c = ws.config();
  isp_args a{};
  stats_args& st = a.stats;
  st.in = in;
  st.pitch = pitch;
  st.width = c.width;
  st.height = c.height;
  st.black = c.black_level;
  st.max = (1U << c.bits) - 1U;
  st.order = c.order;
  st.vector = ((reinterpret_cast<std::uintptr_t>(in) | pitch) % 16) == 0;
  st.histogram = ws.histogram();
  st.done = ws.done_counter();
  st.multipliers = ws.multipliers();
  correct_args& co = a.correct;
  co.in = in;
  co.out = out;
  co.pitch = pitch;
  co.width = c.width;
  co.height = c.height;
  co.order = c.order;
  co.black = c.black_level;
  co.max = st.max;
  co.multipliers = ws.multipliers();
  co.vector =
      ((reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out) | pitch) %
       16) == 0;
  a.grey_world = c.grey_world;
  return a;
}

void launch_raw_isp_statistics(const std::uint16_t* in, std::size_t pitch,
                               const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  kernels::launch("raw_isp_statistics_kernel", statistics_kernel, dim3(ws.statistics_blocks()),
                  dim3(stats_threads), 0, s, programmatic,
                  make_isp_args(in, nullptr, pitch, ws).stats);
}

void launch_raw_isp_correct(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                            const raw_isp_workspace& ws, cudaStream_t s, bool programmatic) {
  const raw_isp_config& c = ws.config();
  const std::uint64_t groups = std::uint64_t{(c.width + group - 1) / group} * c.height;
  const auto blocks = static_cast<unsigned>(
      std::min<std::uint64_t>((groups + correct_threads - 1) / correct_threads, 65535));
  kernels::launch("raw_isp_correct_kernel", correct_kernel, dim3(blocks), dim3(correct_threads), 0,
                  s, programmatic, make_isp_args(in, out, pitch, ws).correct);
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
