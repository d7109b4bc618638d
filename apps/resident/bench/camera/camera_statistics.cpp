// bench camera's white-balance statistics study (see camera_statistics.hpp).

#include "bench/camera/camera_statistics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "resident/imaging/reference.hpp"
#include "resident/ops/imaging/isp_math.hpp"

namespace resident::bench {

namespace {

namespace ref = imaging::reference;
using nlohmann::json;

constexpr unsigned bits = 12;
constexpr std::uint16_t black = 256;
constexpr float max_value = 4095.0F;

/// PSNR of the ISP's linear RGB (interleaved, 0..max) against the photograph panned by (px, py)
/// at exposure `green` (what grey world restores every channel to), on an 8-bit scale.
double score(const ref::rgb_planes& rgb, const io::rgb8_image& photo, std::uint32_t w,
             std::uint32_t h, std::uint32_t px, std::uint32_t py, double green) {
  std::vector<float> got(rgb.size());
  std::vector<float> want(rgb.size());
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      const std::size_t i = (std::size_t{y} * w + x) * 3;
      const std::size_t p =
          (std::size_t{(y + py) % photo.height} * photo.width + (x + px) % photo.width) * 3;
      for (std::size_t c = 0; c < 3; ++c) {
        got[i + c] = std::clamp(rgb[i + c] / max_value * 255.0F, 0.0F, 255.0F);
        want[i + c] = static_cast<float>(photo.rgb[p + c] * green);
      }
    }
  }
  return ref::psnr(got, want, 255.0);
}

}  // namespace

json statistics_study(const io::rgb8_image& photo, const std::string& name,
                      const statistics_study_options& o) {
  if (o.frames < 2 || o.step_at == 0 || o.step_at >= o.frames) {
    throw std::invalid_argument("statistics_study: " + std::to_string(o.frames) +
                                " frames with the step at " + std::to_string(o.step_at));
  }
  const std::uint32_t w = photo.width & ~1U;
  const std::uint32_t h = photo.height & ~1U;
  const std::uint64_t unity = ops::imaging::isp_math::multiplier_q16(1.0, black, 4095);
  std::array<std::uint64_t, 3> previous{unity, unity, unity};
  std::vector<double> same_db;
  std::vector<double> previous_db;
  for (std::uint32_t i = 0; i < o.frames; ++i) {
    io::mosaic_options m;
    m.width = w;
    m.height = h;
    m.bits = bits;
    m.order = io::bayer_order::rggb;
    m.black_level = black;
    const float* cast = i < o.step_at ? o.before : o.after;
    std::copy(cast, cast + 3, std::begin(m.cast));
    m.pan_x = i * o.pan_step;
    m.pan_y = i * o.pan_step / 2;
    const auto raw = io::mosaic(photo, m);
    const auto own = ref::raw_isp(raw, w, h, m.order, bits, black, true).multipliers;
    const auto run = [&](const std::array<std::uint64_t, 3>& gains) {
      const auto corrected = ref::correct_raw(raw, w, h, m.order, bits, black, gains);
      return score(ref::demosaic_malvar(corrected, w, h, m.order, max_value), photo, w, h,
                   m.pan_x % photo.width, m.pan_y % photo.height, cast[1]);
    };
    same_db.push_back(run(own));
    previous_db.push_back(run(previous));
    previous = own;
  }
  const auto mean_from_1 = [](const std::vector<double>& v) {
    double s = 0;
    for (std::size_t i = 1; i < v.size(); ++i) s += v[i];
    return s / static_cast<double>(v.size() - 1);
  };
  std::uint32_t settle = 0;
  for (std::uint32_t i = o.step_at; i < o.frames; ++i) {
    if (std::abs(previous_db[i] - same_db[i]) <= 0.1) break;
    ++settle;
  }
  return {{"kind", "statistics"},
          {"photo", name},
          {"width", w},
          {"height", h},
          {"frames", o.frames},
          {"step_at", o.step_at},
          {"psnr_same_db", same_db},
          {"psnr_previous_db", previous_db},
          {"mean_same_db", mean_from_1(same_db)},
          {"mean_previous_db", mean_from_1(previous_db)},
          {"settle_frames", settle},
          {"step_loss_db", same_db[o.step_at] - previous_db[o.step_at]}};
}

}  // namespace resident::bench
