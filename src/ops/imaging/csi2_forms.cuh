#pragma once
// csi2_reconstruct's device code, block-wide and for any block size (a multiple of 32, at most
// max_threads): the line body the kernel runs (one block per line) and the device form the
// persistent mode runs (blocks take lines in turn; a grid barrier instead of the last-block
// count). Include only from .cu files.

#include <cuda/atomic>

#include "ops/imaging/forms.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/ops/imaging/csi2_math.hpp"

namespace resident::ops::imaging::detail {

namespace csi2_form {

namespace math = csi2_math;
using math::verdict_line;

constexpr std::uint32_t packet_overhead = 6;  // a long packet's header (4) and footer CRC (2)
constexpr int max_threads = 512;

__device__ inline std::uint32_t chunk_bytes(const reconstruct_args& a, std::uint32_t j) {
  const std::uint32_t pixels =
      min(detail::csi2_chunk_pixels, a.width - j * detail::csi2_chunk_pixels);
  return pixels / math::group_pixels(a.bits) * math::group_bytes(a.bits);
}

/// Copies packet bytes [0, n) to staged[head, head + n), head = the packet's offset in its
/// 16-byte word: whole aligned words in one load each, the ragged ends byte by byte, and not a
/// byte outside the packet read.
__device__ inline std::uint32_t stage_packet(const std::uint8_t* packet, std::uint32_t n,
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
__device__ inline std::uint16_t chunk_crc_terms(const reconstruct_args& a,
                                                const std::uint8_t* payload,
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

__device__ inline void unpack_line(const reconstruct_args& a, const std::uint8_t* payload,
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

/// The integrity record of frame `ref` from its lines' counts `total`: the frame start and end
/// packets (4 bytes each, at the stream's two ends) when the stream had its length (else one
/// format error: nothing was read), the bridge's status, the slot re-read. By one thread, after
/// every packet read of every block (each block's reads are ordered before its fenced arrival,
/// which this thread's block observed): a slot counter that changed since means the bridge
/// rewrote the slot while it was being read. csi2_reconstruct and camera_isp both write it.
__device__ inline io::frame_integrity integrity_record(const io::frame_ref* ref,
                                                       std::uint32_t height,
                                                       std::uint64_t stream_bytes,
                                                       math::frame_counts total, bool stream_ok) {
  if (stream_ok) {
    const std::uint8_t* fs = ref->packets;
    const std::uint8_t* fe = ref->packets + stream_bytes - 4;
    const std::uint8_t start[4] = {fs[0], fs[1], fs[2], fs[3]};
    const std::uint8_t end[4] = {fe[0], fe[1], fe[2], fe[3]};
    math::check_frame_ends(start, end, io::csi2_frame_number(ref->frame), total);
  } else {
    total.format_errors = 1;  // a stream of the wrong length is not read at all
  }
  io::frame_integrity out{};
  out.frame = ref->frame;
  out.bridge_status = ref->status;
  out.expected_lines = height;
  out.lines = total.lines;
  out.corrected_headers = total.corrected_headers;
  out.corrupt_headers = total.corrupt_headers;
  out.crc_errors = total.crc_errors;
  out.format_errors = total.format_errors;
  if (ref->slot_frame != nullptr) {
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
    out.overwritten = ::resident::device::load_acquire_system(*ref->slot_frame) != out.frame;
  }
  return out;
}

/// After every line (the kernel's last block; the persistent form's block 0): the lines' verdicts,
/// frame start and end, the slot re-read, the integrity record. Thread 0 writes the record; the
/// other threads help count.
__device__ inline void finish_frame(const reconstruct_args& a, bool stream_ok) {
  __shared__ unsigned counts[5];  // lines, corrected, corrupt, crc, format
  if (threadIdx.x < 5) counts[threadIdx.x] = 0;
  resident::device::sync_block();
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
  resident::device::sync_block();
  if (threadIdx.x != 0) return;
  const math::frame_counts total{counts[0], counts[1], counts[2], counts[3], counts[4]};
  *a.integrity = integrity_record(a.frame, a.height, a.stream_bytes, total, stream_ok);
  *a.done = 0;  // ready for the next launch (kernel boundaries order it)
}

/// One line's packet (line `y`): staged in shared memory, header and footer CRC checked, and
/// unpacked into its row when every check passes. Returns the line's verdict to every thread.
/// `table` (the CRC byte table) is filled by the caller before the call; `warp_terms` holds a
/// word per warp; `verdict` is one shared byte. Every thread of the block calls it.
__device__ inline std::uint8_t reconstruct_line(const reconstruct_args& a, std::uint32_t y,
                                                std::uint8_t* staged, const std::uint16_t* table,
                                                std::uint16_t* warp_terms, std::uint8_t& verdict) {
  const std::uint8_t* packet =
      a.frame->packets + 4 + std::uint64_t{y} * (a.line_bytes + packet_overhead);
  const std::uint32_t head = stage_packet(packet, a.line_bytes + packet_overhead, staged);
  resident::device::sync_block();
  const std::uint8_t* staged_packet = staged + head;
  const unsigned terms =
      __reduce_xor_sync(0xFFFFFFFFU, chunk_crc_terms(a, staged_packet + 4, table));
  if (threadIdx.x % 32 == 0) warp_terms[threadIdx.x / 32] = static_cast<std::uint16_t>(terms);
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    std::uint16_t crc = a.seed_term;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) crc ^= warp_terms[w];
    verdict = math::line_verdict(staged_packet, a.data_type, a.line_bytes, crc);
  }
  resident::device::sync_block();
  const std::uint8_t v = verdict;
  if ((v & verdict_line) != 0) unpack_line(a, staged_packet + 4, y);
  return v;
}

static_assert(csi2_form_shared_bytes(0) ==
                  256 * 2 + max_threads / 32 * 2 + 16 + staged_line_bytes(0),
              "forms.hpp's size of the form's shared memory is its layout's");

/// The persistent mode's form (csi2_form_shared_bytes of scratch). Phase 0: the grid's blocks take
/// lines in turn (a block's barriers are its own, so blocks may take different numbers of lines).
/// Phase 1, block 0 after the grid barrier: the frame's ends, the slot re-read and the integrity
/// record.
__device__ inline void run(const reconstruct_args& a, unsigned phase, std::byte* scratch) {
  const bool stream_ok = a.frame->bytes == a.stream_bytes;
  if (phase == 1) {
    if (blockIdx.x == 0) finish_frame(a, stream_ok);
    return;
  }
  if (!stream_ok) return;  // nothing read: the finish counts one format error
  auto* table = reinterpret_cast<std::uint16_t*>(scratch);
  auto* warp_terms = table + 256;
  auto* verdict = reinterpret_cast<std::uint8_t*>(warp_terms + max_threads / 32);
  auto* staged = reinterpret_cast<std::uint8_t*>(scratch) + (256 * 2 + max_threads / 32 * 2 + 16);
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) {
    table[i] = math::crc16_update(0, static_cast<std::uint8_t>(i));
  }
  for (std::uint32_t y0 = 0; y0 < a.height; y0 += gridDim.x) {
    const std::uint32_t y = y0 + blockIdx.x;
    if (y < a.height) {
      const std::uint8_t v = reconstruct_line(a, y, staged, table, warp_terms, *verdict);
      if (threadIdx.x == 0) a.verdicts[y] = v;
    }
    resident::device::sync_block();  // the staged line is read before the next one is staged
  }
}

}  // namespace csi2_form

}  // namespace resident::ops::imaging::detail
