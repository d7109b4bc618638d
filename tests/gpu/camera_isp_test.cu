// imaging.camera_isp launched on its own, one kernel at a time (no loop, no display engine: it
// runs under every compute-sanitizer tool), against the CPU pipeline: both statistics options,
// every RAW format and Bayer order, frames whose sides are not whole tiles, stream offsets that
// are not aligned, a corrupt frame that must not be committed.

#include <gmock/gmock.h>

#include <array>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu/support.hpp"
#include "resident/imaging/reference.hpp"
#include "resident/io/display.hpp"
#include "resident/ops/imaging.hpp"

namespace resident::testing {
namespace {

namespace img = ops::imaging;
namespace ref = imaging::reference;
using io::bayer_order;
using io::csi2::raw_format;

/// A smooth scene with a colour cast and some texture, different for each `frame` (so a stale
/// read or another frame's statistics show), as raw samples of `bits`.
std::vector<std::uint16_t> scene(std::uint32_t w, std::uint32_t h, bayer_order order, unsigned bits,
                                 std::uint32_t frame) {
  std::mt19937 rng(frame * 7919U + w);
  std::uniform_int_distribution<int> noise(-8, 8);
  const double full = static_cast<double>((1U << bits) - 1U);
  const double cast[3] = {0.55 + 0.05 * frame, 0.8, 0.35 + 0.1 * (frame % 3)};
  std::vector<std::uint16_t> raw(std::size_t{w} * h);
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      const int c = io::bayer_channel(order, x, y);
      const double base = 0.15 + 0.6 * ((x + 3 * frame) % w) / w + 0.2 * ((x / 5 + y / 3) % 2);
      const double v = full * base * cast[c] + noise(rng) * full / 1023.0;
      raw[std::size_t{y} * w + x] = static_cast<std::uint16_t>(v < 0      ? 0
                                                               : v > full ? full
                                                                          : v + 0.5);
    }
  }
  return raw;
}

/// The screen the CPU pipeline makes of `raw` corrected with `multipliers`.
std::vector<std::uint8_t> cpu_screen(const img::camera_isp_config& k,
                                     const std::vector<std::uint16_t>& raw,
                                     const std::array<std::uint64_t, 3>& multipliers) {
  const unsigned bits = static_cast<unsigned>(k.format);
  const float max_value = static_cast<float>((1U << bits) - 1U);
  const auto corrected =
      ref::correct_raw(raw, k.width, k.height, k.order, bits, k.black_level, multipliers);
  const auto rgb = k.malvar
                       ? ref::demosaic_malvar(corrected, k.width, k.height, k.order, max_value)
                       : ref::demosaic_bilinear(corrected, k.width, k.height, k.order, max_value);
  const auto rgba16 = ref::to_rgba16(rgb, max_value);
  std::vector<std::uint8_t> out(rgba16.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = i % 4 == 3 ? 255 : io::gamma_encode(rgba16[i], 65535, k.gamma);
  }
  return out;
}

std::array<std::uint64_t, 3> gains_of(const img::camera_isp_config& k,
                                      const std::vector<std::uint16_t>& raw) {
  return ref::raw_isp(raw, k.width, k.height, k.order, static_cast<unsigned>(k.format),
                      k.black_level, k.grey_world)
      .multipliers;
}

/// camera_isp's workspace, a display (never started: nothing latches a flip, so every frame
/// writes buffer 1) and device memory for one frame's packets and its frame_ref.
class isp_rig {
 public:
  explicit isp_rig(const img::camera_isp_config& k)
      : _k(k),
        _display(io::display_config{.width = k.width, .height = k.height}),
        _ws(k),
        _packets(io::csi2::frame_packet_bytes(k.format, k.width, k.height) + 32),
        _ref(sizeof(io::frame_ref)),
        _integrity(sizeof(io::frame_integrity)),
        _slot(sizeof(std::uint64_t)) {}

  /// Frame `frame` of `raw` (its packets `misalign` bytes past a 16-byte boundary), through one
  /// launch; `mask` is XORed into packet byte `corrupt_byte` first (when not -1). Returns buffer
  /// 1; the integrity record is in last_integrity.
  std::vector<std::uint8_t> run(const std::vector<std::uint16_t>& raw, std::uint64_t frame,
                                std::size_t misalign, long corrupt_byte = -1,
                                std::uint8_t mask = 0x10) {
    return run_in_slot(raw, frame, misalign, std::nullopt, corrupt_byte, mask);
  }

