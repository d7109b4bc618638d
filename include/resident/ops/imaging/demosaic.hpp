#pragma once
// demosaic: 16-bit Bayer -> RGB, bilinear or Malvar-He-Cutler, any of the four orders.
//
//   input  "bayer"  width x height, bayer_<order>16
//   output "rgb"    width x height, rgba16 | rgba8 | rgb_planar_f32
//
// Parameters: width (1920), height (1080), order (rggb), bits (12: samples are in
// [0, 2^bits - 1]), algorithm (malvar | bilinear), output (rgba16 | rgba8 | planar_f32).
//
// The same filters, borders (mirrored without repeating the edge) and clamping as
// reference::demosaic_bilinear / demosaic_malvar with max = 2^bits - 1, computed in exact
// integer sums (the filters' weights are sixteenths); then rgba16 = round(v * 65535 / max),
// rgba8 = round(v * 255 / max) with a full-scale alpha, planar = v / max in three planes (R, G,
// B; no alpha). Within 1 LSB of the references. Each thread makes one 2x2 Bayer cell from a
// shared-memory tile with a two-pixel apron and stores each output row of the cell in one
// vector store. Width and height must be even.

#include <cstddef>
#include <cstdint>

#include "resident/app/operator.hpp"
#include "resident/io/bayer.hpp"

namespace resident::ops::imaging {

enum class demosaic_algorithm : std::uint8_t { bilinear, malvar };
enum class rgb_output : std::uint8_t { rgba16, rgba8, planar_f32 };

/// The pixel format of an RGB output (planar_f32 -> rgb_planar_f32).
[[nodiscard]] constexpr pixel_format pixel_format_of(rgb_output o) noexcept {
  return o == rgb_output::rgba16  ? pixel_format::rgba16
         : o == rgb_output::rgba8 ? pixel_format::rgba8
                                  : pixel_format::rgb_planar_f32;
}

struct demosaic_config {
  std::uint32_t width{1920};
  std::uint32_t height{1080};
  io::bayer_order order{io::bayer_order::rggb};
  unsigned bits{12};
  demosaic_algorithm algorithm{demosaic_algorithm::malvar};
  rgb_output output{rgb_output::rgba16};
};

class demosaic final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] const demosaic_config& config() const noexcept { return _config; }

 private:
  demosaic_config _config;
};

namespace detail {

/// Enqueues the demosaic of `bayer` (rows `in_pitch` bytes apart) into `rgb` (rows `out_pitch`
/// bytes apart; planar: plane c starts at c * out_pitch * height). Vector stores need `rgb` and
/// `out_pitch` 16-byte aligned (rgba16), 8-byte (rgba8, planar); other layouts take a scalar
/// path.
void launch_demosaic(const std::uint16_t* bayer, std::size_t in_pitch, void* rgb,
                     std::size_t out_pitch, const demosaic_config& config, cudaStream_t s,
                     bool programmatic = false);

}  // namespace detail

}  // namespace resident::ops::imaging
