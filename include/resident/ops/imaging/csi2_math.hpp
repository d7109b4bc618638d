#pragma once
// Bit-level pieces of CSI-2 reconstruction that host code and device kernels share: the footer
// CRC's arithmetic over GF(2) (so a line's CRC can be computed in parallel, chunk by chunk), the
// header ECC check and the RAW unpacking of one packing group. All constexpr, unit-tested on the
// host against io::csi2.
//
// CRC-16/CSI-2 (polynomial x^16 + x^12 + x^5 + 1, bits LSB first) is linear over GF(2). In its
// reflected register, bit 15 holds the coefficient of x^0 and bit 0 that of x^15; feeding a zero
// byte multiplies the register by x^8 modulo the polynomial. So, with crc0 the CRC from a zero
// seed:
//   crc0(A || B)      = shift(crc0(A), |B|) ^ crc0(B)
//   crc(seed, A)      = shift(seed, |A|) ^ crc0(A)
//   shift(c, n bytes) = c * x^(8n) mod P
// and a line split into chunks has crc = shift(seed, L) ^ XOR_j shift(crc0(chunk_j), L - end_j):
// every chunk's term is independent, so the terms can be combined in any order.

#include <cstdint>

#include "resident/io/csi2.hpp"
#include "resident/io/frame.hpp"  // RESIDENT_HD

