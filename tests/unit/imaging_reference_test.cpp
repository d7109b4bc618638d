// The CPU demosaic references: exact on flat colour and on linear ramps, every Bayer order,
// and Malvar-He-Cutler ahead of bilinear where the colour channels are correlated.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "resident/imaging/reference.hpp"
#include "resident/io/csi2.hpp"
#include "resident/ops/imaging.hpp"
#include "resident/ops/imaging/convert_resize.hpp"
#include "resident/ops/imaging/csi2_math.hpp"
#include "resident/ops/imaging/demosaic_math.hpp"
#include "resident/ops/imaging/isp_math.hpp"
#include "resident/ops/vector_ops.hpp"
#include "test_operators.hpp"

namespace resident::imaging::reference {
namespace {

constexpr io::bayer_order all_orders[] = {io::bayer_order::rggb, io::bayer_order::bggr,
                                          io::bayer_order::grbg, io::bayer_order::gbrg};

using colour_fn = std::function<float(int c, std::uint32_t x, std::uint32_t y)>;

/// The raw frame a sensor with this filter would record of `colour`, and the truth.
struct scene {
  std::vector<std::uint16_t> raw;
  std::vector<float> truth;
};
scene sample(std::uint32_t w, std::uint32_t h, io::bayer_order order, const colour_fn& colour) {
  scene s;
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) s.truth.push_back(colour(c, x, y));
      s.raw.push_back(static_cast<std::uint16_t>(colour(io::bayer_channel(order, x, y), x, y)));
    }
  }
  return s;
}

TEST(demosaic_reference, flat_colour_is_reconstructed_exactly_everywhere) {
  const colour_fn flat = [](int c, std::uint32_t, std::uint32_t) {
    return std::array<float, 3>{900.0F, 2000.0F, 450.0F}[static_cast<std::size_t>(c)];
  };
  for (const auto order : all_orders) {
    const scene s = sample(8, 6, order, flat);
    EXPECT_EQ(demosaic_bilinear(s.raw, 8, 6, order, 4095.0F), s.truth);
    EXPECT_EQ(demosaic_malvar(s.raw, 8, 6, order, 4095.0F), s.truth);
  }
}

TEST(demosaic_reference, a_linear_ramp_is_exact_away_from_the_borders) {
  // Linear in x and y, equal in every channel: both methods interpolate it exactly.
  const colour_fn ramp = [](int, std::uint32_t x, std::uint32_t y) {
    return 100.0F + 8.0F * static_cast<float>(x) + 4.0F * static_cast<float>(y);
  };
  constexpr std::uint32_t w = 16;
  constexpr std::uint32_t h = 12;
  for (const auto order : all_orders) {
    const scene s = sample(w, h, order, ramp);
    const auto bilinear = demosaic_bilinear(s.raw, w, h, order, 4095.0F);
    const auto malvar = demosaic_malvar(s.raw, w, h, order, 4095.0F);
    for (std::uint32_t y = 2; y + 2 < h; ++y) {
      for (std::uint32_t x = 2; x + 2 < w; ++x) {
        for (int c = 0; c < 3; ++c) {
          const std::size_t i = (std::size_t{y} * w + x) * 3 + static_cast<std::size_t>(c);
          ASSERT_FLOAT_EQ(bilinear[i], s.truth[i]) << x << "," << y << " c" << c;
          ASSERT_FLOAT_EQ(malvar[i], s.truth[i]) << x << "," << y << " c" << c;
        }
      }
    }
  }
}

TEST(demosaic_reference, malvar_beats_bilinear_on_correlated_detail) {
  // Fine grey detail (all channels equal): the green Laplacian tells red and blue what they
  // missed, which is the point of Malvar-He-Cutler.
  const colour_fn detail = [](int, std::uint32_t x, std::uint32_t y) {
    return std::round(2000.0F + 1200.0F * std::sin(0.9F * static_cast<float>(x)) *
                                    std::cos(0.7F * static_cast<float>(y)));
  };
  for (const auto order : all_orders) {
    const scene s = sample(64, 48, order, detail);
    const double bilinear = psnr(demosaic_bilinear(s.raw, 64, 48, order, 4095.0F), s.truth, 4095);
    const double malvar = psnr(demosaic_malvar(s.raw, 64, 48, order, 4095.0F), s.truth, 4095);
    EXPECT_GT(malvar, bilinear + 3.0) << "bilinear " << bilinear << " dB, malvar " << malvar;
  }
}

