#include "resident/io/csi2.hpp"

#include <stdexcept>
#include <string>

namespace resident::io::csi2 {

namespace {

constexpr std::size_t group_pixels(raw_format f) noexcept {
  return f == raw_format::raw10 ? 4 : f == raw_format::raw12 ? 2 : 1;
}
constexpr std::size_t group_bytes(raw_format f) noexcept {
  return f == raw_format::raw10 ? 5 : f == raw_format::raw12 ? 3 : 1;
}
constexpr unsigned bits_of(raw_format f) noexcept { return static_cast<unsigned>(f); }

std::string name_of(raw_format f) { return "RAW" + std::to_string(bits_of(f)); }

void check_sizes(raw_format f, std::size_t pixels, std::size_t bytes, const char* what) {
  const std::size_t want = line_bytes(f, pixels);
  if (bytes != want) {
    throw std::invalid_argument(std::string("csi2::") + what + ": " + name_of(f) + " line of " +
                                std::to_string(pixels) + " pixels takes " + std::to_string(want) +
                                " bytes, the buffer has " + std::to_string(bytes));
  }
}

std::uint32_t header_bits(std::span<const std::uint8_t, 4> b) noexcept {
  return static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
         static_cast<std::uint32_t>(b[2]) << 16;
}

}  // namespace

std::uint16_t crc16(std::span<const std::uint8_t> payload) noexcept {
  std::uint16_t crc = crc16_seed;
  for (const std::uint8_t byte : payload) crc = crc16_update(crc, byte);
  return crc;
}

std::array<std::uint8_t, 4> encode_header(const packet_header& h) {
  if (h.virtual_channel > 3) {
    throw std::invalid_argument("csi2::encode_header: virtual channel " +
                                std::to_string(h.virtual_channel) + " is above 3");
  }
  std::array<std::uint8_t, 4> out{
      static_cast<std::uint8_t>(h.virtual_channel << 6 | static_cast<std::uint8_t>(h.type)),
      static_cast<std::uint8_t>(h.word_count & 0xFFU), static_cast<std::uint8_t>(h.word_count >> 8),
      0};
  out[3] = header_ecc(header_bits(std::span<const std::uint8_t, 4>(out)));
  return out;
}

decoded_header decode_header(std::span<const std::uint8_t, 4> bytes) noexcept {
  const checked_header_bits checked = check_header_bits(header_bits(bytes), bytes[3]);
  const std::uint32_t bits = checked.bits;
  const header_status status = checked.status;
  decoded_header out;
  out.status = status;
  out.header.virtual_channel = static_cast<std::uint8_t>((bits >> 6) & 0x3U);
  out.header.type = static_cast<data_type>(bits & 0x3FU);
  out.header.word_count = static_cast<std::uint16_t>((bits >> 8) & 0xFFFFU);
  return out;
}

std::size_t line_bytes(raw_format f, std::size_t width) {
  if (width == 0 || width % group_pixels(f) != 0) {
    throw std::invalid_argument("csi2: a " + name_of(f) + " line must be a positive multiple of " +
                                std::to_string(group_pixels(f)) + " pixels, got " +
                                std::to_string(width));
  }
  return width / group_pixels(f) * group_bytes(f);
}

void pack_line(raw_format f, std::span<const std::uint16_t> pixels, std::span<std::uint8_t> out) {
  check_sizes(f, pixels.size(), out.size(), "pack_line");
  const unsigned bits = bits_of(f);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    if (pixels[i] >> bits != 0) {
      throw std::invalid_argument("csi2::pack_line: pixel " + std::to_string(i) + " is " +
                                  std::to_string(pixels[i]) + ", above " + name_of(f) + "'s " +
                                  std::to_string((1U << bits) - 1));
    }
  }
  const std::size_t n = group_pixels(f);
  const unsigned low_bits = bits - 8;  // 0, 2 or 4
  for (std::size_t g = 0; g < pixels.size() / n; ++g) {
    const std::uint16_t* p = pixels.data() + g * n;
    std::uint8_t* o = out.data() + g * group_bytes(f);
    std::uint8_t low = 0;
    for (std::size_t k = 0; k < n; ++k) {
      o[k] = static_cast<std::uint8_t>(p[k] >> low_bits);
      low |= static_cast<std::uint8_t>((p[k] & ((1U << low_bits) - 1)) << (k * low_bits));
    }
    if (low_bits != 0) o[n] = low;
  }
}

void unpack_line(raw_format f, std::span<const std::uint8_t> in, std::span<std::uint16_t> pixels) {
  check_sizes(f, pixels.size(), in.size(), "unpack_line");
  const std::size_t n = group_pixels(f);
  const unsigned low_bits = bits_of(f) - 8;
  for (std::size_t g = 0; g < pixels.size() / n; ++g) {
    const std::uint8_t* b = in.data() + g * group_bytes(f);
    for (std::size_t k = 0; k < n; ++k) {
      const unsigned low = low_bits == 0 ? 0U : (b[n] >> (k * low_bits)) & ((1U << low_bits) - 1);
      pixels[g * n + k] = static_cast<std::uint16_t>(static_cast<unsigned>(b[k]) << low_bits | low);
    }
  }
}

