#include "resident/ops/imaging/csi2_reconstruct.hpp"

#include <cuda/atomic>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "csi2_forms.cuh"
#include "launch.cuh"
#include "params.hpp"
#include "resident/cuda/block_sync.cuh"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/csi2_math.hpp"

namespace resident::ops::imaging {

using detail::reconstruct_args;

namespace {

using namespace detail::csi2_form;  // NOLINT: the line body (csi2_forms.cuh) and `math`

constexpr int threads = 128;

struct crc_table {
  std::uint16_t entry[256];
};
constexpr crc_table make_crc_table() {
  crc_table t{};
  for (unsigned i = 0; i < 256; ++i) {
    t.entry[i] = math::crc16_update(0, static_cast<std::uint8_t>(i));
  }
  return t;
}
// Copied to shared memory by each block: lookups by data byte diverge, which constant memory
// would serialize.
__device__ const crc_table byte_table = make_crc_table();

__global__ void __launch_bounds__(threads) reconstruct_kernel(reconstruct_args a) {
  kernels::begin_dependent_kernel();
  extern __shared__ uint4 staged_words[];
  auto* staged = reinterpret_cast<std::uint8_t*>(staged_words);
  __shared__ std::uint16_t table[256];
  __shared__ std::uint16_t warp_terms[threads / 32];
  __shared__ std::uint8_t verdict;
  __shared__ bool last;
  const std::uint32_t y = blockIdx.x;
  const bool stream_ok = a.frame->bytes == a.stream_bytes;
  if (stream_ok) {
    for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) table[i] = byte_table.entry[i];
    reconstruct_line(a, y, staged, table, warp_terms, verdict);
  }
  if (threadIdx.x == 0) {
    a.verdicts[y] = stream_ok ? verdict : std::uint8_t{0};
    __threadfence();  // this block's verdict and packet reads before its count
    last = atomicAdd(a.done, 1U) == gridDim.x - 1;
    if (last) __threadfence();
  }
  resident::device::sync_block();
  if (last) finish_frame(a, stream_ok);
}

}  // namespace

csi2_workspace::csi2_workspace(io::csi2::raw_format format, std::uint32_t width,
                               std::uint32_t height)
    : _format(format), _width(width), _height(height) {
  const std::size_t line = io::csi2::line_bytes(format, width);  // throws for a bad width
  if (line > 0xFFFF || height == 0) {
    throw std::invalid_argument("csi2_workspace: a " + std::to_string(width) + "x" +
                                std::to_string(height) + " frame's line of " +
                                std::to_string(line) + " bytes does not fit a CSI-2 line packet");
  }
  _line_bytes = static_cast<std::uint32_t>(line);
  _chunks = (width + detail::csi2_chunk_pixels - 1) / detail::csi2_chunk_pixels;
  _seed_term = math::crc16_shift(io::csi2::crc16_seed, _line_bytes);
  const auto bits = static_cast<unsigned>(format);
  const std::uint32_t full =
      detail::csi2_chunk_pixels / math::group_pixels(bits) * math::group_bytes(bits);
  std::vector<std::uint16_t> factors(_chunks);
  for (std::uint32_t j = 0; j < _chunks; ++j) {
    const std::uint32_t end = std::min((j + 1) * full, _line_bytes);
    factors[j] = math::crc16_zero_bytes_factor(_line_bytes - end);
  }
  _factors = device_buffer(factors.size() * sizeof(std::uint16_t));
  RESIDENT_CUDA_TRY(
      cudaMemcpy(_factors.data(), factors.data(), _factors.size(), cudaMemcpyHostToDevice));
  _verdicts = device_buffer(height);
  _done = device_buffer(sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(_done.data(), 0, sizeof(std::uint32_t)));
  const std::size_t shared = detail::staged_line_bytes(_line_bytes);
  if (shared > 48 * 1024) {
    RESIDENT_CUDA_TRY(cudaFuncSetAttribute(
        reconstruct_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  }
}

namespace detail {

reconstruct_args make_reconstruct_args(const io::frame_ref* frame, std::uint16_t* bayer,
                                       std::size_t pitch, io::frame_integrity* integrity,
                                       const csi2_workspace& ws) {
  reconstruct_args a{};
  a.frame = frame;
  a.bayer = bayer;
  a.pitch = pitch;
  a.integrity = integrity;
  a.factors = ws.chunk_factors();
  a.verdicts = ws.line_verdicts();
  a.done = ws.done_counter();
  a.stream_bytes = io::csi2::frame_packet_bytes(ws.format(), ws.width(), ws.height());
  a.width = ws.width();
  a.height = ws.height();
  a.line_bytes = ws.line_bytes();
  a.chunks = ws.chunks();
  a.seed_term = ws.seed_term();
  a.bits = static_cast<std::uint8_t>(ws.format());
  a.data_type = static_cast<std::uint8_t>(io::csi2::data_type_of(ws.format()));
  return a;
}

void launch_csi2_reconstruct(const io::frame_ref* frame, std::uint16_t* bayer, std::size_t pitch,
                             io::frame_integrity* integrity, const csi2_workspace& ws,
                             cudaStream_t s, bool programmatic) {
  kernels::launch("csi2_reconstruct_kernel", reconstruct_kernel, dim3(ws.height()), dim3(threads),
                  detail::staged_line_bytes(ws.line_bytes()), s, programmatic,
                  make_reconstruct_args(frame, bayer, pitch, integrity, ws));
}

}  // namespace detail

void csi2_reconstruct::setup(OperatorSpec& spec) {
  _width = params::side(spec, "width", 1920, true, "frame width in pixels");
  _height = params::side(spec, "height", 1080, true, "frame height in lines");
  _format = params::named(spec, "format", io::csi2::raw_format::raw12, io::csi2::all_raw_formats,
                          "CSI-2 pixel packing");
  _order = params::order(spec);
  std::size_t line = 0;
  try {
    line = io::csi2::line_bytes(_format, _width);
  } catch (const std::invalid_argument& e) {
    params::fail(spec, "width", std::string("does not suit the format: ") + e.what());
  }
  if (line > 0xFFFF) {
    params::fail(spec, "width", "makes a line longer than a CSI-2 packet's 65535 bytes");
  }
  spec.device_input("frame", sizeof(io::frame_ref));
  spec.image_output("bayer", bayer_image(_width, _height, _order));
  spec.device_output("integrity", sizeof(io::frame_integrity));
}

void csi2_reconstruct::initialize() {
  _workspace = std::make_unique<csi2_workspace>(_format, _width, _height);
}

void csi2_reconstruct::compute(CaptureContext& ctx) {
  detail::launch_csi2_reconstruct(ctx.device_memory<const io::frame_ref>("frame"),
                                  ctx.device_memory<std::uint16_t>("bayer"),
                                  bayer_image(_width, _height, _order).pitch(),
                                  ctx.device_memory<io::frame_integrity>("integrity"), *_workspace,
                                  ctx.stream(), ctx.programmatic_launch());
}

}  // namespace resident::ops::imaging