TEST(demosaic_reference, results_are_clamped_to_the_range) {
  // A bright dot on black makes Malvar's negative lobes undershoot: clamped at 0.
  std::vector<std::uint16_t> raw(8 * 8, 0);
  raw[3 * 8 + 3] = 4000;
  for (const float v : demosaic_malvar(raw, 8, 8, io::bayer_order::rggb, 1000.0F)) {
    EXPECT_GE(v, 0.0F);
    EXPECT_LE(v, 1000.0F);
  }
}

TEST(demosaic_reference, odd_or_mismatched_frames_are_refused) {
  const std::vector<std::uint16_t> raw(12);
  EXPECT_THROW((void)demosaic_bilinear(raw, 3, 4, io::bayer_order::rggb, 255),
               std::invalid_argument);
  EXPECT_THROW((void)demosaic_malvar(raw, 4, 4, io::bayer_order::rggb, 255), std::invalid_argument);
}

TEST(psnr, is_infinite_for_equal_signals_and_follows_the_mse) {
  const std::vector<float> a{0, 10, 20, 30};
  EXPECT_EQ(psnr(a, a, 255), std::numeric_limits<double>::infinity());
  const std::vector<float> b{1, 11, 21, 31};  // MSE 1
  EXPECT_NEAR(psnr(b, a, 255), 20.0 * std::log10(255.0), 1e-9);
  EXPECT_THROW((void)psnr(a, std::vector<float>(3), 255), std::invalid_argument);
}

// ---- output formats --------------------------------------------------------------------------

TEST(demosaic_outputs, scale_to_full_range_with_an_opaque_alpha) {
  const rgb_planes rgb{0.0F, 2047.5F, 4095.0F, 1.0F, 2.0F, 3.0F};  // two pixels
  EXPECT_EQ(to_rgba16(rgb, 4095.0F),
            (std::vector<std::uint16_t>{0, 32768, 65535, 65535, 16, 32, 48, 65535}));
  EXPECT_EQ(to_rgba8(rgb, 4095.0F), (std::vector<std::uint8_t>{0, 128, 255, 255, 0, 0, 0, 255}));
  const auto planar = to_planar(rgb, 2, 1, 4095.0F);
  ASSERT_EQ(planar.size(), 6U);
  EXPECT_FLOAT_EQ(planar[0], 0.0F);         // R of pixel 0
  EXPECT_FLOAT_EQ(planar[1], 1.0F / 4095);  // R of pixel 1
  EXPECT_FLOAT_EQ(planar[4], 1.0F);         // B of pixel 0
}

// ---- the demosaic kernel's arithmetic ---------------------------------------------------------

/// The demosaic kernel's computation, cell by cell on the host: the mirrored 6x6 neighbourhood,
/// the integer filters, the clamp. It must give the references' values exactly.
rgb_planes kernel_arithmetic(const std::vector<std::uint16_t>& raw, int w, int h,
                             io::bayer_order order, bool malvar, int max) {
  namespace dm = ops::imaging::demosaic_math;
  rgb_planes out(static_cast<std::size_t>(w) * h * 3);
  for (int cy = 0; cy < h; cy += 2) {
    for (int cx = 0; cx < w; cx += 2) {
      dm::neighbourhood n{};
      for (int r = 0; r < 6; ++r) {
        for (int c = 0; c < 6; ++c) {
          n.n[r][c] = raw[static_cast<std::size_t>(dm::mirror(cy - 2 + r, h) * w +
                                                   dm::mirror(cx - 2 + c, w))];
        }
      }
      for (int py = 0; py < 2; ++py) {
        for (int px = 0; px < 2; ++px) {
          int rgb[3];
          dm::pixel_rgb(n, px, py, dm::red_x(order), dm::red_y(order), malvar, rgb);
          for (int c = 0; c < 3; ++c) {
            out[(static_cast<std::size_t>(cy + py) * w + cx + px) * 3 + c] =
                static_cast<float>(std::clamp(rgb[c], 0, 16 * max)) / 16.0F;
          }
        }
      }
    }
  }
  return out;
}

