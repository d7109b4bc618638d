#pragma once
// CPU references for the imaging operators: what the GPU demosaic kernels are checked against
// (tests) and how the camera benchmark scores them (PSNR against the original photograph).
// Plain, slow and obvious on purpose.

#include <cstdint>
#include <span>
#include <vector>

#include "resident/io/bayer.hpp"

namespace resident::imaging::reference {

/// Interleaved RGB, 3 floats a pixel, row-major: what the demosaic references return.
using rgb_planes = std::vector<float>;

/// Bilinear demosaic: each missing colour is the mean of the pixel's 3x3 neighbours that sample
/// it. Borders mirror without repeating the edge (index -1 reads 1), which keeps the colour
/// filter pattern. Results are clamped to [0, max_value].
[[nodiscard]] rgb_planes demosaic_bilinear(std::span<const std::uint16_t> raw, std::uint32_t width,
                                           std::uint32_t height, io::bayer_order order,
                                           float max_value);

/// Malvar, He and Cutler's gradient-corrected linear interpolation (ICASSP 2004): the bilinear
/// estimate corrected by the Laplacian of the channel the pixel samples, with their 5x5 filters
/// (weights in eighths). Same borders and clamping as demosaic_bilinear.
[[nodiscard]] rgb_planes demosaic_malvar(std::span<const std::uint16_t> raw, std::uint32_t width,
                                         std::uint32_t height, io::bayer_order order,
                                         float max_value);

/// Peak signal-to-noise ratio in dB of `got` against `want` (same size) for signals whose full
/// scale is `peak`; +infinity when they are equal. Throws std::invalid_argument on a size
/// mismatch or empty input.
[[nodiscard]] double psnr(std::span<const float> got, std::span<const float> want, double peak);

}  // namespace resident::imaging::reference
