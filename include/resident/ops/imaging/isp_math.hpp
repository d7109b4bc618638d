#pragma once
// The raw ISP's arithmetic, shared by the GPU kernels and the CPU reference so that both give
// the same bits by construction. With max = 2^bits - 1 and range = max - black:
//
//   histogram bin   bin(v) = clamp(v - black, 0, range) * 256 / (range + 1)        (0..255)
//   grey world      gain_c = mean_green / mean_c, means over the channel's bins
//                   (sum of bin * count / count), 1 when a channel or green is empty or black,
//                   at most max_gain
//   multiplier      m_c = round(gain_c * max / range * 2^16)                        (Q16)
//   correction      out = min(max, (max(v - black, 0) * m_c + 2^15) >> 16)
//
// The gains use integer sums and one double division; the multiplier two double operations
// whose results are exact or identically rounded on host and device (no fused multiply-add can
// change them: the product by 2^16 is exact). The per-pixel step is integer only.

#include <cstdint>

#include "resident/io/frame.hpp"  // RESIDENT_HD

namespace resident::ops::imaging::isp_math {

inline constexpr unsigned bins_per_channel = 256;
inline constexpr unsigned histogram_bins = 3 * bins_per_channel;
inline constexpr double max_gain = 16.0;

/// The 8-bit histogram bin of raw value `v` after black-level correction.
RESIDENT_HD constexpr std::uint32_t bin_of(std::uint32_t v, std::uint32_t black,
                                           std::uint32_t max) noexcept {
  const std::uint32_t range = max - black;
  std::uint32_t c = v > black ? v - black : 0U;
  if (c > range) c = range;
  return c * bins_per_channel / (range + 1U);
}

/// Grey-world gain of a channel from its histogram sums (sum of bin * count, and count).
RESIDENT_HD inline double grey_world_gain(std::uint64_t sum_c, std::uint64_t n_c,
                                          std::uint64_t sum_green, std::uint64_t n_green) noexcept {
  if (n_c == 0 || sum_c == 0 || n_green == 0 || sum_green == 0) return 1.0;
  // mean_g / mean_c = (sum_g / n_g) / (sum_c / n_c): the products are exact integers (below
  // 2^53 for frames up to about 8K), then one correctly rounded division.
  const double gain = static_cast<double>(sum_green * n_c) / static_cast<double>(sum_c * n_green);
  return gain < max_gain ? gain : max_gain;
}

/// The Q16 multiplier of the per-pixel step for a channel's gain.
RESIDENT_HD inline std::uint64_t multiplier_q16(double gain, std::uint32_t black,
                                                std::uint32_t max) noexcept {
  const double scale = gain * static_cast<double>(max) / static_cast<double>(max - black);
  return static_cast<std::uint64_t>(scale * 65536.0 + 0.5);
}

/// The corrected value of raw sample `v`.
RESIDENT_HD constexpr std::uint16_t correct(std::uint32_t v, std::uint32_t black,
                                            std::uint64_t multiplier, std::uint32_t max) noexcept {
  const std::uint64_t c = v > black ? v - black : 0U;
  const std::uint64_t out = (c * multiplier + 0x8000U) >> 16;
  return static_cast<std::uint16_t>(out > max ? max : out);
}

}  // namespace resident::ops::imaging::isp_math
