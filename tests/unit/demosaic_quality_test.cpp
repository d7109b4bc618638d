// Demosaic quality on real photographs: mosaic a photograph as a 12-bit sensor would see it,
// demosaic it back with the CPU references and compare with the original. Malvar-He-Cutler must
// beat bilinear by at least 3 dB on average. The photographs are Debian python3-skimage's
// sample images, fetched by scripts/deps (scripts/photos) into imaging::photo_dir().

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "resident/imaging/png.hpp"
#include "resident/imaging/reference.hpp"
#include "resident/io/bayer.hpp"

namespace resident::imaging {
namespace {

constexpr unsigned bits = 12;
constexpr float full_scale = (1U << bits) - 1U;

struct scores {
  double bilinear{0};
  double malvar{0};
};

scores score(const io::rgb8_image& photo, io::bayer_order order) {
  io::mosaic_options o;
  o.width = photo.width & ~1U;  // a Bayer frame is whole 2x2 cells
  o.height = photo.height & ~1U;
  o.bits = bits;
  o.order = order;
  o.black_level = 0;
  const std::vector<std::uint16_t> raw = io::mosaic(photo, o);
  std::vector<float> truth;
  truth.reserve(std::size_t{o.width} * o.height * 3);
  for (std::uint32_t y = 0; y < o.height; ++y) {
    for (std::uint32_t x = 0; x < o.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        truth.push_back(static_cast<float>(photo.rgb[(std::size_t{y} * photo.width + x) * 3 + c]) /
                        255.0F * full_scale);
      }
    }
  }
  return {reference::psnr(reference::demosaic_bilinear(raw, o.width, o.height, order, full_scale),
                          truth, full_scale),
          reference::psnr(reference::demosaic_malvar(raw, o.width, o.height, order, full_scale),
                          truth, full_scale)};
}

TEST(demosaic_quality, malvar_beats_bilinear_by_3_db_on_real_photographs) {
  const auto photos = list_photos();
  ASSERT_GE(photos.size(), 4U)
      << "the test photographs are missing from " << photo_dir() << " (found " << photos.size()
      << "); fetch them with scripts/deps (or scripts/photos), which downloads Debian's "
         "python3-skimage package and unpacks its sample photographs there "
         "(RESIDENT_PHOTO_DIR overrides the folder)";
  double bilinear = 0;
  double malvar = 0;
  int n = 0;
  for (const auto& path : photos) {
    const io::rgb8_image photo = read_png(path);
    for (const auto order : {io::bayer_order::rggb, io::bayer_order::gbrg}) {
      const scores s = score(photo, order);
      RecordProperty(path.stem().string() + (order == io::bayer_order::rggb ? "_rggb" : "_gbrg"),
                     std::to_string(s.bilinear) + " / " + std::to_string(s.malvar) + " dB");
      EXPECT_GT(s.malvar, s.bilinear) << path;
      bilinear += s.bilinear;
      malvar += s.malvar;
      ++n;
    }
  }
  bilinear /= n;
  malvar /= n;
  std::printf("demosaic PSNR over %d photograph/order pairs: bilinear %.2f dB, Malvar %.2f dB\n", n,
              bilinear, malvar);
  EXPECT_GE(malvar, bilinear + 3.0);
}

}  // namespace
}  // namespace resident::imaging
