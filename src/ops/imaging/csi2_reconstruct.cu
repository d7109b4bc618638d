#include "resident/ops/imaging/csi2_reconstruct.hpp"

#include <cuda/atomic>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "launch.cuh"
#include "params.hpp"
#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/csi2_math.hpp"

namespace resident::ops::imaging {

namespace {

namespace math = csi2_math;

constexpr int threads = 128;
constexpr std::uint32_t packet_overhead = 6;  // a long packet's header (4) and footer CRC (2)

using math::verdict_line;

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

struct reconstruct_args {
  const io::frame_ref* frame;
  std::uint16_t* bayer;
  std::size_t pitch;
  io::frame_integrity* integrity;
  const std::uint16_t* factors;
  std::uint8_t* verdicts;
  std::uint32_t* done;
  std::uint64_t stream_bytes;  // frame_packet_bytes(format, width, height)
  std::uint32_t width;
  std::uint32_t height;
  std::uint32_t line_bytes;
  std::uint32_t chunks;
  std::uint16_t seed_term;
  std::uint8_t bits;
  std::uint8_t data_type;
};

__device__ std::uint32_t chunk_bytes(const reconstruct_args& a, std::uint32_t j) {
  const std::uint32_t pixels =
      min(detail::csi2_chunk_pixels, a.width - j * detail::csi2_chunk_pixels);
  return pixels / math::group_pixels(a.bits) * math::group_bytes(a.bits);
}

/// Copies packet bytes [0, n) to staged[head, head + n), head = the packet's offset in its
/// 16-byte word: whole aligned words in one load each, the ragged ends byte by byte, and not a
/// byte outside the packet read.
__device__ std::uint32_t stage_packet(const std::uint8_t* packet, std::uint32_t n,
                                      std::uint8_t* staged) {
  const auto address = reinterpret_cast<std::uintptr_t>(packet);
  const auto head = static_cast<std::uint32_t>(address & 15U);
  const std::uint32_t end = head + n;
  const std::uint32_t first_word = head == 0 ? 0 : 1;
  const std::uint32_t end_word = end / 16;  // words [first_word, end_word) lie inside
  const auto* src = reinterpret_cast<const uint4*>(address - head);
  auto* dst = reinterpret_cast<uint4*>(staged);
  for (std::uint32_t w = first_word + threadIdx.x; w < end_word; w += blockDim.x) dst[w] = src[w];
  const std::uint32_t head_end = min(first_word * 16, end);
  for (std::uint32_t p = head + threadIdx.x; p < head_end; p += blockDim.x) {
    staged[p] = packet[p - head];
  }
  for (std::uint32_t p = max(max(end_word, first_word) * 16, head) + threadIdx.x; p < end;
       p += blockDim.x) {
    staged[p] = packet[p - head];
  }
  return head;
}

/// XOR of every chunk's CRC term for this thread's chunks (zero seed; see csi2_math.hpp).
__device__ std::uint16_t chunk_crc_terms(const reconstruct_args& a, const std::uint8_t* payload,
                                         const std::uint16_t* table) {
  std::uint16_t terms = 0;
  const std::uint32_t full_bytes = chunk_bytes(a, 0);
  for (std::uint32_t j = threadIdx.x; j < a.chunks; j += blockDim.x) {
    const std::uint8_t* b = payload + j * full_bytes;
    const std::uint32_t n = chunk_bytes(a, j);
    std::uint16_t crc = 0;
    for (std::uint32_t k = 0; k < n; ++k) {
      crc = static_cast<std::uint16_t>((crc >> 8) ^ table[(crc ^ b[k]) & 0xFFU]);
    }
    terms ^= math::crc16_multiply(crc, a.factors[j]);
  }
  return terms;
}

__device__ void unpack_line(const reconstruct_args& a, const std::uint8_t* payload,
                            std::uint32_t y) {
  auto* row = reinterpret_cast<std::uint16_t*>(reinterpret_cast<std::uint8_t*>(a.bayer) +
                                               std::size_t{y} * a.pitch);
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(a.bayer) | a.pitch) & 15U) == 0;
  const std::uint32_t full_bytes = chunk_bytes(a, 0);
  const unsigned gp = math::group_pixels(a.bits);
  const unsigned gb = math::group_bytes(a.bits);
  for (std::uint32_t j = threadIdx.x; j < a.chunks; j += blockDim.x) {
    const std::uint8_t* b = payload + j * full_bytes;
    const std::uint32_t x0 = j * detail::csi2_chunk_pixels;
    const std::uint32_t n = min(detail::csi2_chunk_pixels, a.width - x0);
    std::uint16_t px[detail::csi2_chunk_pixels];
#pragma unroll
    for (std::uint32_t k = 0; k < detail::csi2_chunk_pixels; ++k) {
      px[k] = k < n ? math::unpack_pixel(a.bits, b + k / gp * gb, k % gp) : std::uint16_t{0};
    }
    if (aligned && n == detail::csi2_chunk_pixels) {
      // 8 pixels, 16 bytes: one vector store.
      uint4 v;
      v.x = px[0] | static_cast<unsigned>(px[1]) << 16;
      v.y = px[2] | static_cast<unsigned>(px[3]) << 16;
      v.z = px[4] | static_cast<unsigned>(px[5]) << 16;
      v.w = px[6] | static_cast<unsigned>(px[7]) << 16;
      *reinterpret_cast<uint4*>(row + x0) = v;
    } else {
      for (std::uint32_t k = 0; k < n; ++k) row[x0 + k] = px[k];
    }
  }
}

