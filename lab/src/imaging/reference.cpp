#include "resident/imaging/reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

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

}  // namespace resident::imaging::reference
