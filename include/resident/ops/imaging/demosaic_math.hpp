#pragma once
// The demosaic kernel's arithmetic, host- and device-callable so the unit tests check it against
// the CPU references without a GPU. Every filter of reference.cpp (weights in eighths, some
// halves) is applied here in sixteenths, so the sums are exact integers: value = sum / 16.

#include <cstdint>

#include "resident/io/bayer.hpp"
#include "resident/io/frame.hpp"  // RESIDENT_HD

namespace resident::ops::imaging::demosaic_math {

/// The 6 x 6 samples around a 2x2 Bayer cell: n[y][x], the cell's top-left pixel at n[2][2].
struct neighbourhood {
  int n[6][6];
  RESIDENT_HD constexpr int at(int x, int y) const { return n[y][x]; }
  RESIDENT_HD constexpr int cross(int x, int y) const {
    return at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1);
  }
  RESIDENT_HD constexpr int diagonal(int x, int y) const {
    return at(x - 1, y - 1) + at(x + 1, y - 1) + at(x - 1, y + 1) + at(x + 1, y + 1);
  }
  RESIDENT_HD constexpr int horizontal(int x, int y, int d) const {
    return at(x - d, y) + at(x + d, y);
  }
  RESIDENT_HD constexpr int vertical(int x, int y, int d) const {
    return at(x, y - d) + at(x, y + d);
  }
  // Malvar-He-Cutler, in sixteenths.
  RESIDENT_HD constexpr int malvar_green(int x, int y) const {  // green at red or blue
    return 8 * at(x, y) + 4 * cross(x, y) - 2 * (horizontal(x, y, 2) + vertical(x, y, 2));
  }
  RESIDENT_HD constexpr int malvar_row(int x, int y) const {  // at green, its row's colour
    return 10 * at(x, y) + 8 * horizontal(x, y, 1) - 2 * horizontal(x, y, 2) - 2 * diagonal(x, y) +
           vertical(x, y, 2);
  }
  RESIDENT_HD constexpr int malvar_column(int x, int y) const {  // at green, its column's
    return 10 * at(x, y) + 8 * vertical(x, y, 1) - 2 * vertical(x, y, 2) - 2 * diagonal(x, y) +
           horizontal(x, y, 2);
  }
  RESIDENT_HD constexpr int malvar_opposite(int x, int y) const {  // red at blue, blue at red
    return 12 * at(x, y) + 4 * diagonal(x, y) - 3 * (horizontal(x, y, 2) + vertical(x, y, 2));
  }
};

/// Where red sits in the 2x2 cell of each order: (red_x, red_y).
RESIDENT_HD constexpr int red_x(io::bayer_order o) noexcept {
  return o == io::bayer_order::grbg || o == io::bayer_order::bggr ? 1 : 0;
}
RESIDENT_HD constexpr int red_y(io::bayer_order o) noexcept {
  return o == io::bayer_order::gbrg || o == io::bayer_order::bggr ? 1 : 0;
}

/// R, G, B of cell pixel (px, py) in sixteenths of a sample, unclamped. (rx, ry): where red
/// sits in the cell; constants in the kernels, which inline this.
RESIDENT_HD constexpr void pixel_rgb(const neighbourhood& h, int px, int py, int rx, int ry,
                                     bool malvar, int (&rgb)[3]) {
  const int x = 2 + px;
  const int y = 2 + py;
  // 0 red, 1 green on a red row, 2 green on a blue row, 3 blue
  const int kind = ((py ^ ry) << 1) | (px ^ rx);
  const int here = 16 * h.at(x, y);
  if (kind == 0 || kind == 3) {
    const int green = malvar ? h.malvar_green(x, y) : 4 * h.cross(x, y);
    const int other = malvar ? h.malvar_opposite(x, y) : 4 * h.diagonal(x, y);
    rgb[0] = kind == 0 ? here : other;
    rgb[1] = green;
    rgb[2] = kind == 0 ? other : here;
    return;
  }
  const int row = malvar ? h.malvar_row(x, y) : 8 * h.horizontal(x, y, 1);
  const int column = malvar ? h.malvar_column(x, y) : 8 * h.vertical(x, y, 1);
  rgb[0] = kind == 1 ? row : column;
  rgb[1] = here;
  rgb[2] = kind == 1 ? column : row;
}

/// Mirror without repeating the edge (-1 -> 1, n -> n - 2), as the CPU references do.
RESIDENT_HD constexpr int mirror(int i, int n) noexcept {
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

}  // namespace resident::ops::imaging::demosaic_math
