// PNG files and contact sheets (lab): what the camera pipeline's dumps are written with.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/imaging/png.hpp"

namespace resident::imaging {
namespace {

std::filesystem::path temp_file(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "resident_png_test";
  std::filesystem::create_directories(dir);
  return dir / (name + "_" + std::to_string(std::random_device{}()) + ".png");
}

std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(byte(rng));
  return v;
}

template <class E>
std::string message_of(const auto& call) {
  try {
    call();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(png, rgba_round_trip_keeps_the_colours_and_drops_alpha) {
  constexpr std::uint32_t w = 37;
  constexpr std::uint32_t h = 11;
  constexpr std::size_t pitch = w * 4 + 12;  // padded rows: only the pixels are written
  const auto pixels = random_bytes(pitch * h);
  const auto path = temp_file("rgba");
  write_png(path, w, h, pitch, pixels);
  const io::rgb8_image back = read_png(path);
  ASSERT_EQ(back.width, w);
  ASSERT_EQ(back.height, h);
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(back.rgb[(y * w + x) * 3 + c], pixels[y * pitch + x * 4 + c])
            << "pixel (" << x << ", " << y << ") channel " << c;
      }
    }
  }
  std::filesystem::remove(path);
}

TEST(png, rgb_round_trip_is_exact) {
  constexpr std::uint32_t w = 20;
  constexpr std::uint32_t h = 9;
  const auto pixels = random_bytes(w * h * 3);
  const auto path = temp_file("rgb");
  write_png(path, w, h, w * 3, pixels, png_channels::rgb8);
  const io::rgb8_image back = read_png(path);
  EXPECT_EQ(back.width, w);
  EXPECT_EQ(back.height, h);
  EXPECT_EQ(back.rgb, pixels);
  std::filesystem::remove(path);
}

TEST(png, a_corrupt_file_is_an_error_naming_it) {
  const auto path = temp_file("corrupt");
  const auto pixels = random_bytes(16 * 16 * 4);
  write_png(path, 16, 16, 16 * 4, pixels);
  // Keep the signature and header, cut the image data short.
  std::filesystem::resize_file(path, 60);
  const std::string truncated = message_of<std::runtime_error>([&] { (void)read_png(path); });
  EXPECT_NE(truncated.find(path.string()), std::string::npos) << truncated;

  std::ofstream(path, std::ios::binary | std::ios::trunc) << "this is not a PNG file";
  const std::string garbage = message_of<std::runtime_error>([&] { (void)read_png(path); });
  EXPECT_NE(garbage.find(path.string()), std::string::npos) << garbage;
  std::filesystem::remove(path);
}

TEST(png, missing_files_and_unwritable_paths_are_errors_naming_them) {
  const std::filesystem::path missing = "/nonexistent/resident/none.png";
  const std::string read = message_of<std::runtime_error>([&] { (void)read_png(missing); });
  EXPECT_NE(read.find(missing.string()), std::string::npos) << read;
  const std::vector<std::uint8_t> pixels(4 * 4 * 4);
  const std::string write =
      message_of<std::runtime_error>([&] { write_png(missing, 4, 4, 16, pixels); });
  EXPECT_NE(write.find(missing.string()), std::string::npos) << write;
  const std::string small =
      message_of<std::invalid_argument>([&] { write_png(temp_file("small"), 5, 4, 20, pixels); });
  EXPECT_NE(small.find("do not fit"), std::string::npos) << small;
}

TEST(png, grey_palette_and_alpha_images_read_as_rgb) {
  // Debian python3-skimage's sample images (scripts/photos) hold each kind.
  const auto dir = photo_dir();
  if (!std::filesystem::exists(dir / "camera.png")) {
    GTEST_SKIP() << "no sample images in " << dir << "; scripts/deps fetches them";
  }
  const io::rgb8_image grey = read_png(dir / "camera.png");  // 8-bit greyscale
  ASSERT_EQ(grey.rgb.size(), std::size_t{grey.width} * grey.height * 3);
  for (std::size_t i = 0; i < grey.rgb.size(); i += 3) {
    ASSERT_EQ(grey.rgb[i], grey.rgb[i + 1]);
    ASSERT_EQ(grey.rgb[i], grey.rgb[i + 2]);
  }
  const io::rgb8_image palette = read_png(dir / "palette_color.png");  // colour map
  EXPECT_EQ(palette.width, 10U);
  EXPECT_EQ(palette.rgb.size(), 10U * 10U * 3U);
  const io::rgb8_image rgba = read_png(dir / "logo.png");  // RGBA
  EXPECT_EQ(rgba.rgb.size(), std::size_t{rgba.width} * rgba.height * 3);
}