std::size_t frame_packet_bytes(raw_format f, std::size_t width, std::size_t height) {
  return 4 + height * (4 + line_bytes(f, width) + 2) + 4;
}

std::vector<std::uint8_t> frame_packets(raw_format f, std::size_t width, std::size_t height,
                                        std::span<const std::uint16_t> pixels,
                                        std::uint16_t frame_number, std::uint8_t virtual_channel) {
  if (pixels.size() != width * height) {
    throw std::invalid_argument("csi2::frame_packets: " + std::to_string(width) + "x" +
                                std::to_string(height) + " frame needs " +
                                std::to_string(width * height) + " pixels, got " +
                                std::to_string(pixels.size()));
  }
  if (frame_number == 0) throw std::invalid_argument("csi2::frame_packets: frame number 0");
  const std::size_t line = line_bytes(f, width);
  if (line > 0xFFFF) {
    throw std::invalid_argument("csi2::frame_packets: a line of " + std::to_string(line) +
                                " bytes does not fit a packet's 16-bit word count");
  }
  std::vector<std::uint8_t> out(frame_packet_bytes(f, width, height));
  std::uint8_t* o = out.data();
  const auto put_header = [&](data_type type, std::uint16_t word_count) {
    const auto h = encode_header({virtual_channel, type, word_count});
    for (const std::uint8_t b : h) *o++ = b;
  };
  put_header(data_type::frame_start, frame_number);
  for (std::size_t y = 0; y < height; ++y) {
    put_header(data_type_of(f), static_cast<std::uint16_t>(line));
    const std::span<std::uint8_t> payload(o, line);
    pack_line(f, pixels.subspan(y * width, width), payload);
    const std::uint16_t crc = crc16(payload);
    o += line;
    *o++ = static_cast<std::uint8_t>(crc & 0xFFU);
    *o++ = static_cast<std::uint8_t>(crc >> 8);
  }
  put_header(data_type::frame_end, frame_number);
  return out;
}

namespace {

/// Reads the header at `at`; counts corrections and corruption into `check`.
bool read_header(std::span<const std::uint8_t> stream, std::size_t at, frame_check& check,
                 packet_header& out) {
  if (at + 4 > stream.size()) {
    ++check.format_errors;  // the stream ends inside a header
    return false;
  }
  const decoded_header d = decode_header(std::span<const std::uint8_t, 4>(stream.data() + at, 4));
  if (d.status == header_status::corrupt) {
    ++check.corrupt_headers;
    return false;
  }
  if (d.status == header_status::corrected) ++check.corrected_headers;
  out = d.header;
  return true;
}

}  // namespace

frame_check parse_frame(std::span<const std::uint8_t> stream, raw_format f, std::size_t width,
                        std::size_t height, std::span<std::uint16_t> pixels) {
  if (pixels.size() != width * height) {
    throw std::invalid_argument("csi2::parse_frame: " + std::to_string(width) + "x" +
                                std::to_string(height) + " frame needs " +
                                std::to_string(width * height) + " pixels, the buffer has " +
                                std::to_string(pixels.size()));
  }
  const std::size_t line = line_bytes(f, width);
  if (stream.size() != frame_packet_bytes(f, width, height)) {
    frame_check wrong_size;
    wrong_size.format_errors = 1;
    return wrong_size;
  }
  frame_check check;
  packet_header h;
  if (read_header(stream, 0, check, h)) {
    if (h.type == data_type::frame_start && h.word_count != 0) {
      check.frame_number = h.word_count;
    } else {
      ++check.format_errors;
    }
  }
  std::size_t at = 4;
  for (std::size_t y = 0; y < height; ++y, at += 4 + line + 2) {
    if (!read_header(stream, at, check, h)) continue;
    if (h.type != data_type_of(f) || h.word_count != line) {
      ++check.format_errors;
      continue;
    }
    const std::span<const std::uint8_t> payload = stream.subspan(at + 4, line);
    const auto crc =
        static_cast<std::uint16_t>(stream[at + 4 + line] | stream[at + 4 + line + 1] << 8);
    if (crc != crc16(payload)) {
      ++check.crc_errors;
      continue;
    }
    unpack_line(f, payload, pixels.subspan(y * width, width));
    ++check.lines;
  }
  if (read_header(stream, at, check, h) &&
      (h.type != data_type::frame_end || h.word_count != check.frame_number)) {
    ++check.format_errors;
  }
  return check;
}

}  // namespace resident::io::csi2
