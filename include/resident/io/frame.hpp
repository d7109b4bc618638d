#pragma once
// What flows between the camera pipeline's first stages: a reference to a frame in the bridge's
// device ring (the frame handler's output) and what reconstruction found in it (what decides
// whether the frame may be displayed). Both are plain structs carried by byte-sized ports.

#include <cstdint>

#if defined(__CUDACC__)
#define RESIDENT_HD __host__ __device__
#else
#define RESIDENT_HD
#endif

namespace resident::io {

/// Bridge status of a frame (frame_ref::status). Anything but `ok` is never displayed.
enum class bridge_status : std::uint32_t {
  ok = 0,
  truncated = 1,   // the bridge lost part of the stream (e.g. a dropped packet on the link)
  link_error = 2,  // the bridge's own checks failed
};

/// Where this iteration's frame lies and what its metadata record says. Device memory, written
/// by the frame handler (io::frame_rx) into its "frame" output port; read by reconstruction.
struct frame_ref {
  const std::uint8_t* packets;  // the frame's CSI-2 packet stream, in its ring slot
  std::uint64_t bytes;          // length of the stream in bytes
  std::uint64_t frame;          // the bridge's frame counter (1, 2, ...): the loop's sample number
  std::uint32_t status;         // bridge_status
  std::uint32_t slot;           // ring slot index
  /// The slot's metadata frame counter: a reader that loads it again (acquire, system scope)
  /// after reading the packets learns whether the bridge rewrote the slot meanwhile. May be
  /// null (nothing to check, e.g. a frame a user supplies directly).
  const std::uint64_t* slot_frame;
  std::uint64_t frame_start_ns;  // device clock (%globaltimer): the sensor began the frame
  std::uint64_t arrival_ns;      // device clock: the frame's metadata record landed
};

/// The 16-bit frame number CSI-2's frame start and end packets carry for frame counter `frame`
/// (CSI-2 counts 1..65535 and reserves 0).
RESIDENT_HD constexpr std::uint16_t csi2_frame_number(std::uint64_t frame) noexcept {
  return static_cast<std::uint16_t>((frame == 0 ? 0 : (frame - 1) % 65535U) + 1U);
}

/// What reconstruction found in one frame (device memory, the reconstruction operator's
/// "integrity" output). Later stages display a frame only when ok().
struct frame_integrity {
  std::uint64_t frame;              // frame_ref::frame
  std::uint32_t bridge_status;      // frame_ref::status
  std::uint32_t expected_lines;     // the frame's height
  std::uint32_t lines;              // line packets that passed every check and were unpacked
  std::uint32_t corrected_headers;  // headers with one flipped bit, corrected and used
  std::uint32_t corrupt_headers;    // headers the ECC rejects
  std::uint32_t crc_errors;         // line payloads whose footer CRC does not match
  std::uint32_t format_errors;      // wrong data type, word count, packet order or frame number
  std::uint32_t overwritten;        // 1: the bridge rewrote the slot while it was read
  [[nodiscard]] RESIDENT_HD constexpr bool ok() const noexcept {
    return bridge_status == 0 && lines == expected_lines && corrupt_headers == 0 &&
           crc_errors == 0 && format_errors == 0 && overwritten == 0;
  }
};

}  // namespace resident::io