TEST(demosaic_math, the_kernels_integer_filters_equal_the_references_exactly) {
  std::mt19937 rng(19);
  for (const auto& [w, h] :
       {std::pair{64, 48}, std::pair{2, 2}, std::pair{6, 4}, std::pair{10, 14}}) {
    std::vector<std::uint16_t> raw(static_cast<std::size_t>(w) * h);
    for (auto& v : raw) v = static_cast<std::uint16_t>(rng() % 4096);
    for (const auto order : all_orders) {
      const auto uw = static_cast<std::uint32_t>(w);
      const auto uh = static_cast<std::uint32_t>(h);
      EXPECT_EQ(kernel_arithmetic(raw, w, h, order, true, 4095),
                demosaic_malvar(raw, uw, uh, order, 4095.0F))
          << w << "x" << h << " order " << static_cast<int>(order);
      EXPECT_EQ(kernel_arithmetic(raw, w, h, order, false, 4095),
                demosaic_bilinear(raw, uw, uh, order, 4095.0F))
          << w << "x" << h << " order " << static_cast<int>(order);
    }
  }
}

// ---- CSI-2 arithmetic shared with the reconstruction kernel -----------------------------------

std::vector<std::uint8_t> random_bytes(std::mt19937& rng, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

std::uint16_t crc0(std::span<const std::uint8_t> bytes) {
  std::uint16_t crc = 0;
  for (const auto b : bytes) crc = io::csi2::crc16_update(crc, b);
  return crc;
}

namespace math = ops::imaging::csi2_math;

TEST(csi2_math, shift_equals_feeding_zero_bytes) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const auto crc = static_cast<std::uint16_t>(rng());
    const std::uint64_t n = rng() % 3000;
    std::uint16_t fed = crc;
    for (std::uint64_t i = 0; i < n; ++i) fed = io::csi2::crc16_update(fed, 0);
    EXPECT_EQ(math::crc16_shift(crc, n), fed) << "crc " << crc << ", " << n << " bytes";
  }
  EXPECT_EQ(math::crc16_shift(0x1234, 0), 0x1234);
  static_assert(math::crc16_multiply(math::crc16_one, 0xBEEF) == 0xBEEF);
}

TEST(csi2_math, combine_joins_two_parts_and_the_seed_is_a_shifted_term) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const auto a = random_bytes(rng, rng() % 200);
    const auto b = random_bytes(rng, rng() % 200);
    std::vector<std::uint8_t> ab = a;
    ab.insert(ab.end(), b.begin(), b.end());
    EXPECT_EQ(math::crc16_combine(crc0(a), crc0(b), b.size()), crc0(ab));
    EXPECT_EQ(math::crc16_shift(io::csi2::crc16_seed, ab.size()) ^ crc0(ab), io::csi2::crc16(ab));
  }
}

TEST(csi2_math, chunk_terms_in_any_order_give_the_line_crc) {
  // The kernel's way: every 8-pixel chunk's zero-seed CRC times x^(8 * bytes after it), XORed
  // together with the seed's term; a RAW10 line with a partial last chunk.
  std::mt19937 rng(7);
  const std::size_t width = 1924;  // 240 full chunks and one of 4 pixels
  const auto line = random_bytes(rng, io::csi2::line_bytes(io::csi2::raw_format::raw10, width));
  const std::size_t chunk = 10;
  std::uint16_t crc = math::crc16_shift(io::csi2::crc16_seed, line.size());
  std::vector<std::size_t> order((line.size() + chunk - 1) / chunk);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (const std::size_t j : order) {
    const std::size_t end = std::min((j + 1) * chunk, line.size());
    const auto part = std::span<const std::uint8_t>(line).subspan(j * chunk, end - j * chunk);
    crc ^= math::crc16_multiply(crc0(part), math::crc16_zero_bytes_factor(line.size() - end));
  }
  EXPECT_EQ(crc, io::csi2::crc16(line));
}

TEST(csi2_math, header_decoding_matches_the_host_receiver_for_zero_one_and_two_flips) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 3000; ++trial) {
    const io::csi2::packet_header h{static_cast<std::uint8_t>(rng() % 4),
                                    static_cast<io::csi2::data_type>(rng() % 64),
                                    static_cast<std::uint16_t>(rng())};
    auto bytes = io::csi2::encode_header(h);
    const int flips = trial % 3;
    for (int f = 0; f < flips; ++f) {
      const unsigned bit = rng() % 30;  // 24 data bits and the 6 ECC bits
      bytes[bit / 8] ^= static_cast<std::uint8_t>(1U << (bit % 8));
    }
    const auto want = io::csi2::decode_header(std::span<const std::uint8_t, 4>(bytes));
    const auto got = math::decode_header(bytes[0], bytes[1], bytes[2], bytes[3]);
    ASSERT_EQ(static_cast<int>(got.check), static_cast<int>(want.status)) << "trial " << trial;
    if (want.status != io::csi2::header_status::corrupt) {
      EXPECT_EQ(got.data_type, static_cast<std::uint8_t>(want.header.type));
      EXPECT_EQ(got.word_count, want.header.word_count);
    }
  }
}

