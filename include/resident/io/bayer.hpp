#pragma once
// The emulated sensor's image: a photograph seen through a colour filter array, as raw sensor
// values with a black level and a colour cast, panned a little every frame, with a rectangular
// "LED" that a marked frame shows lit. Frames are made on the host before a run.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace resident::io {

/// The colour filter of the 2x2 cell at the sensor's top-left corner, read row by row.
enum class bayer_order : std::uint8_t { rggb, bggr, grbg, gbrg };
inline constexpr std::array all_bayer_orders{bayer_order::rggb, bayer_order::bggr,
                                             bayer_order::grbg, bayer_order::gbrg};

/// "rggb", "bggr", "grbg", "gbrg": the names configurations and parameters use.
[[nodiscard]] constexpr std::string_view to_string(bayer_order o) noexcept {
  switch (o) {
    case bayer_order::rggb:
      return "rggb";
    case bayer_order::bggr:
      return "bggr";
    case bayer_order::grbg:
      return "grbg";
    case bayer_order::gbrg:
    default:
      return "gbrg";
  }
}

/// The colour channel (0 red, 1 green, 2 blue) that pixel (x, y) samples.
[[nodiscard]] constexpr int bayer_channel(bayer_order order, std::uint32_t x,
                                          std::uint32_t y) noexcept {
  const unsigned cell = (y & 1U) << 1 | (x & 1U);  // 0 top-left, 1 top-right, 2, 3 bottom row
  switch (order) {
    case bayer_order::rggb:
      return cell == 0 ? 0 : cell == 3 ? 2 : 1;
    case bayer_order::bggr:
      return cell == 0 ? 2 : cell == 3 ? 0 : 1;
    case bayer_order::grbg:
      return cell == 1 ? 0 : cell == 2 ? 2 : 1;
    case bayer_order::gbrg:
    default:
      return cell == 1 ? 2 : cell == 2 ? 0 : 1;
  }
}

/// An 8-bit RGB photograph, row-major, 3 bytes a pixel.
struct rgb8_image {
  std::uint32_t width{0};
  std::uint32_t height{0};
  std::vector<std::uint8_t> rgb;
};

struct led_marker {
  std::uint32_t x{0};
  std::uint32_t y{0};
  std::uint32_t width{0};  // 0: no marker
  std::uint32_t height{0};
};

struct mosaic_options {
  std::uint32_t width{1920};
  std::uint32_t height{1080};
  unsigned bits{12};  // sensor bit depth: 8, 10 or 12
  bayer_order order{bayer_order::rggb};
  std::uint16_t black_level{256};   // added to every sample, in sensor units
  float cast[3]{1.0F, 1.0F, 1.0F};  // per-channel gain before quantization (a colour cast)
  std::uint32_t pan_x{0};           // the photograph shifted left by this (wrapping)
  std::uint32_t pan_y{0};           // and up by this
  led_marker led;                   // full scale when `led_lit`, black (black level) when not
  bool led_lit{false};
};

/// Raw sensor values (row-major, width x height) of `photo` under `o`:
///   black_level + round(clamp(v / 255 * cast[c], 0, 1) * (2^bits - 1 - black_level))
/// for the channel c that the pixel's filter passes, v the photograph's value at the panned
/// position (the photograph tiles the frame). Throws std::invalid_argument for an empty
/// photograph, an unsupported bit depth, a black level at or above full scale, an odd frame
/// size (a Bayer frame is whole 2x2 cells) or a marker outside the frame.
[[nodiscard]] std::vector<std::uint16_t> mosaic(const rgb8_image& photo, const mosaic_options& o);

}  // namespace resident::io
