#pragma once
// What an image port carries: its shape, pixel format and row pitch, declared beside its byte
// size so that add_flow can check that both ends mean the same image, not only the same size.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace resident {

enum class pixel_format : std::uint8_t {
  bayer_rggb16,    // one 16-bit sample per pixel, colour filter pattern R G / G B
  bayer_bggr16,    // B G / G R
  bayer_grbg16,    // G R / B G
  bayer_gbrg16,    // G B / R G
  rgba8,           // 4 x 8 bits per pixel, interleaved
  rgba16,          // 4 x 16 bits per pixel, interleaved
  rgb_planar_f32,  // three planes of 32-bit floats (R, G, B), each height rows of pitch bytes
};

/// Bytes of one pixel (of one plane, for planar formats).
[[nodiscard]] constexpr std::size_t bytes_per_pixel(pixel_format f) noexcept {
  switch (f) {
    case pixel_format::rgba8:
    case pixel_format::rgb_planar_f32:
      return 4;
    case pixel_format::rgba16:
      return 8;
    default:
      return 2;
  }
}
[[nodiscard]] constexpr std::size_t planes_of(pixel_format f) noexcept {
  return f == pixel_format::rgb_planar_f32 ? 3 : 1;
}
[[nodiscard]] std::string_view to_string(pixel_format f) noexcept;

struct image_desc {
  std::uint32_t width{0};
  std::uint32_t height{0};
  pixel_format format{pixel_format::rgba8};
  std::size_t row_pitch{0};  // bytes from one row to the next; 0: rows packed tightly

  /// Bytes between rows: row_pitch, or width * bytes_per_pixel when it is 0.
  [[nodiscard]] constexpr std::size_t pitch() const noexcept {
    return row_pitch != 0 ? row_pitch : std::size_t{width} * bytes_per_pixel(format);
  }
  /// Bytes of the whole image (every plane).
  [[nodiscard]] constexpr std::size_t bytes() const noexcept {
    return pitch() * height * planes_of(format);
  }
  /// Same shape, format and pitch (a tight pitch equals the same value given explicitly).
  friend constexpr bool operator==(const image_desc& a, const image_desc& b) noexcept {
    return a.width == b.width && a.height == b.height && a.format == b.format &&
           a.pitch() == b.pitch();
  }
};

/// "1920x1080 rgba8, pitch 7680".
[[nodiscard]] std::string to_string(const image_desc& d);

}  // namespace resident
