// The emulated sensor's mosaic: filter pattern, black level, colour cast, panning, LED marker.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "resident/io/bayer.hpp"

namespace resident::io {
namespace {

using ::testing::HasSubstr;

rgb8_image solid(std::uint32_t w, std::uint32_t h, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  rgb8_image img{w, h, std::vector<std::uint8_t>(std::size_t{w} * h * 3)};
  for (std::size_t i = 0; i < img.rgb.size(); i += 3) {
    img.rgb[i] = r;
    img.rgb[i + 1] = g;
    img.rgb[i + 2] = b;
  }
  return img;
}

TEST(bayer_channel, each_order_names_its_top_left_cell) {
  // Row by row: top-left, top-right, bottom-left, bottom-right.
  const auto cell = [](bayer_order o) {
    return std::array<int, 4>{bayer_channel(o, 0, 0), bayer_channel(o, 1, 0),
                              bayer_channel(o, 0, 1), bayer_channel(o, 1, 1)};
  };
  EXPECT_EQ(cell(bayer_order::rggb), (std::array<int, 4>{0, 1, 1, 2}));
  EXPECT_EQ(cell(bayer_order::bggr), (std::array<int, 4>{2, 1, 1, 0}));
  EXPECT_EQ(cell(bayer_order::grbg), (std::array<int, 4>{1, 0, 2, 1}));
  EXPECT_EQ(cell(bayer_order::gbrg), (std::array<int, 4>{1, 2, 0, 1}));
  EXPECT_EQ(bayer_channel(bayer_order::rggb, 6, 4), 0);  // the pattern repeats every 2 pixels
  EXPECT_EQ(bayer_channel(bayer_order::rggb, 7, 5), 2);
}

TEST(mosaic, samples_the_filtered_channel_above_the_black_level) {
  mosaic_options o;
  o.width = 4;
  o.height = 2;
  o.bits = 12;
  o.black_level = 256;
  const auto raw = mosaic(solid(3, 3, 255, 0, 51), o);  // red full, green 0, blue 20%
  const std::uint16_t span = 4095 - 256;
  EXPECT_EQ(raw[0], 256 + span);                                       // R site
  EXPECT_EQ(raw[1], 256);                                              // G site: black
  EXPECT_EQ(raw[5], 256 + static_cast<int>(std::lround(0.2 * span)));  // B site (1, 1)
}

TEST(mosaic, a_colour_cast_scales_one_channel_and_clips_at_full_scale) {
  mosaic_options o;
  o.width = 2;
  o.height = 2;
  o.bits = 10;
  o.black_level = 64;
  o.cast[0] = 2.0F;
  const auto raw = mosaic(solid(2, 2, 200, 100, 100), o);
  EXPECT_EQ(raw[0], 1023);  // 200/255 * 2 clips
  EXPECT_EQ(raw[1], 64 + std::lround(100.0 / 255.0 * (1023 - 64)));
}

TEST(mosaic, panning_shifts_the_photograph_and_wraps) {
  rgb8_image ramp{4, 2, {}};
  for (std::uint32_t y = 0; y < 2; ++y) {
    for (std::uint32_t x = 0; x < 4; ++x) {
      const auto v = static_cast<std::uint8_t>(10 * x + 100 * y);
      ramp.rgb.insert(ramp.rgb.end(), {v, v, v});
    }
  }
  mosaic_options o;
  o.width = 4;
  o.height = 2;
  o.bits = 8;
  o.black_level = 0;
  o.pan_x = 1;
  const auto raw = mosaic(ramp, o);
  EXPECT_EQ(raw[0], 10);  // x 0 shows the photograph's x 1
  EXPECT_EQ(raw[3], 0);   // x 3 wraps to x 0
  EXPECT_EQ(raw[4], 110);
}

TEST(mosaic, a_lit_led_is_full_scale_over_its_rectangle_only) {
  mosaic_options o;
  o.width = 8;
  o.height = 4;
  o.bits = 12;
  o.led = {2, 1, 3, 2};
  o.led_lit = true;
  const auto raw = mosaic(solid(8, 4, 0, 0, 0), o);
  for (std::uint32_t y = 0; y < 4; ++y) {
    for (std::uint32_t x = 0; x < 8; ++x) {
      const bool inside = x >= 2 && x < 5 && y >= 1 && y < 3;
      EXPECT_EQ(raw[y * 8 + x], inside ? 4095 : o.black_level) << x << "," << y;
    }
  }
  o.led_lit = false;
  EXPECT_EQ(mosaic(solid(8, 4, 0, 0, 0), o)[8 + 2], o.black_level);
}

TEST(mosaic, bad_options_are_clear_errors) {
  const auto photo = solid(4, 4, 1, 2, 3);
  mosaic_options o;
  o.width = 4;
  o.height = 4;
  o.bits = 14;
  EXPECT_THAT([&] { (void)mosaic(photo, o); }, ::testing::ThrowsMessage<std::invalid_argument>(
                                                   HasSubstr("bits must be 8, 10 or 12")));
  o.bits = 8;
  o.black_level = 255;
  EXPECT_THAT([&] { (void)mosaic(photo, o); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("black level 255")));
  o.black_level = 16;
  o.width = 3;
  EXPECT_THAT([&] { (void)mosaic(photo, o); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("even, non-zero size")));
  o.width = 4;
  o.led = {2, 2, 4, 1};
  EXPECT_THAT([&] { (void)mosaic(photo, o); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("outside the frame")));
  EXPECT_THROW((void)mosaic(rgb8_image{2, 2, {}}, mosaic_options{}), std::invalid_argument);
}

}  // namespace
}  // namespace resident::io

namespace resident::io {
namespace {
TEST(bayer, orders_have_the_names_configurations_use) {
  std::vector<std::string_view> names;
  for (const auto o : all_bayer_orders) names.push_back(to_string(o));
  EXPECT_EQ(names, (std::vector<std::string_view>{"rggb", "bggr", "grbg", "gbrg"}));
}
}  // namespace
}  // namespace resident::io
