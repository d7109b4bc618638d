#include "resident/imaging/reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "resident/ops/imaging/isp_math.hpp"

namespace resident::imaging::reference {

namespace {

/// Mirror without repeating the edge: -1 -> 1, n -> n - 2 (keeps the 2x2 pattern's parity).
std::int64_t mirror(std::int64_t i, std::int64_t n) {
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

struct frame {
  std::span<const std::uint16_t> raw;
  std::int64_t width;
  std::int64_t height;
  io::bayer_order order;
  [[nodiscard]] float at(std::int64_t x, std::int64_t y) const {
    return raw[static_cast<std::size_t>(mirror(y, height) * width + mirror(x, width))];
  }
  [[nodiscard]] int channel(std::int64_t x, std::int64_t y) const {
    return io::bayer_channel(order, static_cast<std::uint32_t>(mirror(x, width)),
                             static_cast<std::uint32_t>(mirror(y, height)));
  }
};

void check(std::span<const std::uint16_t> raw, std::uint32_t width, std::uint32_t height) {
  if (width < 2 || height < 2 || width % 2 != 0 || height % 2 != 0 ||
      raw.size() != std::size_t{width} * height) {
    throw std::invalid_argument("demosaic reference: a " + std::to_string(width) + "x" +
                                std::to_string(height) + " Bayer frame (even sides, at least 2) " +
                                "with " + std::to_string(raw.size()) + " samples");
  }
}

float bilinear_at(const frame& f, std::int64_t x, std::int64_t y, int c) {
  if (f.channel(x, y) == c) return f.at(x, y);
  float sum = 0.0F;
  int n = 0;
  for (std::int64_t dy = -1; dy <= 1; ++dy) {
    for (std::int64_t dx = -1; dx <= 1; ++dx) {
      if ((dx != 0 || dy != 0) && f.channel(x + dx, y + dy) == c) {
        sum += f.at(x + dx, y + dy);
        ++n;
      }
    }
  }
  return sum / static_cast<float>(n);
}

using kernel5 = std::array<std::array<float, 5>, 5>;  // [dy + 2][dx + 2], in eighths

constexpr kernel5 green_at_red_or_blue{
    {{0, 0, -1, 0, 0}, {0, 0, 2, 0, 0}, {-1, 2, 4, 2, -1}, {0, 0, 2, 0, 0}, {0, 0, -1, 0, 0}}};
// At a green site, for the colour on the same row.
constexpr kernel5 row_colour_at_green{{{0, 0, 0.5F, 0, 0},
                                       {0, -1, 0, -1, 0},
                                       {-1, 4, 5, 4, -1},
                                       {0, -1, 0, -1, 0},
                                       {0, 0, 0.5F, 0, 0}}};
// At a green site, for the colour on the same column.
constexpr kernel5 column_colour_at_green{{{0, 0, -1, 0, 0},
                                          {0, -1, 4, -1, 0},
                                          {0.5F, 0, 5, 0, 0.5F},
                                          {0, -1, 4, -1, 0},
                                          {0, 0, -1, 0, 0}}};
// Red at a blue site, blue at a red site.
constexpr kernel5 opposite_colour{{{0, 0, -1.5F, 0, 0},
                                   {0, 2, 0, 2, 0},
                                   {-1.5F, 0, 6, 0, -1.5F},
                                   {0, 2, 0, 2, 0},
                                   {0, 0, -1.5F, 0, 0}}};

float apply(const frame& f, std::int64_t x, std::int64_t y, const kernel5& k) {
  float sum = 0.0F;
  for (std::int64_t dy = -2; dy <= 2; ++dy) {
    for (std::int64_t dx = -2; dx <= 2; ++dx) {
      const float w = k[static_cast<std::size_t>(dy + 2)][static_cast<std::size_t>(dx + 2)];
      if (w != 0.0F) sum += w * f.at(x + dx, y + dy);
    }
  }
  return sum / 8.0F;
}

float malvar_at(const frame& f, std::int64_t x, std::int64_t y, int c) {
  const int here = f.channel(x, y);
  if (here == c) return f.at(x, y);
  if (c == 1) return apply(f, x, y, green_at_red_or_blue);
  if (here != 1) return apply(f, x, y, opposite_colour);
  return f.channel(x + 1, y) == c ? apply(f, x, y, row_colour_at_green)
                                  : apply(f, x, y, column_colour_at_green);
}

template <class At>
rgb_planes demosaic(std::span<const std::uint16_t> raw, std::uint32_t width, std::uint32_t height,
                    io::bayer_order order, float max_value, At at) {
  check(raw, width, height);
  const frame f{raw, width, height, order};
  rgb_planes out(std::size_t{width} * height * 3);
  for (std::int64_t y = 0; y < height; ++y) {
    for (std::int64_t x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        out[static_cast<std::size_t>((y * width + x) * 3 + c)] =
            std::clamp(at(f, x, y, c), 0.0F, max_value);
      }
    }
  }
  return out;
}

}  // namespace

rgb_planes demosaic_bilinear(std::span<const std::uint16_t> raw, std::uint32_t width,
                             std::uint32_t height, io::bayer_order order, float max_value) {
  return demosaic(raw, width, height, order, max_value, bilinear_at);
}

rgb_planes demosaic_malvar(std::span<const std::uint16_t> raw, std::uint32_t width,
                           std::uint32_t height, io::bayer_order order, float max_value) {
  return demosaic(raw, width, height, order, max_value, malvar_at);
}

double psnr(std::span<const float> got, std::span<const float> want, double peak) {
  if (got.size() != want.size() || got.empty()) {
    throw std::invalid_argument("psnr: " + std::to_string(got.size()) + " values against " +
                                std::to_string(want.size()));
  }
  double sum = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    sum += d * d;
  }
  if (sum == 0.0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(peak * peak / (sum / static_cast<double>(got.size())));
}

std::vector<std::uint16_t> to_rgba16(const rgb_planes& rgb, float max_value) {
  std::vector<std::uint16_t> out;
  out.reserve(rgb.size() / 3 * 4);
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    for (std::size_t c = 0; c < 3; ++c) {
      out.push_back(static_cast<std::uint16_t>(
          std::lround(static_cast<double>(rgb[i + c]) * 65535.0 / max_value)));
    }
    out.push_back(65535);
  }
  return out;
}

