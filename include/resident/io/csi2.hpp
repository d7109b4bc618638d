#pragma once
// MIPI CSI-2 packets as a sensor bridge forwards them: the emulated sensor's frames are packet
// streams, and the reconstruction operator checks each packet before it trusts its pixels.
//
//   frame:  [FS short packet] { [long packet: one line] } x height [FE short packet]
//   short:  DI | WC lo | WC hi | ECC                       (WC: the frame number)
//   long:   DI | WC lo | WC hi | ECC | payload (WC bytes) | CRC lo | CRC hi
//   DI = virtual channel << 6 | data type
//
// The header's ECC is CSI-2's Hamming code over the 24 header bits (corrects one flipped bit,
// detects two); the footer is CRC-16 (x^16 + x^12 + x^5 + 1, bits in LSB first, seed 0xFFFF).
// Payload packing: RAW8 one byte a pixel; RAW10 four pixels in five bytes (the high 8 bits of
// each, then their low 2 bits); RAW12 two pixels in three bytes (high 8 bits of each, then the
// low 4 bits). The bit-level helpers are constexpr, for host code and device kernels alike.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "resident/io/frame.hpp"  // RESIDENT_HD

namespace resident::io::csi2 {

/// The data types resident produces and accepts.
enum class data_type : std::uint8_t {
  frame_start = 0x00,
  frame_end = 0x01,
  raw8 = 0x2A,
  raw10 = 0x2B,
  raw12 = 0x2C,
};

/// Pixel packing of a RAW line.
enum class raw_format : std::uint8_t { raw8 = 8, raw10 = 10, raw12 = 12 };
inline constexpr std::array all_raw_formats{raw_format::raw8, raw_format::raw10, raw_format::raw12};

/// "raw8", "raw10", "raw12": the names configurations and parameters use.
[[nodiscard]] constexpr std::string_view to_string(raw_format f) noexcept {
  switch (f) {
    case raw_format::raw8:
      return "raw8";
    case raw_format::raw10:
      return "raw10";
    case raw_format::raw12:
    default:
      return "raw12";
  }
}

[[nodiscard]] constexpr data_type data_type_of(raw_format f) noexcept {
  switch (f) {
    case raw_format::raw8:
      return data_type::raw8;
    case raw_format::raw10:
      return data_type::raw10;
    case raw_format::raw12:
    default:
      return data_type::raw12;
  }
}

/// Which parity bits (P0..P5) each of the 24 header bits D0..D23 feeds: CSI-2's ECC columns.
/// Each column has three or five bits set and all differ, so a one-bit error's syndrome names
/// the bit; a syndrome of one set bit is a flipped parity bit.
inline constexpr std::array<std::uint8_t, 24> ecc_columns{
    0x07, 0x0B, 0x0D, 0x0E, 0x13, 0x15, 0x16, 0x19, 0x1A, 0x1C, 0x23, 0x25,
    0x26, 0x29, 0x2A, 0x2C, 0x31, 0x32, 0x34, 0x38, 0x1F, 0x2F, 0x37, 0x3B};

namespace detail {
/// Column `bit` of `ecc_columns`, from a copy of its own: constexpr functions that device code
/// calls (--expt-relaxed-constexpr) cannot reach the host's `ecc_columns`.
[[nodiscard]] RESIDENT_HD constexpr std::uint8_t ecc_column(int bit) noexcept {
  constexpr std::uint8_t columns[24] = {0x07, 0x0B, 0x0D, 0x0E, 0x13, 0x15, 0x16, 0x19,
                                        0x1A, 0x1C, 0x23, 0x25, 0x26, 0x29, 0x2A, 0x2C,
                                        0x31, 0x32, 0x34, 0x38, 0x1F, 0x2F, 0x37, 0x3B};
  return columns[bit];
}
}  // namespace detail

/// The ECC byte of a packet header's first three bytes (bits 0..23, byte 0 in bits 0..7).
/// Usable in device code too.
[[nodiscard]] RESIDENT_HD constexpr std::uint8_t header_ecc(std::uint32_t header24) noexcept {
  std::uint8_t ecc = 0;
  for (int bit = 0; bit < 24; ++bit) {
    if ((header24 >> bit) & 1U) ecc = static_cast<std::uint8_t>(ecc ^ detail::ecc_column(bit));
  }
  return ecc;
}

/// One step of the footer's CRC-16 (polynomial 0x1021 with reflected bits: 0x8408).
[[nodiscard]] RESIDENT_HD constexpr std::uint16_t crc16_update(std::uint16_t crc,
                                                               std::uint8_t byte) noexcept {
  crc ^= byte;
  for (int i = 0; i < 8; ++i) {
    crc = (crc & 1U) != 0U ? static_cast<std::uint16_t>((crc >> 1) ^ 0x8408U)
                           : static_cast<std::uint16_t>(crc >> 1);
  }
  return crc;
}
inline constexpr std::uint16_t crc16_seed = 0xFFFF;

/// The footer CRC of a long packet's payload.
[[nodiscard]] std::uint16_t crc16(std::span<const std::uint8_t> payload) noexcept;

struct packet_header {
  std::uint8_t virtual_channel{0};  // 0..3
  data_type type{data_type::raw8};
  std::uint16_t word_count{0};  // long packets: payload bytes; short packets: their data
  friend bool operator==(const packet_header&, const packet_header&) = default;
};

/// The four header bytes, ECC included. Throws std::invalid_argument for a virtual channel
/// above 3.
[[nodiscard]] std::array<std::uint8_t, 4> encode_header(const packet_header& h);

enum class header_status : std::uint8_t {
  ok = 0,         // the ECC matches
  corrected = 1,  // one flipped bit, corrected (the header returned is the corrected one)
  corrupt = 2,    // two or more flipped bits: the header cannot be trusted
};
struct decoded_header {
  packet_header header;
  header_status status{header_status::ok};
};
/// Checks a received header against its ECC and corrects a single flipped bit.
[[nodiscard]] decoded_header decode_header(std::span<const std::uint8_t, 4> bytes) noexcept;

/// decode_header's check on the raw bits, usable in device code too: a header's 24 bits and
/// its ECC byte (low 6 bits used) -> the bits with a single flipped bit corrected, and the
/// verdict.
struct checked_header_bits {
  std::uint32_t bits{0};
  header_status status{header_status::ok};
};
[[nodiscard]] RESIDENT_HD constexpr checked_header_bits check_header_bits(
    std::uint32_t bits, std::uint8_t ecc) noexcept {
  const auto syndrome = static_cast<std::uint8_t>(header_ecc(bits) ^ (ecc & 0x3FU));
  if (syndrome == 0) return {bits, header_status::ok};
  // A syndrome of one set bit is a flipped parity bit: the data bits stand.
  if ((syndrome & (syndrome - 1)) == 0) return {bits, header_status::corrected};
  for (int bit = 0; bit < 24; ++bit) {
    if (detail::ecc_column(bit) == syndrome) return {bits ^ (1U << bit), header_status::corrected};
  }
  return {bits, header_status::corrupt};
}

/// Payload bytes of one line of `width` pixels. Throws std::invalid_argument when `width` is
/// not a whole number of packing groups (RAW10: 4 pixels, RAW12: 2) or is zero.
[[nodiscard]] std::size_t line_bytes(raw_format f, std::size_t width);

/// Packs one line of pixels (values below 2^bits) into `out` (line_bytes(f, pixels.size())).
/// Throws std::invalid_argument for a size mismatch or a pixel out of range.
void pack_line(raw_format f, std::span<const std::uint16_t> pixels, std::span<std::uint8_t> out);
/// The inverse of pack_line.
void unpack_line(raw_format f, std::span<const std::uint8_t> in, std::span<std::uint16_t> pixels);

/// A whole frame (`pixels` row-major, width x height) as the packet stream a bridge forwards:
/// frame start, one long packet per line, frame end. `frame_number` goes in the short packets'
/// word count (1..65535; CSI-2 reserves 0 for "not used").
[[nodiscard]] std::vector<std::uint8_t> frame_packets(raw_format f, std::size_t width,
                                                      std::size_t height,
                                                      std::span<const std::uint16_t> pixels,
                                                      std::uint16_t frame_number,
                                                      std::uint8_t virtual_channel = 0);

/// What a receiver found in one frame's packet stream.
struct frame_check {
  std::uint16_t frame_number{0};       // from the frame start packet (0: none found)
  std::uint32_t lines{0};              // line packets whose pixels were taken
  std::uint32_t corrected_headers{0};  // headers with one flipped bit, corrected and used
  std::uint32_t corrupt_headers{0};    // headers the ECC rejects
  std::uint32_t crc_errors{0};         // line payloads whose footer CRC does not match
  std::uint32_t format_errors{0};      // wrong data type, word count or packet order
  /// Every line arrived intact, between a frame start and a frame end of the same number.
  [[nodiscard]] bool complete(std::uint32_t height) const noexcept {
    return frame_number != 0 && lines == height && corrupt_headers == 0 && crc_errors == 0 &&
           format_errors == 0;
  }
};

/// The receiver's side of frame_packets, on the host: checks every packet (ECC, CRC, data
/// type, word count, order) and unpacks the lines that pass into `pixels` (width x height,
/// row-major). A line that fails a check leaves its row untouched. The reference for the
/// GPU reconstruction operator, and a check of a stream's integrity.
frame_check parse_frame(std::span<const std::uint8_t> stream, raw_format f, std::size_t width,
                        std::size_t height, std::span<std::uint16_t> pixels);

/// Bytes of frame_packets' output for a frame of this shape (4 + height * (4 + line + 2) + 4).
[[nodiscard]] std::size_t frame_packet_bytes(raw_format f, std::size_t width, std::size_t height);

}  // namespace resident::io::csi2
