#pragma once
// What the imaging operators share: the Bayer pixel format of a colour filter order.

#include "resident/app/image.hpp"
#include "resident/io/bayer.hpp"

namespace resident::ops::imaging {

/// The 16-bit Bayer pixel format (bayer_<order>16) of a colour filter order.
[[nodiscard]] constexpr pixel_format bayer_format(io::bayer_order order) noexcept {
  switch (order) {
    case io::bayer_order::bggr:
      return pixel_format::bayer_bggr16;
    case io::bayer_order::grbg:
      return pixel_format::bayer_grbg16;
    case io::bayer_order::gbrg:
      return pixel_format::bayer_gbrg16;
    case io::bayer_order::rggb:
    default:
      return pixel_format::bayer_rggb16;
  }
}

/// A tightly packed 16-bit Bayer image of this shape and order.
[[nodiscard]] constexpr image_desc bayer_image(std::uint32_t width, std::uint32_t height,
                                               io::bayer_order order) noexcept {
  return image_desc{width, height, bayer_format(order), 0};
}

}  // namespace resident::ops::imaging