namespace resident::ops::imaging::csi2_math {

inline constexpr std::uint16_t crc16_polynomial = 0x8408;  // 0x1021 reflected
inline constexpr std::uint16_t crc16_one = 0x8000;         // x^0 in the reflected register

/// a * b mod P, both in the reflected representation.
RESIDENT_HD constexpr std::uint16_t crc16_multiply(std::uint16_t a, std::uint16_t b) noexcept {
  std::uint16_t product = 0;
  for (int power = 0; power < 16; ++power) {  // b holds b * x^power
    if (((a >> (15 - power)) & 1U) != 0U) product ^= b;
    b = (b & 1U) != 0U ? static_cast<std::uint16_t>((b >> 1) ^ crc16_polynomial)
                       : static_cast<std::uint16_t>(b >> 1);
  }
  return product;
}

/// x^(8 * bytes) mod P: what feeding `bytes` zero bytes multiplies the register by.
RESIDENT_HD constexpr std::uint16_t crc16_zero_bytes_factor(std::uint64_t bytes) noexcept {
  std::uint16_t result = crc16_one;
  std::uint16_t square = static_cast<std::uint16_t>(crc16_one >> 8);  // x^8
  for (; bytes != 0; bytes >>= 1) {
    if ((bytes & 1U) != 0U) result = crc16_multiply(result, square);
    square = crc16_multiply(square, square);
  }
  return result;
}

/// The register `crc` after `bytes` zero bytes.
RESIDENT_HD constexpr std::uint16_t crc16_shift(std::uint16_t crc, std::uint64_t bytes) noexcept {
  return crc16_multiply(crc, crc16_zero_bytes_factor(bytes));
}

/// crc0(A || B) from crc0(A), crc0(B) and |B| (associative, not commutative).
RESIDENT_HD constexpr std::uint16_t crc16_combine(std::uint16_t crc_a, std::uint16_t crc_b,
                                                  std::uint64_t bytes_b) noexcept {
  return static_cast<std::uint16_t>(crc16_shift(crc_a, bytes_b) ^ crc_b);
}

using ::resident::io::csi2::crc16_update;  // one step of the footer CRC, from a given register

// ---- packet header ------------------------------------------------------------------------

using ::resident::io::csi2::header_ecc;

using header_check = io::csi2::header_status;  // ok, corrected, corrupt

struct header_fields {
  std::uint8_t data_type{0};  // the DI byte's low 6 bits (the virtual channel is not checked)
  std::uint16_t word_count{0};
  header_check check{header_check::ok};
};

/// Checks four header bytes against their ECC, correcting one flipped bit, exactly as
/// io::csi2::decode_header does.
RESIDENT_HD constexpr header_fields decode_header(std::uint8_t b0, std::uint8_t b1, std::uint8_t b2,
                                                  std::uint8_t b3) noexcept {
  const io::csi2::checked_header_bits c = io::csi2::check_header_bits(
      std::uint32_t{b0} | std::uint32_t{b1} << 8 | std::uint32_t{b2} << 16, b3);
  return {static_cast<std::uint8_t>(c.bits & 0x3FU), static_cast<std::uint16_t>(c.bits >> 8),
          c.status};
}

// ---- RAW unpacking --------------------------------------------------------------------------

/// Pixels and bytes of one packing group for a RAW bit depth (8, 10 or 12).
RESIDENT_HD constexpr unsigned group_pixels(unsigned bits) noexcept {
  return bits == 10 ? 4 : bits == 12 ? 2 : 1;
}
RESIDENT_HD constexpr unsigned group_bytes(unsigned bits) noexcept {
  return bits == 10 ? 5 : bits == 12 ? 3 : 1;
}

/// Pixel `k` of the packing group starting at `b` (the inverse of io::csi2::pack_line).
RESIDENT_HD constexpr std::uint16_t unpack_pixel(unsigned bits, const std::uint8_t* b,
                                                 unsigned k) noexcept {
  if (bits == 8) return b[0];
  const unsigned n = group_pixels(bits);
  const unsigned low_bits = bits - 8;
  const unsigned low = (static_cast<unsigned>(b[n]) >> (k * low_bits)) & ((1U << low_bits) - 1U);
  return static_cast<std::uint16_t>(static_cast<unsigned>(b[k]) << low_bits | low);
}

// ---- packet verdicts ------------------------------------------------------------------------

// What a receiver found in one line packet, as bits, in parse_frame's order of checks: a
// corrupt header ends the line; a corrected one is counted and the checks go on.
inline constexpr std::uint8_t verdict_corrected = 1;
inline constexpr std::uint8_t verdict_corrupt = 2;
inline constexpr std::uint8_t verdict_format = 4;
inline constexpr std::uint8_t verdict_crc = 8;
inline constexpr std::uint8_t verdict_line = 16;  // every check passed: the line is used

/// The verdict on a line packet from its decoded header and the CRC its footer sent (read only
/// when the header fits: `sent` is not looked at otherwise), whose payload's CRC is
/// `payload_crc`.
RESIDENT_HD constexpr std::uint8_t line_verdict_of(const header_fields& h, std::uint16_t sent,
                                                   std::uint8_t data_type, std::uint32_t line_bytes,
                                                   std::uint16_t payload_crc) noexcept {
  if (h.check == header_check::corrupt) return verdict_corrupt;
  const std::uint8_t corrected = h.check == header_check::corrected ? verdict_corrected : 0;
  if (h.data_type != data_type || h.word_count != line_bytes) {
    return static_cast<std::uint8_t>(corrected | verdict_format);
  }
  return static_cast<std::uint8_t>(corrected | (sent == payload_crc ? verdict_line : verdict_crc));
}

/// The verdict on a line packet (header at `packet`, footer CRC after `line_bytes` of payload)
/// whose payload's CRC is `payload_crc`. Reads the footer only when the header says it is there.
RESIDENT_HD constexpr std::uint8_t line_verdict(const std::uint8_t* packet, std::uint8_t data_type,
                                                std::uint32_t line_bytes,
                                                std::uint16_t payload_crc) noexcept {
  const header_fields h = decode_header(packet[0], packet[1], packet[2], packet[3]);
  std::uint16_t sent = 0;
  if (h.check != header_check::corrupt && h.data_type == data_type && h.word_count == line_bytes) {
    const std::uint8_t* footer = packet + 4 + line_bytes;
    sent = static_cast<std::uint16_t>(footer[0] | footer[1] << 8);
  }
  return line_verdict_of(h, sent, data_type, line_bytes, payload_crc);
}

/// A frame's counts, as io::frame_integrity holds them.
struct frame_counts {
  std::uint32_t lines{0};
  std::uint32_t corrected_headers{0};
  std::uint32_t corrupt_headers{0};
  std::uint32_t crc_errors{0};
  std::uint32_t format_errors{0};
  RESIDENT_HD constexpr void add(std::uint8_t verdict) noexcept {
    lines += (verdict & verdict_line) != 0 ? 1U : 0U;
    corrected_headers += (verdict & verdict_corrected) != 0 ? 1U : 0U;
    corrupt_headers += (verdict & verdict_corrupt) != 0 ? 1U : 0U;
    crc_errors += (verdict & verdict_crc) != 0 ? 1U : 0U;
    format_errors += (verdict & verdict_format) != 0 ? 1U : 0U;
  }
};

/// The frame start (`fs`) and frame end (`fe`) packets, checked as parse_frame checks them,
/// and the frame start's number against `expected_number` (the bridge's frame counter, as
/// io::csi2_frame_number gives it): one more format error when they differ.
RESIDENT_HD constexpr void check_frame_ends(const std::uint8_t* fs, const std::uint8_t* fe,
                                            std::uint16_t expected_number,
                                            frame_counts& counts) noexcept {
  constexpr std::uint8_t frame_start = 0x00;
  constexpr std::uint8_t frame_end = 0x01;
  const header_fields start = decode_header(fs[0], fs[1], fs[2], fs[3]);
  std::uint16_t number = 0;
  if (start.check == header_check::corrupt) {
    ++counts.corrupt_headers;
  } else {
    if (start.check == header_check::corrected) ++counts.corrected_headers;
    if (start.data_type == frame_start && start.word_count != 0) {
      number = start.word_count;
    } else {
      ++counts.format_errors;
    }
  }
  if (number != 0 && number != expected_number) ++counts.format_errors;
  const header_fields end = decode_header(fe[0], fe[1], fe[2], fe[3]);
  if (end.check == header_check::corrupt) {
    ++counts.corrupt_headers;
  } else {
    if (end.check == header_check::corrected) ++counts.corrected_headers;
    if (end.data_type != frame_end || end.word_count != number) ++counts.format_errors;
  }
}

}  // namespace resident::ops::imaging::csi2_math
