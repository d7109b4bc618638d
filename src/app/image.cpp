#include "resident/app/image.hpp"

namespace resident {

std::string_view to_string(pixel_format f) noexcept {
  switch (f) {
    case pixel_format::bayer_rggb16:
      return "bayer_rggb16";
    case pixel_format::bayer_bggr16:
      return "bayer_bggr16";
    case pixel_format::bayer_grbg16:
      return "bayer_grbg16";
    case pixel_format::bayer_gbrg16:
      return "bayer_gbrg16";
    case pixel_format::rgba8:
      return "rgba8";
    case pixel_format::rgba16:
      return "rgba16";
    case pixel_format::rgb_planar_f32:
      return "rgb_planar_f32";
  }
  return "unknown";
}

std::string to_string(const image_desc& d) {
  return std::to_string(d.width) + "x" + std::to_string(d.height) + " " +
         std::string(to_string(d.format)) + ", pitch " + std::to_string(d.pitch());
}

}  // namespace resident
