#pragma once
// CPU references for the imaging operators: what the GPU demosaic kernels are checked against
// (tests) and how the camera benchmark scores them (PSNR against the original photograph).
// Plain, slow and obvious on purpose.

#include <array>
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

// ---- demosaic output formats (ops::imaging::demosaic's three outputs) ------------------------

/// Interleaved RGBA16: round(v * 65535 / max_value) per colour, alpha 65535.
[[nodiscard]] std::vector<std::uint16_t> to_rgba16(const rgb_planes& rgb, float max_value);
/// Interleaved RGBA8: round(v * 255 / max_value) per colour, alpha 255.
[[nodiscard]] std::vector<std::uint8_t> to_rgba8(const rgb_planes& rgb, float max_value);
/// Three planes (R, G, B), each width x height floats: v / max_value.
[[nodiscard]] std::vector<float> to_planar(const rgb_planes& rgb, std::uint32_t width,
                                           std::uint32_t height, float max_value);

// ---- raw ISP (ops::imaging::raw_isp) ---------------------------------------------------------

struct isp_result {
  std::vector<std::uint16_t> raw;              // the corrected frame
  std::array<std::uint32_t, 768> histogram{};  // channel * 256 + 8-bit level after black level
  std::array<double, 3> gains{};               // grey-world gains (1 without white balance)
  std::array<std::uint64_t, 3> multipliers{};  // Q16 per-pixel multipliers
};

/// Black level, grey-world white balance (when `grey_world`) and range stretch, step by step
/// as ops/imaging/isp_math.hpp defines them (whose arithmetic it uses, so the GPU operator's
/// output must equal this bit for bit). Throws std::invalid_argument for a size mismatch, an
/// unsupported bit depth or a black level at or above full scale.
[[nodiscard]] isp_result raw_isp(std::span<const std::uint16_t> raw, std::uint32_t width,
                                 std::uint32_t height, io::bayer_order order, unsigned bits,
                                 std::uint32_t black_level, bool grey_world);

/// The per-pixel step alone with given Q16 multipliers (red, green, blue): what the fused
/// camera pass does to frame F with the gains of an earlier frame (previous-frame statistics).
[[nodiscard]] std::vector<std::uint16_t> correct_raw(
    std::span<const std::uint16_t> raw, std::uint32_t width, std::uint32_t height,
    io::bayer_order order, unsigned bits, std::uint32_t black_level,
    const std::array<std::uint64_t, 3>& multipliers);

// ---- bilinear resize (ops::imaging::convert_resize) -------------------------------------------

/// Bilinear resize of an interleaved image of `channels` values a pixel, pixel centres aligned:
/// output x samples the input at (x + 0.5) * in_width / out_width - 0.5, clamped at 0, the last
/// column (row) repeating beyond the edge; no antialiasing. In double.
[[nodiscard]] std::vector<double> resize_bilinear(std::span<const double> in,
                                                  std::uint32_t in_width, std::uint32_t in_height,
                                                  std::uint32_t channels, std::uint32_t out_width,
                                                  std::uint32_t out_height);

/// A classifier's input from an interleaved RGB(A) image (`channels` >= 3, full scale `full`):
/// three planes of (v / full - mean_c) / std_c.
[[nodiscard]] std::vector<float> normalize_planar(std::span<const double> rgb, std::uint32_t width,
                                                  std::uint32_t height, std::uint32_t channels,
                                                  double full, const std::array<double, 3>& mean,
                                                  const std::array<double, 3>& stddev);

}  // namespace resident::imaging::reference
