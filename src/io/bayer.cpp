#include "resident/io/bayer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace resident::io {

namespace {

void check(const rgb8_image& photo, const mosaic_options& o) {
  if (photo.width == 0 || photo.height == 0 ||
      photo.rgb.size() != std::size_t{photo.width} * photo.height * 3) {
    throw std::invalid_argument("mosaic: the photograph is empty or its pixels (" +
                                std::to_string(photo.rgb.size()) + " bytes) do not match " +
                                std::to_string(photo.width) + "x" + std::to_string(photo.height));
  }
  if (o.bits != 8 && o.bits != 10 && o.bits != 12) {
    throw std::invalid_argument("mosaic: bits must be 8, 10 or 12, got " + std::to_string(o.bits));
  }
  const unsigned full = (1U << o.bits) - 1;
  if (o.black_level >= full) {
    throw std::invalid_argument("mosaic: black level " + std::to_string(o.black_level) +
                                " is not below full scale " + std::to_string(full));
  }
  if (o.width == 0 || o.height == 0 || o.width % 2 != 0 || o.height % 2 != 0) {
    throw std::invalid_argument("mosaic: a Bayer frame needs an even, non-zero size, got " +
                                std::to_string(o.width) + "x" + std::to_string(o.height));
  }
  const led_marker& m = o.led;
  if (m.width != 0 && (m.x + m.width > o.width || m.y + m.height > o.height || m.height == 0)) {
    throw std::invalid_argument("mosaic: the LED marker lies outside the frame");
  }
}

}  // namespace

std::vector<std::uint16_t> mosaic(const rgb8_image& photo, const mosaic_options& o) {
  check(photo, o);
  const float span = static_cast<float>((1U << o.bits) - 1 - o.black_level);
  const auto full = static_cast<std::uint16_t>((1U << o.bits) - 1);
  std::vector<std::uint16_t> out(std::size_t{o.width} * o.height);
  for (std::uint32_t y = 0; y < o.height; ++y) {
    const std::uint32_t sy = (y + o.pan_y) % photo.height;
    for (std::uint32_t x = 0; x < o.width; ++x) {
      const std::uint32_t sx = (x + o.pan_x) % photo.width;
      const int c = bayer_channel(o.order, x, y);
      const float v =
          photo.rgb[(std::size_t{sy} * photo.width + sx) * 3 + static_cast<std::size_t>(c)];
      const float level = std::clamp(v / 255.0F * o.cast[c], 0.0F, 1.0F);
      out[std::size_t{y} * o.width + x] =
          static_cast<std::uint16_t>(o.black_level + std::lround(level * span));
    }
  }
  if (o.led.width != 0) {
    // The LED sits in a dark housing: off, its rectangle is black, so a photodiode watching it
    // on screen sees a clean edge whatever the photograph shows there.
    const auto level = o.led_lit ? full : o.black_level;
    for (std::uint32_t y = o.led.y; y < o.led.y + o.led.height; ++y) {
      std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(std::size_t{y} * o.width + o.led.x),
                  o.led.width, level);
    }
  }
  return out;
}

}  // namespace resident::io
