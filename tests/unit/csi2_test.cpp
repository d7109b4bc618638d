// CSI-2 packets: ECC and CRC against the CSI-2 definitions, RAW packing, whole frames.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "resident/io/csi2.hpp"

namespace resident::io::csi2 {
namespace {

using ::testing::HasSubstr;

std::vector<std::uint8_t> bytes_of(std::initializer_list<int> values) {
  std::vector<std::uint8_t> out;
  for (const int v : values) out.push_back(static_cast<std::uint8_t>(v));
  return out;
}

// The two checksum examples of the CSI-2 specification (24-byte payloads).
TEST(csi2_crc, matches_the_specification_examples) {
  EXPECT_EQ(
      crc16(bytes_of({0xFF, 0x00, 0x00, 0x02, 0xB9, 0xDC, 0xF3, 0x72, 0xBB, 0xD4, 0xB8, 0x5A,
                      0xC8, 0x75, 0xC2, 0x7C, 0x81, 0xF8, 0x05, 0xDF, 0xFF, 0x00, 0x00, 0x01})),
      0x00F0);
  EXPECT_EQ(
      crc16(bytes_of({0xFF, 0x00, 0x00, 0x00, 0x1E, 0xF0, 0x1E, 0xC7, 0x4F, 0x82, 0x78, 0xC5,
                      0x82, 0xE0, 0x8C, 0x70, 0xD2, 0x3C, 0x78, 0xE9, 0xFF, 0x00, 0x00, 0x01})),
      0xE569);
}

TEST(csi2_crc, any_flipped_bit_changes_it) {
  std::mt19937 rng(11);
  std::vector<std::uint8_t> payload(64);
  for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
  const std::uint16_t good = crc16(payload);
  for (std::size_t i = 0; i < payload.size() * 8; ++i) {
    payload[i / 8] ^= static_cast<std::uint8_t>(1U << (i % 8));
    EXPECT_NE(crc16(payload), good) << "bit " << i;
    payload[i / 8] ^= static_cast<std::uint8_t>(1U << (i % 8));
  }
}

// The parity equations of the CSI-2 header ECC, written out bit by bit (P0..P5).
std::uint8_t ecc_by_equations(std::uint32_t d) {
  const auto x = [&](std::initializer_list<int> bits) {
    unsigned v = 0;
    for (const int b : bits) v ^= (d >> b) & 1U;
    return v;
  };
  const unsigned p0 = x({0, 1, 2, 4, 5, 7, 10, 11, 13, 16, 20, 21, 22, 23});
  const unsigned p1 = x({0, 1, 3, 4, 6, 8, 10, 12, 14, 17, 20, 21, 22, 23});
  const unsigned p2 = x({0, 2, 3, 5, 6, 9, 11, 12, 15, 18, 20, 21, 22});
  const unsigned p3 = x({1, 2, 3, 7, 8, 9, 13, 14, 15, 19, 20, 21, 23});
  const unsigned p4 = x({4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 20, 22, 23});
  const unsigned p5 = x({10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23});
  return static_cast<std::uint8_t>(p0 | p1 << 1 | p2 << 2 | p3 << 3 | p4 << 4 | p5 << 5);
}

TEST(csi2_ecc, equals_the_parity_equations) {
  std::mt19937 rng(3);
  for (int i = 0; i < 10000; ++i) {
    const std::uint32_t d = rng() & 0xFFFFFFU;
    ASSERT_EQ(header_ecc(d), ecc_by_equations(d)) << std::hex << d;
  }
  EXPECT_EQ(header_ecc(0), 0);
}

TEST(csi2_header, round_trips) {
  const packet_header h{2, data_type::raw12, 5760};
  const auto bytes = encode_header(h);
  EXPECT_EQ(bytes[0], 2 << 6 | 0x2C);
  EXPECT_EQ(bytes[1], 5760 & 0xFF);
  EXPECT_EQ(bytes[2], 5760 >> 8);
  const decoded_header d = decode_header(bytes);
  EXPECT_EQ(d.status, header_status::ok);
  EXPECT_EQ(d.header, h);
}

TEST(csi2_header, one_flipped_bit_is_corrected_wherever_it_is) {
  const packet_header h{1, data_type::raw10, 2400};
  const auto good = encode_header(h);
  for (int bit = 0; bit < 30; ++bit) {  // 24 data bits and the 6 parity bits
    auto bad = good;
    bad[static_cast<std::size_t>(bit / 8)] ^= static_cast<std::uint8_t>(1U << (bit % 8));
    const decoded_header d = decode_header(bad);
    EXPECT_EQ(d.status, header_status::corrected) << "bit " << bit;
    EXPECT_EQ(d.header, h) << "bit " << bit;
  }
}

TEST(csi2_header, two_flipped_bits_are_caught) {
  const auto good = encode_header({0, data_type::raw12, 5760});
  for (int a = 0; a < 30; ++a) {
    for (int b = a + 1; b < 30; ++b) {
      auto bad = good;
      bad[static_cast<std::size_t>(a / 8)] ^= static_cast<std::uint8_t>(1U << (a % 8));
      bad[static_cast<std::size_t>(b / 8)] ^= static_cast<std::uint8_t>(1U << (b % 8));
      EXPECT_EQ(decode_header(bad).status, header_status::corrupt) << "bits " << a << ", " << b;
    }
  }
}

TEST(csi2_header, refuses_a_virtual_channel_above_3) {
  EXPECT_THROW((void)encode_header({4, data_type::raw8, 1}), std::invalid_argument);
}

// Worked by hand from the packing rules: high bits first, then the low bits of each pixel.
TEST(csi2_packing, raw10_puts_four_pixels_in_five_bytes) {
  const std::vector<std::uint16_t> px{0x3FF, 0x000, 0x155, 0x2AA};
  std::vector<std::uint8_t> out(line_bytes(raw_format::raw10, 4));
  ASSERT_EQ(out.size(), 5U);
  pack_line(raw_format::raw10, px, out);
  EXPECT_EQ(out, bytes_of({0xFF, 0x00, 0x55, 0xAA, 0x93}));  // low bits 11, 00, 01, 10
}

TEST(csi2_packing, raw12_puts_two_pixels_in_three_bytes) {
  const std::vector<std::uint16_t> px{0xABC, 0x123};
  std::vector<std::uint8_t> out(line_bytes(raw_format::raw12, 2));
  pack_line(raw_format::raw12, px, out);
  EXPECT_EQ(out, bytes_of({0xAB, 0x12, 0x3C}));
}

TEST(csi2_packing, every_format_round_trips) {
  std::mt19937 rng(5);
  for (const raw_format f : {raw_format::raw8, raw_format::raw10, raw_format::raw12}) {
    std::vector<std::uint16_t> px(1920);
    for (auto& p : px) p = static_cast<std::uint16_t>(rng() & ((1U << static_cast<int>(f)) - 1));
    std::vector<std::uint8_t> packed(line_bytes(f, px.size()));
    pack_line(f, px, packed);
    std::vector<std::uint16_t> back(px.size());
    unpack_line(f, packed, back);
    EXPECT_EQ(back, px) << "RAW" << static_cast<int>(f);
  }
  EXPECT_EQ(line_bytes(raw_format::raw8, 1920), 1920U);
  EXPECT_EQ(line_bytes(raw_format::raw10, 1920), 2400U);
  EXPECT_EQ(line_bytes(raw_format::raw12, 3840), 5760U);
}

TEST(csi2_packing, bad_input_is_a_clear_error) {
  std::vector<std::uint8_t> out(5);
  EXPECT_THAT([&] { (void)line_bytes(raw_format::raw10, 6); },
              ::testing::ThrowsMessage<std::invalid_argument>(
                  HasSubstr("RAW10 line must be a positive multiple of 4 pixels, got 6")));
  const std::vector<std::uint16_t> too_big{0x400, 0, 0, 0};
  EXPECT_THAT([&] { pack_line(raw_format::raw10, too_big, out); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("pixel 0 is 1024")));
  std::vector<std::uint8_t> short_out(4);
  EXPECT_THAT([&] { pack_line(raw_format::raw10, std::vector<std::uint16_t>(4), short_out); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("takes 5 bytes")));
}

TEST(csi2_frame, is_frame_start_lines_with_checked_payloads_then_frame_end) {
  constexpr std::size_t w = 8;
  constexpr std::size_t h = 3;
  std::vector<std::uint16_t> px(w * h);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<std::uint16_t>(i * 97 % 4096);
  const auto stream = frame_packets(raw_format::raw12, w, h, px, 42, 1);
  ASSERT_EQ(stream.size(), frame_packet_bytes(raw_format::raw12, w, h));
  ASSERT_EQ(stream.size(), 4U + h * (4 + 12 + 2) + 4);
  const auto header_at = [&](std::size_t at) {
    return decode_header(std::span<const std::uint8_t, 4>(stream.data() + at, 4));
  };
  EXPECT_EQ(header_at(0).header, (packet_header{1, data_type::frame_start, 42}));
  std::size_t at = 4;
  for (std::size_t y = 0; y < h; ++y) {
    const decoded_header d = header_at(at);
    ASSERT_EQ(d.status, header_status::ok);
    ASSERT_EQ(d.header, (packet_header{1, data_type::raw12, 12}));
    const std::span<const std::uint8_t> payload(stream.data() + at + 4, 12);
    const std::uint16_t crc = static_cast<std::uint16_t>(stream[at + 16] | stream[at + 17] << 8);
    EXPECT_EQ(crc, crc16(payload)) << "line " << y;
    std::vector<std::uint16_t> line(w);
    unpack_line(raw_format::raw12, payload, line);
    EXPECT_EQ(line, std::vector<std::uint16_t>(px.begin() + static_cast<long>(y * w),
                                               px.begin() + static_cast<long>((y + 1) * w)));
    at += 18;
  }
  EXPECT_EQ(header_at(at).header, (packet_header{1, data_type::frame_end, 42}));
}

TEST(csi2_frame, refuses_a_wrong_pixel_count_and_frame_number_zero) {
  const std::vector<std::uint16_t> px(16);
  EXPECT_THROW((void)frame_packets(raw_format::raw8, 4, 3, px, 1), std::invalid_argument);
  EXPECT_THROW((void)frame_packets(raw_format::raw8, 4, 4, px, 0), std::invalid_argument);
  EXPECT_NO_THROW((void)frame_packets(raw_format::raw8, 4, 4, px, 1));
}

}  // namespace
}  // namespace resident::io::csi2

