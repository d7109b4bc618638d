#pragma once
// PNG files for the camera pipeline's dumps and tests (libpng), a contact sheet of several
// frames, and where the test photographs live. Host code, off every critical path.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "resident/io/bayer.hpp"

namespace resident::imaging {

/// Bytes per pixel of the data write_png takes: 3 (RGB8) or 4 (RGBA8).
enum class png_channels : std::uint8_t { rgb8 = 3, rgba8 = 4 };

/// Writes `pixels` (height rows of `pitch` bytes, each starting with width pixels of
/// `channels`) as an 8-bit PNG. Throws std::runtime_error naming `path` when the file cannot be
/// written, std::invalid_argument when the size or pitch do not fit `pixels`.
void write_png(const std::filesystem::path& path, std::uint32_t width, std::uint32_t height,
               std::size_t pitch, std::span<const std::uint8_t> pixels,
               png_channels channels = png_channels::rgba8);

/// Reads a PNG as 8-bit RGB: grey, grey + alpha, RGBA (alpha dropped), palette and 16-bit
/// images are converted. Throws std::runtime_error naming `path` for a missing or corrupt file.
[[nodiscard]] io::rgb8_image read_png(const std::filesystem::path& path);

/// An RGBA8 image, rows packed tightly (pitch = 4 * width).
struct rgba8_image {
  std::uint32_t width{0};
  std::uint32_t height{0};
  std::vector<std::uint8_t> rgba;
};

/// One RGBA8 frame of a contact sheet: `pitch` bytes between rows (0: tight).
struct frame_view {
  std::uint32_t width{0};
  std::uint32_t height{0};
  std::size_t pitch{0};
  std::span<const std::uint8_t> rgba;
};

/// Thumbnails of `frames` in a grid of `columns`, row by row: each frame box-downscaled to
/// `thumb_width` wide (its height in proportion, at least 1), every cell framed by a
/// `contact_sheet_border`-pixel dark grey border. Cells are as tall as the tallest thumbnail.
/// Throws std::invalid_argument for no frames, zero columns or width, or a frame whose
/// pixels do not fit its size.
[[nodiscard]] rgba8_image contact_sheet(std::span<const frame_view> frames, std::uint32_t columns,
                                        std::uint32_t thumb_width);
inline constexpr std::uint32_t contact_sheet_border = 2;

/// Where the test photographs are: $RESIDENT_PHOTO_DIR, or ~/.cache/resident/photos
/// (scripts/photos, run by scripts/deps, fills it).
[[nodiscard]] std::filesystem::path photo_dir();

/// The colour photographs among Debian python3-skimage's sample images that `dir` holds
/// (astronaut, chelsea, coffee, ihc, motorcycle_left, motorcycle_right), in that order; empty
/// when none was fetched.
[[nodiscard]] std::vector<std::filesystem::path> list_photos(
    const std::filesystem::path& dir = photo_dir());

}  // namespace resident::imaging