/// Frame start and end packets (4 bytes each, at the stream's two ends).
__device__ void check_frame_ends_of(const reconstruct_args& a, const io::frame_ref* ref,
                                    math::frame_counts& total) {
  const std::uint8_t* fs = ref->packets;
  const std::uint8_t* fe = ref->packets + a.stream_bytes - 4;
  const std::uint8_t start[4] = {fs[0], fs[1], fs[2], fs[3]};
  const std::uint8_t end[4] = {fe[0], fe[1], fe[2], fe[3]};
  math::check_frame_ends(start, end, io::csi2_frame_number(ref->frame), total);
}

/// The last block: the lines' verdicts, frame start and end, the slot re-read, the integrity
/// record. Thread 0 writes the record; the other threads help count.
__device__ void finish_frame(const reconstruct_args& a, bool stream_ok) {
  __shared__ unsigned counts[5];  // lines, corrected, corrupt, crc, format
  if (threadIdx.x < 5) counts[threadIdx.x] = 0;
  __syncthreads();
  math::frame_counts mine;
  for (std::uint32_t y = threadIdx.x; stream_ok && y < a.height; y += blockDim.x) {
    // Written by other blocks before their fenced increment of `done`: read past L1.
    mine.add(__ldcg(a.verdicts + y));
  }
  const unsigned values[5] = {mine.lines, mine.corrected_headers, mine.corrupt_headers,
                              mine.crc_errors, mine.format_errors};
  for (int i = 0; i < 5; ++i) {
    if (values[i] != 0) atomicAdd(&counts[i], values[i]);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const io::frame_ref* ref = a.frame;
  math::frame_counts total{counts[0], counts[1], counts[2], counts[3], counts[4]};
  if (stream_ok) {
    check_frame_ends_of(a, ref, total);
  } else {
    total.format_errors = 1;  // a stream of the wrong length is not read at all
  }
  io::frame_integrity out{};
  out.frame = ref->frame;
  out.bridge_status = ref->status;
  out.expected_lines = a.height;
  out.lines = total.lines;
  out.corrected_headers = total.corrected_headers;
  out.corrupt_headers = total.corrupt_headers;
  out.crc_errors = total.crc_errors;
  out.format_errors = total.format_errors;
  if (ref->slot_frame != nullptr) {
    // Every packet read of every block happened before this point (each block's reads are
    // ordered before its fenced increment of `done`, which this block observed): a slot
    // counter that changed since means the bridge rewrote the slot while it was being read.
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
    out.overwritten = ::resident::device::load_acquire_system(*ref->slot_frame) != out.frame;
  }
  *a.integrity = out;
  *a.done = 0;  // ready for the next launch (kernel boundaries order it)
}

__global__ void __launch_bounds__(threads) reconstruct_kernel(reconstruct_args a) {
  kernels::begin_dependent_kernel();
  extern __shared__ uint4 staged_words[];
  auto* staged = reinterpret_cast<std::uint8_t*>(staged_words);
  __shared__ std::uint16_t table[256];
  __shared__ std::uint16_t warp_terms[threads / 32];
  __shared__ std::uint8_t verdict;
  __shared__ bool last;
  const std::uint32_t y = blockIdx.x;
  const std::uint8_t* packets = a.frame->packets;
  const bool stream_ok = a.frame->bytes == a.stream_bytes;
  if (stream_ok) {
    for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) table[i] = byte_table.entry[i];
    const std::uint8_t* packet = packets + 4 + std::uint64_t{y} * (a.line_bytes + packet_overhead);
    const std::uint32_t head = stage_packet(packet, a.line_bytes + packet_overhead, staged);
    __syncthreads();
    const std::uint8_t* staged_packet = staged + head;
    const unsigned terms =
        __reduce_xor_sync(0xFFFFFFFFU, chunk_crc_terms(a, staged_packet + 4, table));
    if (threadIdx.x % 32 == 0) warp_terms[threadIdx.x / 32] = static_cast<std::uint16_t>(terms);
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint16_t crc = a.seed_term;
      for (int w = 0; w < threads / 32; ++w) crc ^= warp_terms[w];
      verdict = math::line_verdict(staged_packet, a.data_type, a.line_bytes, crc);
    }
    __syncthreads();
    if ((verdict & verdict_line) != 0) unpack_line(a, staged_packet + 4, y);
  }
  if (threadIdx.x == 0) {
    a.verdicts[y] = stream_ok ? verdict : std::uint8_t{0};
    __threadfence();  // this block's verdict and packet reads before its count
    last = atomicAdd(a.done, 1U) == gridDim.x - 1;
    if (last) __threadfence();
  }
  __syncthreads();
  if (last) finish_frame(a, stream_ok);
}

std::size_t staged_bytes(std::uint32_t line_bytes) {
  return (line_bytes + packet_overhead + 32 + 15) / 16 * 16;
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
  const std::size_t shared = staged_bytes(_line_bytes);
  if (shared > 48 * 1024) {
    RESIDENT_CUDA_TRY(cudaFuncSetAttribute(
        reconstruct_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  }
}

namespace detail {

void launch_csi2_reconstruct(const io::frame_ref* frame, std::uint16_t* bayer, std::size_t pitch,
                             io::frame_integrity* integrity, const csi2_workspace& ws,
                             cudaStream_t s, bool programmatic) {
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
  kernels::launch("csi2_reconstruct_kernel", reconstruct_kernel, dim3(ws.height()), dim3(threads),
                  staged_bytes(ws.line_bytes()), s, programmatic, a);
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
