#pragma once
// csi2_reconstruct: a frame's CSI-2 packet stream (in the bridge's device ring) -> dense 16-bit
// Bayer image, with every packet checked on the GPU the way io::csi2::parse_frame checks it on
// the host.
//
//   input  "frame"      io::frame_ref (a byte port of sizeof(io::frame_ref), device memory)
//   output "bayer"      width x height, bayer_<order>16
//   output "integrity"  io::frame_integrity (byte port)
//
// Parameters: width (1920), height (1080), format (raw8 | raw10 | raw12; raw12), order
// (rggb | bggr | grbg | gbrg; rggb).
//
// One thread block per line: the block stages the line's packet in shared memory, checks its
// header (ECC: one flipped bit corrected, two rejected; data type; word count) and its footer
// CRC (computed in parallel: see csi2_math.hpp) and unpacks the line only when every check
// passes; a failing line leaves its row as it was. The last block to finish checks the frame
// start and end packets (the frame start must carry io::csi2_frame_number(frame_ref.frame)),
// re-reads the slot's frame counter (frame_ref.slot_frame, system-scope acquire, after every
// packet read) and writes the integrity record, whose counts equal parse_frame's for the same
// stream (plus one format error for a frame start of another frame number). A stream whose
// length is not io::csi2::frame_packet_bytes(...) is one format error and is not read.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/io/bayer.hpp"
#include "resident/io/csi2.hpp"
#include "resident/io/frame.hpp"

namespace resident::ops::imaging {

/// Device memory the reconstruction kernel needs besides its ports, made before any launch:
/// each chunk's CRC shift factor, the per-line verdicts and the blocks' completion counter.
class csi2_workspace {
 public:
  /// Allocates and fills it (cudaMalloc, cudaMemcpy: not on a hot path). Throws
  /// std::invalid_argument for a shape no CSI-2 line packet can carry.
  csi2_workspace(io::csi2::raw_format format, std::uint32_t width, std::uint32_t height);

  [[nodiscard]] io::csi2::raw_format format() const noexcept { return _format; }
  [[nodiscard]] std::uint32_t width() const noexcept { return _width; }
  [[nodiscard]] std::uint32_t height() const noexcept { return _height; }
  [[nodiscard]] std::uint32_t line_bytes() const noexcept { return _line_bytes; }
  [[nodiscard]] std::uint32_t chunks() const noexcept { return _chunks; }
  /// crc16_shift(seed, line_bytes): the seed's term of every line's CRC.
  [[nodiscard]] std::uint16_t seed_term() const noexcept { return _seed_term; }
  [[nodiscard]] const std::uint16_t* chunk_factors() const noexcept {
    return _factors.data_as<const std::uint16_t>();
  }
  [[nodiscard]] std::uint8_t* line_verdicts() const noexcept {
    return _verdicts.data_as<std::uint8_t>();
  }
  [[nodiscard]] std::uint32_t* done_counter() const noexcept {
    return _done.data_as<std::uint32_t>();
  }

 private:
  io::csi2::raw_format _format;
  std::uint32_t _width;
  std::uint32_t _height;
  std::uint32_t _line_bytes;
  std::uint32_t _chunks;
  std::uint16_t _seed_term;
  device_buffer _factors;   // uint16 per chunk: x^(8 * bytes after the chunk) mod P
  device_buffer _verdicts;  // uint8 per line (what each line's block found)
  device_buffer _done;      // uint32: blocks finished; the last one resets it to 0
};

class csi2_reconstruct final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;

  [[nodiscard]] std::uint32_t width() const noexcept { return _width; }
  [[nodiscard]] std::uint32_t height() const noexcept { return _height; }
  [[nodiscard]] io::csi2::raw_format format() const noexcept { return _format; }
  [[nodiscard]] io::bayer_order order() const noexcept { return _order; }
  /// Its device tables (after initialize(); null before).
  [[nodiscard]] const csi2_workspace* workspace() const noexcept { return _workspace.get(); }

 private:
  std::uint32_t _width{};
  std::uint32_t _height{};
  io::csi2::raw_format _format{io::csi2::raw_format::raw12};
  io::bayer_order _order{io::bayer_order::rggb};
  std::unique_ptr<csi2_workspace> _workspace;
};

namespace detail {

/// Pixels per chunk of a line (each thread's unit of CRC and unpacking work).
inline constexpr std::uint32_t csi2_chunk_pixels = 8;

/// Enqueues reconstruction of the frame `*frame` describes into `bayer` (rows `pitch` bytes
/// apart) and its integrity record into `*integrity`. `ws` must outlive the launch (and every
/// replay of a graph that captured it); one launch at a time per workspace.
void launch_csi2_reconstruct(const io::frame_ref* frame, std::uint16_t* bayer, std::size_t pitch,
                             io::frame_integrity* integrity, const csi2_workspace& ws,
                             cudaStream_t s, bool programmatic = false);

}  // namespace detail

}  // namespace resident::ops::imaging