std::vector<std::uint8_t> to_rgba8(const rgb_planes& rgb, float max_value) {
  std::vector<std::uint8_t> out;
  out.reserve(rgb.size() / 3 * 4);
  for (std::size_t i = 0; i < rgb.size(); i += 3) {
    for (std::size_t c = 0; c < 3; ++c) {
      out.push_back(static_cast<std::uint8_t>(
          std::lround(static_cast<double>(rgb[i + c]) * 255.0 / max_value)));
    }
    out.push_back(255);
  }
  return out;
}

std::vector<float> to_planar(const rgb_planes& rgb, std::uint32_t width, std::uint32_t height,
                             float max_value) {
  const std::size_t n = std::size_t{width} * height;
  if (rgb.size() != n * 3) {
    throw std::invalid_argument("to_planar: " + std::to_string(rgb.size()) + " values for " +
                                std::to_string(width) + "x" + std::to_string(height));
  }
  std::vector<float> out(n * 3);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < 3; ++c) out[c * n + i] = rgb[i * 3 + c] / max_value;
  }
  return out;
}

isp_result raw_isp(std::span<const std::uint16_t> raw, std::uint32_t width, std::uint32_t height,
                   io::bayer_order order, unsigned bits, std::uint32_t black_level,
                   bool grey_world) {
  namespace math = ops::imaging::isp_math;
  if (raw.size() != std::size_t{width} * height || (bits != 8 && bits != 10 && bits != 12)) {
    throw std::invalid_argument("raw_isp reference: " + std::to_string(raw.size()) +
                                " samples for " + std::to_string(width) + "x" +
                                std::to_string(height) + ", " + std::to_string(bits) + " bits");
  }
  const std::uint32_t max = (1U << bits) - 1U;
  if (black_level >= max) {
    throw std::invalid_argument("raw_isp reference: black level " + std::to_string(black_level) +
                                " at or above full scale " + std::to_string(max));
  }
  isp_result r;
  std::array<std::uint64_t, 3> count{};
  std::array<std::uint64_t, 3> level_sum{};
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const auto c = static_cast<std::size_t>(io::bayer_channel(order, x, y));
      const std::uint32_t bin = math::bin_of(raw[std::size_t{y} * width + x], black_level, max);
      ++r.histogram[c * 256 + bin];
      ++count[c];
      level_sum[c] += bin;
    }
  }
  for (std::size_t c = 0; c < 3; ++c) {
    r.gains[c] =
        grey_world ? math::grey_world_gain(level_sum[c], count[c], level_sum[1], count[1]) : 1.0;
    r.multipliers[c] = math::multiplier_q16(r.gains[c], black_level, max);
  }
  r.raw.resize(raw.size());
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const std::size_t i = std::size_t{y} * width + x;
      const auto c = static_cast<std::size_t>(io::bayer_channel(order, x, y));
      r.raw[i] = math::correct(raw[i], black_level, r.multipliers[c], max);
    }
  }
  return r;
}

