#pragma once
// convert_resize: RGBA -> a classifier's input (normalized planar float) or a smaller RGBA8
// image, with bilinear resampling.
//
//   input  "in"   in_width x in_height, rgba16 | rgba8
//   output "out"  out_width x out_height, rgb_planar_f32 | rgba8
//
// Parameters: in_width (1920), in_height (1080), in_format (rgba16 | rgba8), out_width (224),
// out_height (224), out_format (planar_f32 | rgba8), mean_r/g/b (0.485, 0.456, 0.406) and
// std_r/g/b (0.229, 0.224, 0.225).
//
// Sampling aligns pixel centres (half-pixel offsets, as OpenCV's INTER_LINEAR and torchvision's
// resize without antialiasing): the source of output x is (x + 0.5) * in_width / out_width - 0.5,
// clamped at 0, and the last column or row repeats at the far edge; no antialiasing filter.
// planar_f32: (v / full_scale - mean_c) / std_c per plane (R, G, B). rgba8: round(v * 255 /
// full_scale), alpha 255.

#include <cstddef>
#include <cstdint>

#include "resident/app/operator.hpp"

namespace resident::ops::imaging {

enum class resize_output : std::uint8_t { planar_f32, rgba8 };

struct convert_resize_config {
  std::uint32_t in_width{1920};
  std::uint32_t in_height{1080};
  bool in_rgba16{true};  // false: rgba8
  std::uint32_t out_width{224};
  std::uint32_t out_height{224};
  resize_output output{resize_output::planar_f32};
  float mean[3]{0.485F, 0.456F, 0.406F};
  float stddev[3]{0.229F, 0.224F, 0.225F};
};

class convert_resize final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] const convert_resize_config& config() const noexcept { return _config; }

 private:
  convert_resize_config _config;
};

namespace detail {

/// Source coordinate of output column/row `i` (half-pixel centres, clamped at 0), shared by the
/// kernel and the CPU reference: the left/top source index, the next one (the edge repeats)
/// and the weight of the next one.
struct resize_tap {
  std::uint32_t i0;
  std::uint32_t i1;
  double weight;
};
[[nodiscard]] constexpr resize_tap resize_source(std::uint32_t i, std::uint32_t in_size,
                                                 std::uint32_t out_size) noexcept {
  double src = (static_cast<double>(i) + 0.5) * static_cast<double>(in_size) /
                   static_cast<double>(out_size) -
               0.5;
  if (src < 0.0) src = 0.0;
  auto i0 = static_cast<std::uint32_t>(src);
  if (i0 > in_size - 1) i0 = in_size - 1;
  const std::uint32_t i1 = i0 + 1 < in_size ? i0 + 1 : in_size - 1;
  return {i0, i1, src - static_cast<double>(i0)};
}

/// Enqueues the conversion of `in` (rows `in_pitch` bytes apart) into `out` (rows `out_pitch`
/// bytes apart; planar: plane c at c * out_pitch * out_height).
void launch_convert_resize(const void* in, std::size_t in_pitch, void* out, std::size_t out_pitch,
                           const convert_resize_config& config, cudaStream_t s,
                           bool programmatic = false);

}  // namespace detail

}  // namespace resident::ops::imaging
