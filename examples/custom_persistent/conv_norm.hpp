#pragma once
// conv_norm: a user's operator with a device form of its own (docs/api.md, "Device forms").
//
// A W x H fp32 image goes through a 3x3 convolution (zero padding) and is then divided by the
// root mean square of the convolved image: out = conv / sqrt(mean(conv^2) + 1e-6). Two phases
// with a grid-wide dependency between them (the statistic needs every tile), the first with a
// tile and its halo in dynamic shared memory. Every sum runs in a fixed order, so the bits do
// not depend on the grid: the kernels of the graph modes and the form in persistent mode give
// the same output.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "resident/resident.hpp"

namespace custom {

class conv_norm final : public resident::Operator {
 public:
  void setup(resident::OperatorSpec& spec) override;
  void initialize() override;
  void compute(resident::CaptureContext& ctx) override;
  [[nodiscard]] std::optional<resident::device_form> persistent_form() const override;

  [[nodiscard]] int width() const noexcept { return _width; }
  [[nodiscard]] int height() const noexcept { return _height; }
  [[nodiscard]] const std::array<float, 9>& weights() const noexcept { return _weights; }

 private:
  int _width{};
  int _height{};
  std::array<float, 9> _weights{};
  resident::device_buffer _conv;       // the convolved image
  resident::device_buffer _tile_sums;  // sum of squares per 16 x 16 tile
};

/// The CPU reference, in the device's order of operations.
[[nodiscard]] std::vector<float> conv_norm_reference(const std::vector<float>& in, int width,
                                                     int height,
                                                     const std::array<float, 9>& weights);

}  // namespace custom