  /// As run(), with the frame in a ring slot whose record names `slot_says` when given (a
  /// bridge that rewrote the slot with a later frame while the pass read it).
  std::vector<std::uint8_t> run_in_slot(const std::vector<std::uint16_t>& raw, std::uint64_t frame,
                                        std::size_t misalign,
                                        std::optional<std::uint64_t> slot_says,
                                        long corrupt_byte = -1, std::uint8_t mask = 0x10) {
    auto packets =
        io::csi2::frame_packets(_k.format, _k.width, _k.height, raw, io::csi2_frame_number(frame));
    if (corrupt_byte >= 0) packets[static_cast<std::size_t>(corrupt_byte)] ^= mask;
    auto* base = static_cast<std::uint8_t*>(_packets.data()) + misalign;
    RESIDENT_CUDA_TRY(cudaMemcpy(base, packets.data(), packets.size(), cudaMemcpyHostToDevice));
    io::frame_ref fr{};
    fr.packets = base;
    fr.bytes = packets.size();
    fr.frame = frame;
    if (slot_says) {
      RESIDENT_CUDA_TRY(
          cudaMemcpy(_slot.data(), &*slot_says, sizeof *slot_says, cudaMemcpyHostToDevice));
      fr.slot_frame = _slot.data_as<const std::uint64_t>();
    }
    RESIDENT_CUDA_TRY(cudaMemcpy(_ref.data(), &fr, sizeof fr, cudaMemcpyHostToDevice));
    stream s;
    img::detail::launch_camera_isp(_ref.data_as<const io::frame_ref>(),
                                   _integrity.data_as<io::frame_integrity>(), _ws,
                                   _display.device_view(), nullptr, s.get());
    s.synchronize();
    RESIDENT_CUDA_TRY(cudaMemcpy(&last_integrity, _integrity.data(), sizeof last_integrity,
                                 cudaMemcpyDeviceToHost));
    std::vector<std::uint8_t> screen(_display.image_bytes());
    _display.copy_buffer(1, screen);
    return screen;
  }

  [[nodiscard]] io::display& display() { return _display; }
  [[nodiscard]] const img::camera_isp_workspace& workspace() const { return _ws; }
  io::frame_integrity last_integrity{};

 private:
  img::camera_isp_config _k;
  io::display _display;
  img::camera_isp_workspace _ws;
  device_buffer _packets;
  device_buffer _ref;
  device_buffer _integrity;
  device_buffer _slot;
};

int worst(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  int w = 0;
  for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(int(a[i]) - int(b[i])));
  return w;
}

img::camera_isp_config config(raw_format f, bayer_order o, std::uint32_t w, std::uint32_t h,
                              img::isp_statistics statistics) {
  img::camera_isp_config k;
  k.width = w;
  k.height = h;
  k.format = f;
  k.order = o;
  k.black_level = 256U >> (12U - static_cast<unsigned>(f));
  k.statistics = statistics;
  return k;
}

TEST(camera_isp, same_frame_statistics_are_the_cpu_pipeline_in_every_format_and_order) {
  RESIDENT_REQUIRE_GPU();
  for (const raw_format f : {raw_format::raw8, raw_format::raw10, raw_format::raw12}) {
    for (const bayer_order o :
         {bayer_order::rggb, bayer_order::bggr, bayer_order::grbg, bayer_order::gbrg}) {
      // 136 x 38: the last tile column (8 of 64) and row (6 of 16) are partial.
      const auto k = config(f, o, 136, 38, img::isp_statistics::same_frame);
      SCOPED_TRACE(std::string(io::csi2::to_string(f)) + " " + std::string(io::to_string(o)));
      isp_rig rig(k);
      for (std::uint32_t frame = 1; frame <= 2; ++frame) {
        const auto raw = scene(k.width, k.height, o, static_cast<unsigned>(f), frame);
        const auto screen = rig.run(raw, frame, frame == 1 ? 0 : 5);
        EXPECT_TRUE(rig.last_integrity.ok());
        EXPECT_LE(worst(screen, cpu_screen(k, raw, gains_of(k, raw))), 1) << "frame " << frame;
        EXPECT_EQ(rig.workspace().read_multipliers(), gains_of(k, raw));
      }
    }
  }
}

