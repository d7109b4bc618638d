#pragma once
// The imaging operators' kernel arguments, shared by their kernels (launched per operator in
// the graph and host-driven modes) and their device forms (run inside the persistent mode's
// kernel, src/exec/persistent_kernel.cu). Host code may include it; the device bodies are in
// the *_forms.cuh headers beside it.

#include <cstddef>
#include <cstdint>

#include "resident/io/bayer.hpp"
#include "resident/io/frame.hpp"
#include "resident/ops/imaging/convert_resize.hpp"
#include "resident/ops/imaging/csi2_reconstruct.hpp"
#include "resident/ops/imaging/demosaic.hpp"
#include "resident/ops/imaging/raw_isp.hpp"

namespace resident::ops::imaging::detail {

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

[[nodiscard]] reconstruct_args make_reconstruct_args(const io::frame_ref* frame,
                                                     std::uint16_t* bayer, std::size_t pitch,
                                                     io::frame_integrity* integrity,
                                                     const csi2_workspace& ws);
/// Shared memory a block needs to stage one line's packet (16-byte words, a word of slack at
/// each end for the packet's offset in its first word).
[[nodiscard]] constexpr std::size_t staged_line_bytes(std::uint32_t line_bytes) noexcept {
  constexpr std::uint32_t packet_overhead = 6;  // a long packet's header (4) and footer CRC (2)
  return (line_bytes + packet_overhead + 32 + 15) / 16 * 16;
}

/// csi2_reconstruct's device form: the lines, then block 0's integrity record.
inline constexpr unsigned csi2_form_phases = 2;

/// Dynamic shared memory of csi2_reconstruct's device form (512-thread blocks): the CRC table,
/// a word per warp, the verdict, the staged line.
[[nodiscard]] constexpr std::size_t csi2_form_shared_bytes(std::uint32_t line_bytes) noexcept {
  return 256 * 2 + 16 * 2 + 16 + staged_line_bytes(line_bytes);
}

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

struct correct_args {
  const std::uint16_t* in;
  std::uint16_t* out;  // may be `in`
  std::size_t pitch;
  std::uint32_t width;
  std::uint32_t height;
  io::bayer_order order;
  std::uint32_t black;
  std::uint32_t max;
  const std::uint64_t* multipliers;
  bool vector;
};

struct isp_args {
  stats_args stats;
  correct_args correct;
  bool grey_world;
};

/// Dynamic shared memory of raw_isp's device form: the block's histogram (4 x 256 bins and one
/// for the lanes past the end) and CUB's temporary storage (isp_forms.cuh checks it fits).
[[nodiscard]] constexpr std::size_t isp_form_shared_bytes() noexcept {
  return (4 * 256 + 1) * 4 + 16 + 64;
}

/// raw_isp's device form: statistics, gains, correction; without white balance the correction
/// alone (isp_forms.cuh's run() numbers them so).
[[nodiscard]] constexpr unsigned isp_form_phases(const isp_args& a) noexcept {
  return a.grey_world ? 3 : 1;
}

[[nodiscard]] isp_args make_isp_args(const std::uint16_t* in, std::uint16_t* out, std::size_t pitch,
                                     const raw_isp_workspace& ws);

struct demosaic_args {
  const std::uint16_t* in;
  std::size_t in_pitch;
  void* out;
  std::size_t out_pitch;
  int width;
  int height;
  int max_sum;  // 16 * max: results are sums in sixteenths of a sample
  float scale;  // output units per sixteenth
  bool vector_in;
  bool vector_out;
  // The kernels take these three as template arguments; the device form reads them here.
  int rx;  // column of red in the 2x2 cell
  int ry;  // row of red
  bool malvar;
  rgb_output output;
};

/// Dynamic shared memory of demosaic's device form: two tiles of 20 rows of 34 words.
[[nodiscard]] constexpr std::size_t demosaic_form_shared_bytes() noexcept {
  return 2 * 20 * 34 * 4;
}

[[nodiscard]] demosaic_args make_demosaic_args(const std::uint16_t* bayer, std::size_t in_pitch,
                                               void* rgb, std::size_t out_pitch,
                                               const demosaic_config& config);

struct resize_args {
  const std::uint8_t* in;
  std::size_t in_pitch;
  std::uint8_t* out;
  std::size_t out_pitch;
  std::uint32_t in_width;
  std::uint32_t in_height;
  std::uint32_t out_width;
  std::uint32_t out_height;
  float scale[3];   // planar: 1 / (full * std_c); rgba8: 255 / full
  float offset[3];  // planar: -mean_c / std_c; rgba8: 0
  bool in_rgba16;
  resize_output output;
};

[[nodiscard]] resize_args make_resize_args(const void* in, std::size_t in_pitch, void* out,
                                           std::size_t out_pitch,
                                           const convert_resize_config& config);

}  // namespace resident::ops::imaging::detail
