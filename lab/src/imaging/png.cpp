#include "resident/imaging/png.hpp"

#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

namespace resident::imaging {

namespace {

// libpng reports errors through a callback that must not return: it records the message and
// jumps back to the setjmp in the function that drives libpng. Those functions hold only
// trivially destructible locals between setjmp and the calls that may jump.
struct png_error_state {
  char message[256]{};
};

[[noreturn]] void on_png_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<png_error_state*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

struct file_closer {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

file_ptr open_file(const std::filesystem::path& path, const char* mode, const char* what) {
  file_ptr f(std::fopen(path.c_str(), mode));
  if (!f) {
    throw std::runtime_error(std::string(what) + ": cannot open '" + path.string() + "'");
  }
  return f;
}

// What read_png decodes: height rows of `channels` 8-bit samples (1 grey, 2 grey + alpha,
// 3 RGB, 4 RGBA) after libpng expanded palettes and low bit depths and scaled 16 bits to 8.
struct decoded {
  std::uint32_t width{0};
  std::uint32_t height{0};
  unsigned channels{0};
  std::vector<std::uint8_t> samples;
  std::vector<png_bytep> rows;
};

bool decode(std::FILE* f, decoded& out, png_error_state& error) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(error.message, sizeof(error.message), "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    return false;
  }
  png_init_io(png, f);
  png_set_user_limits(png, 1U << 16, 1U << 16);  // a corrupt header cannot ask for terabytes
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16) png_set_scale_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.width = png_get_image_width(png, info);
  out.height = png_get_image_height(png, info);
  out.channels = png_get_channels(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  out.samples.resize(row_bytes * out.height);
  out.rows.resize(out.height);
  for (std::uint32_t y = 0; y < out.height; ++y) out.rows[y] = out.samples.data() + y * row_bytes;
  png_read_image(png, out.rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

bool encode(std::FILE* f, std::uint32_t width, std::uint32_t height, png_channels channels,
            png_bytepp rows, png_error_state& error) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(error.message, sizeof(error.message), "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png)) != 0) {
    png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
    return false;
  }
  png_init_io(png, f);
  // Dumps are written off the critical path but may be many: favour speed over size.
  png_set_compression_level(png, 3);
  png_set_IHDR(png, info, width, height, 8,
               channels == png_channels::rgba8 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void write_png(const std::filesystem::path& path, std::uint32_t width, std::uint32_t height,
               std::size_t pitch, std::span<const std::uint8_t> pixels, png_channels channels) {
  const std::size_t row_bytes = std::size_t{width} * static_cast<std::size_t>(channels);
  if (width == 0 || height == 0 || pitch < row_bytes ||
      pixels.size() < pitch * (height - 1) + row_bytes) {
    throw std::invalid_argument("write_png '" + path.string() + "': " + std::to_string(width) +
                                "x" + std::to_string(height) + " pixels of " +
                                std::to_string(static_cast<int>(channels)) + " bytes at pitch " +
                                std::to_string(pitch) + " do not fit " +
                                std::to_string(pixels.size()) + " bytes");
  }
  std::vector<png_bytep> rows(height);
  for (std::uint32_t y = 0; y < height; ++y) {
    // libpng's row pointers are not const, but writing only reads them.
    rows[y] = const_cast<png_bytep>(pixels.data() + y * pitch);
  }
  file_ptr f = open_file(path, "wb", "write_png");
  png_error_state error;
  if (!encode(f.get(), width, height, channels, rows.data(), error)) {
    throw std::runtime_error("write_png '" + path.string() + "': " + error.message);
  }
  if (std::fflush(f.get()) != 0 || std::ferror(f.get()) != 0) {
    throw std::runtime_error("write_png '" + path.string() + "': write failed");
  }
}

io::rgb8_image read_png(const std::filesystem::path& path) {
  file_ptr f = open_file(path, "rb", "read_png");
  decoded d;
  png_error_state error;
  if (!decode(f.get(), d, error)) {
    throw std::runtime_error("read_png '" + path.string() + "': " + error.message);
  }
  io::rgb8_image image{d.width, d.height, {}};
  image.rgb.resize(std::size_t{d.width} * d.height * 3);
  const bool colour = d.channels >= 3;
  for (std::uint32_t y = 0; y < d.height; ++y) {
    const std::uint8_t* row = d.rows[y];
    std::uint8_t* out = image.rgb.data() + std::size_t{y} * d.width * 3;
    for (std::uint32_t x = 0; x < d.width; ++x) {
      const std::uint8_t* px = row + std::size_t{x} * d.channels;
      for (unsigned c = 0; c < 3; ++c) out[3 * x + c] = colour ? px[c] : px[0];
    }
  }
  return image;
}

rgba8_image contact_sheet(std::span<const frame_view> frames, std::uint32_t columns,
                          std::uint32_t thumb_width) {
  if (frames.empty() || columns == 0 || thumb_width == 0) {
    throw std::invalid_argument(
        "contact_sheet: needs at least one frame, one column and a thumbnail width");
  }
  constexpr std::uint32_t b = contact_sheet_border;
  std::vector<std::uint32_t> thumb_height(frames.size());
  std::uint32_t tallest = 1;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const frame_view& f = frames[i];
    const std::size_t pitch = f.pitch != 0 ? f.pitch : std::size_t{f.width} * 4;
    if (f.width == 0 || f.height == 0 || pitch < std::size_t{f.width} * 4 ||
        f.rgba.size() < pitch * (f.height - 1) + std::size_t{f.width} * 4) {
      throw std::invalid_argument("contact_sheet: frame " + std::to_string(i) + " (" +
                                  std::to_string(f.width) + "x" + std::to_string(f.height) +
                                  ") does not fit its " + std::to_string(f.rgba.size()) + " bytes");
    }
    const auto h =
        static_cast<std::uint32_t>((std::uint64_t{f.height} * thumb_width + f.width / 2) / f.width);
    thumb_height[i] = std::max<std::uint32_t>(h, 1);
    tallest = std::max(tallest, thumb_height[i]);
  }
  const auto n = static_cast<std::uint32_t>(frames.size());
  const std::uint32_t cols = std::min(columns, n);
  const std::uint32_t grid_rows = (n + columns - 1) / columns;
  const std::uint32_t cell_w = thumb_width + 2 * b;
  const std::uint32_t cell_h = tallest + 2 * b;
  rgba8_image sheet{cols * cell_w, grid_rows * cell_h, {}};
  sheet.rgba.resize(std::size_t{sheet.width} * sheet.height * 4);
  for (std::size_t i = 0; i < sheet.rgba.size(); i += 4) {
    sheet.rgba[i] = sheet.rgba[i + 1] = sheet.rgba[i + 2] = 48;  // the border
    sheet.rgba[i + 3] = 255;
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    const frame_view& f = frames[i];
    const std::size_t pitch = f.pitch != 0 ? f.pitch : std::size_t{f.width} * 4;
    const std::uint32_t th = thumb_height[i];
    const std::uint32_t ox = (i % columns) * cell_w + b;
    const std::uint32_t oy = (i / columns) * cell_h + b;
    for (std::uint32_t ty = 0; ty < th; ++ty) {
      // The box of source pixels under this thumbnail pixel (at least one).
      const std::uint32_t y0 = static_cast<std::uint32_t>(std::uint64_t{ty} * f.height / th);
      const std::uint32_t y1 =
          std::max(y0 + 1, static_cast<std::uint32_t>(std::uint64_t{ty + 1} * f.height / th));
      for (std::uint32_t tx = 0; tx < thumb_width; ++tx) {
        const auto x0 = static_cast<std::uint32_t>(std::uint64_t{tx} * f.width / thumb_width);
        const std::uint32_t x1 = std::max(
            x0 + 1, static_cast<std::uint32_t>(std::uint64_t{tx + 1} * f.width / thumb_width));
        std::uint64_t sum[4]{};
        for (std::uint32_t y = y0; y < y1; ++y) {
          const std::uint8_t* row = f.rgba.data() + y * pitch;
          for (std::uint32_t x = x0; x < x1; ++x) {
            for (int c = 0; c < 4; ++c) sum[c] += row[4 * x + c];
          }
        }
        const std::uint64_t count = std::uint64_t{y1 - y0} * (x1 - x0);
        std::uint8_t* out = sheet.rgba.data() + (std::size_t{oy + ty} * sheet.width + ox + tx) * 4;
        for (int c = 0; c < 3; ++c)
          out[c] = static_cast<std::uint8_t>((sum[c] + count / 2) / count);
        out[3] = 255;
      }
    }
  }
  return sheet;
}

std::filesystem::path photo_dir() {
  if (const char* dir = std::getenv("RESIDENT_PHOTO_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr && *home != '\0' ? home : ".") / ".cache" /
         "resident" / "photos";
}

std::vector<std::filesystem::path> list_photos(const std::filesystem::path& dir) {
  static constexpr const char* colour_photographs[] = {
      "astronaut", "chelsea", "coffee", "ihc", "motorcycle_left", "motorcycle_right"};
  std::vector<std::filesystem::path> found;
  for (const char* name : colour_photographs) {
    std::filesystem::path p = dir / (std::string(name) + ".png");
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) found.push_back(std::move(p));
  }
  return found;
}

}  // namespace resident::imaging