// Graph modes launch as many blocks as fit at once, each taking tiles in turn; one block per
// tile gives the same bytes, gains and verdict. 1080p: more tiles than blocks fit, so the blocks
// do take several tiles each.
TEST(camera_isp, a_resident_grid_and_one_block_per_tile_write_the_same_frame) {
  RESIDENT_REQUIRE_GPU();
  auto k =
      config(raw_format::raw12, bayer_order::grbg, 1920, 1080, img::isp_statistics::same_frame);
  isp_rig resident_grid(k);
  k.resident_grid = false;
  isp_rig per_tile(k);
  const unsigned tiles = (1920 / 64) * ((1080 + 15) / 16);
  ASSERT_LT(resident_grid.workspace().resident_blocks(), tiles);
  for (std::uint32_t frame = 1; frame <= 2; ++frame) {
    const auto raw = scene(k.width, k.height, k.order, 12, frame);
    const auto a = resident_grid.run(raw, frame, 0);
    EXPECT_TRUE(resident_grid.last_integrity.ok());
    const auto b = per_tile.run(raw, frame, 0);
    EXPECT_TRUE(per_tile.last_integrity.ok());
    EXPECT_EQ(a, b) << "frame " << frame;
    EXPECT_LE(worst(a, cpu_screen(k, raw, gains_of(k, raw))), 1) << "frame " << frame;
    EXPECT_EQ(resident_grid.workspace().read_multipliers(),
              per_tile.workspace().read_multipliers());
  }
}

TEST(camera_isp, previous_frame_statistics_use_the_last_sound_frames_gains) {
  RESIDENT_REQUIRE_GPU();
  for (const bool malvar : {true, false}) {
    auto k =
        config(raw_format::raw12, bayer_order::grbg, 200, 90, img::isp_statistics::previous_frame);
    k.malvar = malvar;
    SCOPED_TRACE(malvar ? "malvar" : "bilinear");
    isp_rig rig(k);
    const std::uint64_t unity = ops::imaging::isp_math::multiplier_q16(1.0, k.black_level, 4095);
    const auto a = scene(k.width, k.height, k.order, 12, 1);
    const auto b = scene(k.width, k.height, k.order, 12, 2);
    const auto c = scene(k.width, k.height, k.order, 12, 3);
    ASSERT_NE(gains_of(k, a), gains_of(k, b)) << "the frames' casts must differ";
    // The first frame: gain 1; then each frame with the one before's.
    EXPECT_LE(worst(rig.run(a, 1, 3), cpu_screen(k, a, {unity, unity, unity})), 1);
    EXPECT_EQ(rig.workspace().read_multipliers(), gains_of(k, a));
    EXPECT_LE(worst(rig.run(b, 2, 3), cpu_screen(k, b, gains_of(k, a))), 1);
    // A corrupt frame (a payload bit of line 40) is not committed and leaves the gains be.
    const std::size_t line = io::csi2::line_bytes(k.format, k.width);
    const auto before = rig.display().counters();
    (void)rig.run(c, 3, 3, static_cast<long>(4 + 40 * (line + 6) + 4 + 17));
    EXPECT_FALSE(rig.last_integrity.ok());
    EXPECT_EQ(rig.last_integrity.crc_errors, 1U);
    EXPECT_EQ(rig.display().counters().corrupt_frames, before.corrupt_frames + 1);
    EXPECT_EQ(rig.display().counters().frames_written, before.frames_written);
    EXPECT_EQ(rig.workspace().read_multipliers(), gains_of(k, b));
    // The next sound frame is corrected with b's gains, the last sound frame's.
    EXPECT_LE(worst(rig.run(c, 4, 0), cpu_screen(k, c, gains_of(k, b))), 1);
  }
}