TEST(csi2_math, unpacking_a_group_inverts_pack_line) {
  std::mt19937 rng(11);
  for (const auto f :
       {io::csi2::raw_format::raw8, io::csi2::raw_format::raw10, io::csi2::raw_format::raw12}) {
    const unsigned bits = static_cast<unsigned>(f);
    std::vector<std::uint16_t> pixels(64);
    for (auto& p : pixels) p = static_cast<std::uint16_t>(rng() & ((1U << bits) - 1));
    std::vector<std::uint8_t> packed(io::csi2::line_bytes(f, pixels.size()));
    io::csi2::pack_line(f, pixels, packed);
    const unsigned gp = math::group_pixels(bits);
    const unsigned gb = math::group_bytes(bits);
    for (std::size_t i = 0; i < pixels.size(); ++i) {
      ASSERT_EQ(math::unpack_pixel(bits, packed.data() + i / gp * gb, i % gp), pixels[i])
          << "RAW" << bits << " pixel " << i;
    }
  }
}

/// The reconstruction kernel's decisions on the host: every line's verdict from its packet and
/// the CRC of its chunk terms (8 pixels a chunk), then the frame start and end.
math::frame_counts kernel_decisions(const std::vector<std::uint8_t>& stream, io::csi2::raw_format f,
                                    std::size_t width, std::size_t height,
                                    std::uint16_t expected_number) {
  const std::size_t line = io::csi2::line_bytes(f, width);
  const std::size_t chunk = 8 / math::group_pixels(static_cast<unsigned>(f)) *
                            math::group_bytes(static_cast<unsigned>(f));
  math::frame_counts counts;
  for (std::size_t y = 0; y < height; ++y) {
    const std::uint8_t* packet = stream.data() + 4 + y * (line + 6);
    std::uint16_t crc = math::crc16_shift(io::csi2::crc16_seed, line);
    for (std::size_t at = 0; at < line; at += chunk) {
      const std::size_t end = std::min(at + chunk, line);
      crc ^= math::crc16_multiply(crc0({packet + 4 + at, end - at}),
                                  math::crc16_zero_bytes_factor(line - end));
    }
    const auto type = static_cast<std::uint8_t>(io::csi2::data_type_of(f));
    const auto bytes = static_cast<std::uint32_t>(line);
    const std::uint8_t verdict = math::line_verdict(packet, type, bytes, crc);
    // The fused pass reads the header and the footer before it judges (camera_isp's batch of
    // lines): the same verdict from the decoded header and the footer read whatever it says.
    const std::uint8_t* footer = packet + 4 + line;
    EXPECT_EQ(math::line_verdict_of(math::decode_header(packet[0], packet[1], packet[2], packet[3]),
                                    static_cast<std::uint16_t>(footer[0] | footer[1] << 8), type,
                                    bytes, crc),
              verdict)
        << "line " << y;
    counts.add(verdict);
  }
  math::check_frame_ends(stream.data(), stream.data() + stream.size() - 4, expected_number, counts);
  return counts;
}

