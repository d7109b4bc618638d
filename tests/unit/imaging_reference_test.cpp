// The CPU demosaic references: exact on flat colour and on linear ramps, every Bayer order,
// and Malvar-He-Cutler ahead of bilinear where the colour channels are correlated.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <vector>

#include "resident/imaging/reference.hpp"

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

}  // namespace
}  // namespace resident::imaging::reference