TEST(camera_isp, every_integrity_check_equals_csi2_reconstructs) {
  RESIDENT_REQUIRE_GPU();
  const auto k =
      config(raw_format::raw10, bayer_order::rggb, 136, 38, img::isp_statistics::previous_frame);
  const auto raw = scene(k.width, k.height, k.order, 10, 1);
  const std::size_t line = io::csi2::line_bytes(k.format, k.width);
  using counter = std::uint32_t io::frame_integrity::*;
  struct fault {
    const char* what;
    long byte;
    std::uint8_t mask;
    counter count;
  };
  const fault faults[] = {
      {"a header bit of line 7 (corrected)", static_cast<long>(4 + 7 * (line + 6) + 1), 0x10,
       &io::frame_integrity::corrected_headers},
      {"two header bits of line 5", static_cast<long>(4 + 5 * (line + 6) + 1), 0x03,
       &io::frame_integrity::corrupt_headers},
      {"a payload bit of the last line", static_cast<long>(4 + 37 * (line + 6) + 4 + line - 1),
       0x10, &io::frame_integrity::crc_errors},
      {"the footer of line 0", static_cast<long>(4 + 4 + line), 0x10,
       &io::frame_integrity::crc_errors},
  };
  for (const auto& f : faults) {
    SCOPED_TRACE(f.what);
    isp_rig rig(k);
    (void)rig.run(raw, 1, 0, f.byte, f.mask);
    EXPECT_EQ(rig.last_integrity.*f.count, 1U);
    EXPECT_EQ(rig.last_integrity.frame, 1U);
    // A corrected header is used: that frame is sound and shown; the others are not.
    const bool sound = f.count == &io::frame_integrity::corrected_headers;
    EXPECT_EQ(rig.last_integrity.ok(), sound);
    EXPECT_EQ(rig.display().counters().frames_written, sound ? 1U : 0U);
    EXPECT_EQ(rig.display().counters().corrupt_frames, sound ? 0U : 1U);
    EXPECT_EQ(rig.display().counters().rewritten_frames, 0U) << "the slot still named the frame";
  }
}

TEST(camera_isp, a_frame_whose_slot_was_rewritten_while_read_is_counted_and_not_shown) {
  RESIDENT_REQUIRE_GPU();
  const auto k =
      config(raw_format::raw12, bayer_order::rggb, 136, 38, img::isp_statistics::same_frame);
  const auto raw = scene(k.width, k.height, k.order, 12, 3);
  isp_rig rig(k);
  (void)rig.run_in_slot(raw, 3, 0, std::uint64_t{3});  // the slot still names frame 3: shown
  EXPECT_TRUE(rig.last_integrity.ok());
  EXPECT_EQ(rig.display().counters().frames_written, 1U);
  (void)rig.run_in_slot(raw, 4, 0, std::uint64_t{8});  // frame 8 landed in frame 4's slot
  EXPECT_EQ(rig.last_integrity.overwritten, 1U);
  EXPECT_EQ(rig.last_integrity.crc_errors, 0U) << "the packets themselves were whole";
  const io::display_counters c = rig.display().counters();
  EXPECT_EQ(c.frames_written, 1U) << "frame 4 was not written";
  EXPECT_EQ(c.corrupt_frames, 1U);
  EXPECT_EQ(c.rewritten_frames, 1U);
}

TEST(camera_isp, refuses_a_front_buffer_display_and_a_display_of_another_size) {
  RESIDENT_REQUIRE_GPU();
  auto front = std::make_shared<io::display>(
      io::display_config{.width = 64, .height = 32, .mode = io::present_mode::front_buffer});
  auto other = std::make_shared<io::display>(io::display_config{.width = 128, .height = 32});
  for (const auto& [d, message] :
       {std::pair{front, std::string("a front-buffer display is refused")},
        std::pair{other, std::string("must be the display's 128x32")}}) {
    class one final : public Application {
     public:
      explicit one(std::shared_ptr<io::display> d) : _d(std::move(d)) {}
      void compose() override {
        (void)make_operator<img::camera_isp>("isp", _d, arg("width", std::int64_t{64}),
                                             arg("height", std::int64_t{32}));
      }

     private:
      std::shared_ptr<io::display> _d;
    } app(d);
    try {
      (void)app.plan();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const composition_error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(message));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("'isp'"));
    }
  }
}

}  // namespace
}  // namespace resident::testing