TEST(contact_sheet, lays_thumbnails_out_in_a_bordered_grid) {
  // Five 64x32 frames of one flat colour each, three columns of 16-pixel-wide thumbnails.
  std::vector<std::vector<std::uint8_t>> pixels;
  std::vector<frame_view> frames;
  for (std::uint8_t i = 0; i < 5; ++i) {
    pixels.emplace_back(64 * 32 * 4);
    for (std::size_t p = 0; p < pixels.back().size(); p += 4) {
      pixels.back()[p] = static_cast<std::uint8_t>(40 * i + 10);
      pixels.back()[p + 1] = 200;
      pixels.back()[p + 2] = 7;
      pixels.back()[p + 3] = 255;
    }
  }
  for (const auto& p : pixels) frames.push_back({64, 32, 0, p});
  const rgba8_image sheet = contact_sheet(frames, 3, 16);
  constexpr std::uint32_t b = contact_sheet_border;
  EXPECT_EQ(sheet.width, 3 * (16 + 2 * b));
  EXPECT_EQ(sheet.height, 2 * (8 + 2 * b));
  ASSERT_EQ(sheet.rgba.size(), std::size_t{sheet.width} * sheet.height * 4);
  auto at = [&](std::uint32_t x, std::uint32_t y) {
    return &sheet.rgba[(y * sheet.width + x) * 4];
  };
  for (std::uint32_t i = 0; i < 5; ++i) {
    const std::uint32_t x = (i % 3) * (16 + 2 * b) + b;
    const std::uint32_t y = (i / 3) * (8 + 2 * b) + b;
    EXPECT_EQ(at(x, y)[0], 40 * i + 10) << "thumbnail " << i;
    EXPECT_EQ(at(x + 15, y + 7)[1], 200) << "thumbnail " << i;
    EXPECT_EQ(at(x - 1, y)[1], 48) << "border left of thumbnail " << i;
    EXPECT_EQ(at(x, y + 8)[1], 48) << "border below thumbnail " << i;
  }
  EXPECT_EQ(at(sheet.width - 1, sheet.height - 1)[1], 48) << "the empty sixth cell";
}

TEST(contact_sheet, box_downscaling_averages_the_source_pixels) {
  // A 4x2 frame of a black and a white column pair becomes one pixel of the mean.
  std::vector<std::uint8_t> p(4 * 2 * 4, 0);
  for (std::uint32_t y = 0; y < 2; ++y) {
    for (std::uint32_t x = 2; x < 4; ++x) {
      for (int c = 0; c < 3; ++c) p[(y * 4 + x) * 4 + c] = 255;
    }
  }
  const frame_view frame{4, 2, 0, p};
  const rgba8_image sheet = contact_sheet(std::span(&frame, 1), 1, 2);
  constexpr std::uint32_t b = contact_sheet_border;
  EXPECT_EQ(sheet.width, 2 + 2 * b);
  EXPECT_EQ(sheet.height, 1 + 2 * b);
  const std::uint8_t* first = &sheet.rgba[(b * sheet.width + b) * 4];
  EXPECT_EQ(first[0], 0);
  EXPECT_EQ(first[4], 255);
  EXPECT_THROW((void)contact_sheet({}, 2, 16), std::invalid_argument);
}

TEST(photos, the_directory_follows_the_environment) {
  const char* old = std::getenv("RESIDENT_PHOTO_DIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("RESIDENT_PHOTO_DIR", "/tmp/resident-photos-test", 1);
  EXPECT_EQ(photo_dir(), std::filesystem::path("/tmp/resident-photos-test"));
  EXPECT_TRUE(list_photos("/nonexistent/resident").empty());
  if (old != nullptr) {
    ::setenv("RESIDENT_PHOTO_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("RESIDENT_PHOTO_DIR");
  }
}

}  // namespace
}  // namespace resident::imaging