TEST(csi2_math, the_kernels_decisions_count_what_parse_frame_counts_on_random_corruption) {
  std::mt19937 rng(23);
  for (const auto f :
       {io::csi2::raw_format::raw8, io::csi2::raw_format::raw10, io::csi2::raw_format::raw12}) {
    constexpr std::size_t w = 36;  // RAW10 and RAW12: a partial last chunk
    constexpr std::size_t h = 6;
    std::vector<std::uint16_t> pixels(w * h);
    for (auto& p : pixels)
      p = static_cast<std::uint16_t>(rng() & ((1U << static_cast<unsigned>(f)) - 1));
    const auto clean = io::csi2::frame_packets(f, w, h, pixels, 7);
    for (int trial = 0; trial < 400; ++trial) {
      auto stream = clean;
      const int flips = 1 + trial % 3;
      for (int i = 0; i < flips; ++i) {
        const std::size_t bit = rng() % (stream.size() * 8);
        stream[bit / 8] ^= static_cast<std::uint8_t>(1U << (bit % 8));
      }
      std::vector<std::uint16_t> out(w * h);
      const io::csi2::frame_check want = io::csi2::parse_frame(stream, f, w, h, out);
      // The kernel also holds the frame start against the bridge's counter (here 7).
      const bool other_number = want.frame_number != 0 && want.frame_number != 7;
      const math::frame_counts got = kernel_decisions(stream, f, w, h, 7);
      ASSERT_EQ(got.lines, want.lines) << "trial " << trial;
      ASSERT_EQ(got.corrected_headers, want.corrected_headers) << "trial " << trial;
      ASSERT_EQ(got.corrupt_headers, want.corrupt_headers) << "trial " << trial;
      ASSERT_EQ(got.crc_errors, want.crc_errors) << "trial " << trial;
      ASSERT_EQ(got.format_errors, want.format_errors + (other_number ? 1U : 0U))
          << "trial " << trial;
    }
  }
}

// ---- raw ISP ----------------------------------------------------------------------------------

namespace isp = ops::imaging::isp_math;

TEST(isp_math, bins_span_the_range_above_black) {
  EXPECT_EQ(isp::bin_of(0, 256, 4095), 0U);
  EXPECT_EQ(isp::bin_of(256, 256, 4095), 0U);
  EXPECT_EQ(isp::bin_of(4095, 256, 4095), 255U);
  EXPECT_EQ(isp::bin_of(65535, 256, 4095), 255U);  // above full scale: the top bin
  EXPECT_EQ(isp::bin_of(256 + 3840 / 2, 256, 4095), 128U);
}

TEST(isp_math, the_fixed_point_step_is_within_one_lsb_of_the_real_formula) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::uint32_t black = rng() % 400;
    const double gain = 0.25 + (rng() % 1000) / 250.0;
    const std::uint32_t v = rng() % 4096;
    const std::uint64_t m = isp::multiplier_q16(gain, black, 4095);
    const double real = std::clamp(
        (static_cast<double>(v) - black) * gain * 4095.0 / (4095.0 - black), 0.0, 4095.0);
    EXPECT_NEAR(isp::correct(v, black, m, 4095), real, 1.0) << v << " " << black << " " << gain;
  }
}

TEST(isp_math, grey_world_gain_is_the_ratio_of_means_and_one_for_an_empty_channel) {
  // Green mean 100 (10 samples), red mean 50 (4 samples): gain 2.
  EXPECT_DOUBLE_EQ(isp::grey_world_gain(200, 4, 1000, 10), 2.0);
  EXPECT_DOUBLE_EQ(isp::grey_world_gain(0, 0, 1000, 10), 1.0);
  EXPECT_DOUBLE_EQ(isp::grey_world_gain(0, 7, 1000, 10), 1.0);  // black channel
  EXPECT_DOUBLE_EQ(isp::grey_world_gain(1, 1000, 1000, 10), isp::max_gain);
}

TEST(raw_isp_reference, grey_world_balances_a_colour_cast) {
  // A grey scene seen with red at half and blue at three quarters of green's response.
  constexpr std::uint32_t w = 64;
  constexpr std::uint32_t h = 48;
  std::mt19937 rng(17);
  std::vector<std::uint16_t> raw(w * h);
  const double response[3] = {0.5, 1.0, 0.75};
  std::vector<double> cell_grey(w * h / 4);  // one grey per 2x2 cell: every channel sees it
  for (auto& g : cell_grey) g = 400 + rng() % 2400;
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      const double grey = cell_grey[y / 2 * (w / 2) + x / 2];
      raw[y * w + x] = static_cast<std::uint16_t>(
          256 + grey * response[io::bayer_channel(io::bayer_order::grbg, x, y)]);
    }
  }
  const isp_result r = raw_isp(raw, w, h, io::bayer_order::grbg, 12, 256, true);
  std::uint64_t total = 0;
  for (const auto n : r.histogram) total += n;
  EXPECT_EQ(total, std::uint64_t{w} * h);
  EXPECT_NEAR(r.gains[0], 2.0, 0.05);
  EXPECT_DOUBLE_EQ(r.gains[1], 1.0);
  EXPECT_NEAR(r.gains[2], 4.0 / 3.0, 0.05);
  double mean[3] = {0, 0, 0};
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      mean[io::bayer_channel(io::bayer_order::grbg, x, y)] += r.raw[y * w + x];
    }
  }
  EXPECT_NEAR(mean[0] / (w * h / 4), mean[1] / (w * h / 2), mean[1] / (w * h / 2) * 0.03);
  EXPECT_NEAR(mean[2] / (w * h / 4), mean[1] / (w * h / 2), mean[1] / (w * h / 2) * 0.03);
}