std::vector<std::uint16_t> correct_raw(std::span<const std::uint16_t> raw, std::uint32_t width,
                                       std::uint32_t height, io::bayer_order order, unsigned bits,
                                       std::uint32_t black_level,
                                       const std::array<std::uint64_t, 3>& multipliers) {
  namespace math = ops::imaging::isp_math;
  if (raw.size() != std::size_t{width} * height || (bits != 8 && bits != 10 && bits != 12)) {
    throw std::invalid_argument("correct_raw reference: " + std::to_string(raw.size()) +
                                " samples for " + std::to_string(width) + "x" +
                                std::to_string(height) + ", " + std::to_string(bits) + " bits");
  }
  const std::uint32_t max = (1U << bits) - 1U;
  std::vector<std::uint16_t> out(raw.size());
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      const std::size_t i = std::size_t{y} * width + x;
      const auto c = static_cast<std::size_t>(io::bayer_channel(order, x, y));
      out[i] = math::correct(raw[i], black_level, multipliers[c], max);
    }
  }
  return out;
}

namespace {

struct tap {
  std::size_t i0;
  std::size_t i1;
  double weight;
};
tap source_of(std::uint32_t i, std::uint32_t in, std::uint32_t out) {
  const double src = std::max(0.0, (i + 0.5) * in / out - 0.5);
  const auto i0 = std::min<std::size_t>(static_cast<std::size_t>(src), in - 1);
  return {i0, std::min<std::size_t>(i0 + 1, in - 1), src - static_cast<double>(i0)};
}

}  // namespace

std::vector<double> resize_bilinear(std::span<const double> in, std::uint32_t in_width,
                                    std::uint32_t in_height, std::uint32_t channels,
                                    std::uint32_t out_width, std::uint32_t out_height) {
  if (in.size() != std::size_t{in_width} * in_height * channels || in.empty() || out_width == 0 ||
      out_height == 0) {
    throw std::invalid_argument("resize_bilinear: " + std::to_string(in.size()) + " values for " +
                                std::to_string(in_width) + "x" + std::to_string(in_height) + "x" +
                                std::to_string(channels) + " to " + std::to_string(out_width) +
                                "x" + std::to_string(out_height));
  }
  std::vector<double> out(std::size_t{out_width} * out_height * channels);
  const auto at = [&](std::size_t x, std::size_t y, std::size_t c) {
    return in[(y * in_width + x) * channels + c];
  };
  for (std::uint32_t y = 0; y < out_height; ++y) {
    const tap ty = source_of(y, in_height, out_height);
    for (std::uint32_t x = 0; x < out_width; ++x) {
      const tap tx = source_of(x, in_width, out_width);
      for (std::size_t c = 0; c < channels; ++c) {
        const double top = (1 - tx.weight) * at(tx.i0, ty.i0, c) + tx.weight * at(tx.i1, ty.i0, c);
        const double bottom =
            (1 - tx.weight) * at(tx.i0, ty.i1, c) + tx.weight * at(tx.i1, ty.i1, c);
        out[(std::size_t{y} * out_width + x) * channels + c] =
            (1 - ty.weight) * top + ty.weight * bottom;
      }
    }
  }
  return out;
}

std::vector<float> normalize_planar(std::span<const double> rgb, std::uint32_t width,
                                    std::uint32_t height, std::uint32_t channels, double full,
                                    const std::array<double, 3>& mean,
                                    const std::array<double, 3>& stddev) {
  const std::size_t n = std::size_t{width} * height;
  if (channels < 3 || rgb.size() != n * channels) {
    throw std::invalid_argument("normalize_planar: " + std::to_string(rgb.size()) + " values for " +
                                std::to_string(width) + "x" + std::to_string(height) + "x" +
                                std::to_string(channels));
  }
  std::vector<float> out(n * 3);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < 3; ++c) {
      out[c * n + i] = static_cast<float>((rgb[i * channels + c] / full - mean[c]) / stddev[c]);
    }
  }
  return out;
}

}  // namespace resident::imaging::reference