namespace resident::io::csi2 {
namespace {

struct received {
  std::vector<std::uint16_t> sent;
  std::vector<std::uint8_t> stream;
};
received a_frame(raw_format f, std::size_t w, std::size_t h) {
  received r;
  std::mt19937 rng(17);
  r.sent.resize(w * h);
  for (auto& p : r.sent) p = static_cast<std::uint16_t>(rng() & ((1U << static_cast<int>(f)) - 1));
  r.stream = frame_packets(f, w, h, r.sent, 7);
  return r;
}

TEST(csi2_parse, an_intact_frame_comes_back_bit_exact) {
  for (const raw_format f : {raw_format::raw8, raw_format::raw10, raw_format::raw12}) {
    const received r = a_frame(f, 16, 6);
    std::vector<std::uint16_t> got(16 * 6);
    const frame_check c = parse_frame(r.stream, f, 16, 6, got);
    EXPECT_TRUE(c.complete(6));
    EXPECT_EQ(c.frame_number, 7);
    EXPECT_EQ(got, r.sent);
  }
}

TEST(csi2_parse, a_flipped_payload_bit_is_a_crc_error_and_its_line_is_not_taken) {
  received r = a_frame(raw_format::raw10, 16, 4);
  const std::size_t line = line_bytes(raw_format::raw10, 16);
  r.stream[4 + 2 * (4 + line + 2) + 4 + 3] ^= 0x10;  // line 2, payload byte 3
  std::vector<std::uint16_t> got(16 * 4, 0xFFFF);
  const frame_check c = parse_frame(r.stream, raw_format::raw10, 16, 4, got);
  EXPECT_FALSE(c.complete(4));
  EXPECT_EQ(c.crc_errors, 1U);
  EXPECT_EQ(c.lines, 3U);
  EXPECT_EQ(got[2 * 16], 0xFFFF) << "the corrupt line's row is left untouched";
  EXPECT_EQ(got[3 * 16], r.sent[3 * 16]);
}

TEST(csi2_parse, header_errors_are_corrected_or_counted) {
  received r = a_frame(raw_format::raw12, 8, 4);
  const std::size_t stride = 4 + line_bytes(raw_format::raw12, 8) + 2;
  r.stream[4 + 1 * stride + 1] ^= 0x04;  // line 1: one bit of the word count
  r.stream[4 + 3 * stride] ^= 0x03;      // line 3: two bits of the data identifier
  std::vector<std::uint16_t> got(8 * 4);
  const frame_check c = parse_frame(r.stream, raw_format::raw12, 8, 4, got);
  EXPECT_EQ(c.corrected_headers, 1U);
  EXPECT_EQ(c.corrupt_headers, 1U);
  EXPECT_EQ(c.lines, 3U);
  EXPECT_FALSE(c.complete(4));
}

TEST(csi2_parse, a_truncated_stream_or_wrong_format_is_a_format_error) {
  const received r = a_frame(raw_format::raw10, 8, 2);
  std::vector<std::uint16_t> got(8 * 2);
  const std::span<const std::uint8_t> cut(r.stream.data(), r.stream.size() - 1);
  EXPECT_EQ(parse_frame(cut, raw_format::raw10, 8, 2, got).format_errors, 1U);
  // Read as RAW12 the sizes disagree; as RAW8 with the RAW10 line length, the type does.
  EXPECT_FALSE(parse_frame(r.stream, raw_format::raw12, 8, 2, got).complete(2));
  std::vector<std::uint16_t> wide(10 * 2);
  EXPECT_GT(parse_frame(r.stream, raw_format::raw8, 10, 2, wide).format_errors, 0U);
}

}  // namespace
}  // namespace resident::io::csi2

namespace resident::io::csi2 {
namespace {
TEST(csi2, header_ecc_of_each_single_bit_is_its_column) {
  for (std::size_t bit = 0; bit < 24; ++bit) {
    EXPECT_EQ(header_ecc(1U << bit), ecc_columns[bit]) << "bit " << bit;
  }
}
}  // namespace
}  // namespace resident::io::csi2

namespace resident::io::csi2 {
namespace {
TEST(csi2, raw_formats_have_the_names_configurations_use) {
  std::vector<std::string_view> names;
  for (const auto f : all_raw_formats) names.push_back(to_string(f));
  EXPECT_EQ(names, (std::vector<std::string_view>{"raw8", "raw10", "raw12"}));
}
}  // namespace
}  // namespace resident::io::csi2