TEST(raw_isp_reference, without_white_balance_it_removes_black_and_stretches_the_range) {
  const std::vector<std::uint16_t> raw{0, 256, 4095, 2175};  // 2175 = 256 + 3839 / 2
  const isp_result r = raw_isp(raw, 2, 2, io::bayer_order::rggb, 12, 256, false);
  EXPECT_EQ(r.gains, (std::array<double, 3>{1.0, 1.0, 1.0}));
  EXPECT_EQ(r.raw[0], 0);
  EXPECT_EQ(r.raw[1], 0);
  EXPECT_EQ(r.raw[2], 4095);
  EXPECT_NEAR(r.raw[3], 2048, 1);
  EXPECT_THROW((void)raw_isp(raw, 2, 2, io::bayer_order::rggb, 12, 4095, false),
               std::invalid_argument);
}

// ---- bilinear resize --------------------------------------------------------------------------

TEST(raw_isp_reference, correct_raw_with_the_frames_own_multipliers_is_the_isp) {
  constexpr std::uint32_t w = 16;
  constexpr std::uint32_t h = 8;
  std::vector<std::uint16_t> raw(w * h);
  for (std::size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<std::uint16_t>(200 + i * 29 % 3800);
  const isp_result isp = raw_isp(raw, w, h, io::bayer_order::gbrg, 12, 256, true);
  EXPECT_EQ(correct_raw(raw, w, h, io::bayer_order::gbrg, 12, 256, isp.multipliers), isp.raw);
  // Another frame's gains give another image (the previous-frame statistics' reference).
  const std::array<std::uint64_t, 3> unity{isp.multipliers[1], isp.multipliers[1],
                                           isp.multipliers[1]};
  EXPECT_NE(correct_raw(raw, w, h, io::bayer_order::gbrg, 12, 256, unity), isp.raw);
  EXPECT_THROW((void)correct_raw(raw, w, h + 2, io::bayer_order::gbrg, 12, 256, unity),
               std::invalid_argument);
}

TEST(resize_reference, same_size_is_the_identity_and_halving_averages_pairs) {
  const std::vector<double> in{0, 10, 20, 30, 40, 50, 60, 70};  // 4x2, one channel
  EXPECT_EQ(resize_bilinear(in, 4, 2, 1, 4, 2), in);
  EXPECT_EQ(resize_bilinear(in, 4, 2, 1, 2, 1), (std::vector<double>{25, 45}));
}

TEST(resize_reference, a_linear_ramp_stays_linear_inside_and_edges_repeat) {
  std::vector<double> in;
  for (int x = 0; x < 10; ++x) in.push_back(3.0 * x);  // 10x1
  const auto up = resize_bilinear(in, 10, 1, 1, 20, 1);
  EXPECT_DOUBLE_EQ(up[0], 0.0);    // source -0.25, clamped to 0
  EXPECT_DOUBLE_EQ(up[19], 27.0);  // source 9.25: the last column repeats
  EXPECT_DOUBLE_EQ(up[5], 3.0 * 2.25);
}

TEST(resize_reference, the_kernel_source_positions_are_the_references) {
  for (const auto& [in, out] : {std::pair{1920U, 224U}, std::pair{3840U, 224U},
                                std::pair{224U, 224U}, std::pair{7U, 19U}}) {
    for (std::uint32_t i = 0; i < out; ++i) {
      const auto tap = ops::imaging::detail::resize_source(i, in, out);
      const double src = std::max(0.0, (i + 0.5) * in / out - 0.5);
      ASSERT_NEAR(tap.i0 + tap.weight, src, 1e-12) << in << "->" << out;
      ASSERT_LT(tap.i1, in);
    }
  }
}

TEST(resize_reference, normalize_planar_applies_mean_and_std_per_plane) {
  const std::vector<double> rgba{65535, 0, 32767.5, 65535};  // one pixel
  const auto p =
      normalize_planar(rgba, 1, 1, 4, 65535.0, {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225});
  ASSERT_EQ(p.size(), 3U);
  EXPECT_NEAR(p[0], (1.0 - 0.485) / 0.229, 1e-6);
  EXPECT_NEAR(p[1], (0.0 - 0.456) / 0.224, 1e-6);
  EXPECT_NEAR(p[2], (0.5 - 0.406) / 0.225, 1e-6);
}

// ---- the operators compose (CPU only: setup() and planning) -----------------------------------

TEST(imaging_operators, the_camera_chain_composes_with_matching_image_ports) {
  test::test_app app([](test::test_app& t) {
    namespace img = ops::imaging;
    const auto size = [](const char* n, std::int64_t v) { return arg(n, v); };
    auto csi2 = t.make_operator<img::csi2_reconstruct>("csi2", arg("order", "gbrg"),
                                                       arg("format", "raw10"));
    auto isp = t.make_operator<img::raw_isp>("isp", arg("order", "gbrg"));
    auto dem = t.make_operator<img::demosaic>("demosaic", arg("order", "gbrg"));
    auto resize = t.make_operator<img::convert_resize>("resize", size("in_width", 1920),
                                                       size("in_height", 1080));
    auto frames = t.make_operator<ops::external_source>("frames", nullptr, sizeof(io::frame_ref));
    t.add_flow(frames, csi2, {{"out", "frame"}});
    t.add_flow(csi2, isp, {{"bayer", "in"}});
    t.add_flow(isp, dem, {{"out", "bayer"}});
    t.add_flow(dem, resize, {{"rgb", "in"}});
  });
  ASSERT_NO_THROW((void)app.plan());
  const auto* rgb = app.find_operator("demosaic").spec().find_port("rgb");
  ASSERT_NE(rgb, nullptr);
  ASSERT_TRUE(rgb->image.has_value());
  EXPECT_EQ(*rgb->image, (image_desc{1920, 1080, pixel_format::rgba16, 0}));
  const auto* out = app.find_operator("resize").spec().find_port("out");
  EXPECT_EQ(out->bytes, 224U * 224 * 3 * sizeof(float));
  EXPECT_EQ(app.find_operator("csi2").spec().find_port("frame")->bytes, sizeof(io::frame_ref));
  EXPECT_EQ(app.find_operator("csi2").spec().find_port("integrity")->bytes,
            sizeof(io::frame_integrity));
}

TEST(imaging_operators, an_order_mismatch_between_stages_is_refused) {
  test::test_app app([](test::test_app& t) {
    auto isp = t.make_operator<ops::imaging::raw_isp>("isp", arg("order", "rggb"));
    auto dem = t.make_operator<ops::imaging::demosaic>("demosaic", arg("order", "bggr"));
    t.add_flow(isp, dem, {{"out", "bayer"}});
  });
  EXPECT_THAT(test::plan_error(app), ::testing::HasSubstr("bayer_bggr16"));
}

TEST(imaging_operators, bad_parameters_name_the_operator_and_the_parameter) {
  const auto error = [](auto make) {
    test::test_app app([&](test::test_app& t) { make(t); });
    return test::plan_error(app);
  };
  EXPECT_THAT(error([](test::test_app& t) {
                (void)t.make_operator<ops::imaging::csi2_reconstruct>(
                    "csi2", arg("format", "raw10"), arg("width", 1922));
              }),
              ::testing::AllOf(::testing::HasSubstr("'csi2'"), ::testing::HasSubstr("'width'")));
  EXPECT_THAT(error([](test::test_app& t) {
                (void)t.make_operator<ops::imaging::demosaic>("d", arg("algorithm", "vng"));
              }),
              ::testing::HasSubstr("parameter 'algorithm' must be malvar or bilinear, got 'vng'"));
  EXPECT_THAT(error([](test::test_app& t) {
                (void)t.make_operator<ops::imaging::raw_isp>("isp", arg("black_level", 4095));
              }),
              ::testing::HasSubstr("'black_level' must be in [0, 4095)"));
  EXPECT_THAT(error([](test::test_app& t) {
                (void)t.make_operator<ops::imaging::demosaic>("d", arg("width", 1919));
              }),
              ::testing::HasSubstr("'width' must be even"));
}

}  // namespace
}  // namespace resident::imaging::reference
