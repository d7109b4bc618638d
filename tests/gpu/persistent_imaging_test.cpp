// persistent mode with the imaging operators' device forms: a mailbox-fed chain (raw_isp ->
// demosaic -> convert_resize) gives while mode's very bytes, for every Bayer order, both
// demosaic algorithms, every demosaic and resize output, with and without white balance, in a
// cooperative grid and in one block (which then takes every tile and line in turn). The camera
// pipeline itself (frame_rx, csi2_reconstruct, display_tx) is compared in camera_test.cpp.

#include <gmock/gmock.h>

#include <cstring>
#include <map>
#include <random>

#include "gpu/support.hpp"
#include "resident/ops/imaging.hpp"

namespace resident::testing {
namespace {

namespace img = ops::imaging;

struct chain_case {
  const char* name;
  const char* order;
  const char* white_balance;
  const char* algorithm;
  const char* demosaic_output;  // rgba16 | rgba8 | planar_f32
  const char* resize_output;    // planar_f32 | rgba8 | "" (no resize)
};

constexpr std::uint32_t width = 200;  // 4 x 7 demosaic tiles, a ragged last column and row
constexpr std::uint32_t height = 100;
constexpr std::uint32_t out_width = 56;
constexpr std::uint32_t out_height = 40;

std::size_t bytes_of(const char* format, std::uint32_t w, std::uint32_t h) {
  const std::string f = format;
  const std::size_t per_pixel = f == "rgba16" ? 8 : f == "rgba8" ? 4 : 12;
  return per_pixel * w * h;
}

class imaging_chain_app final : public Application {
 public:
  explicit imaging_chain_app(const chain_case& c)
      : Application("imaging_chain"),
        _case(c),
        _mailbox(std::make_shared<io::mailbox>(io::mailbox::config{
            std::size_t{width} * height * 2,
            *c.resize_output != 0 ? bytes_of(c.resize_output, out_width, out_height)
                                  : bytes_of(c.demosaic_output, width, height),
            4})) {}

  void compose() override {
    const auto w = std::int64_t{width};
    const auto h = std::int64_t{height};
    const std::string order = _case.order;
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto isp = make_operator<img::raw_isp>("isp", arg("width", w), arg("height", h),
                                           arg("order", order), arg("bits", std::int64_t{12}),
                                           arg("white_balance", std::string(_case.white_balance)));
    auto dem = make_operator<img::demosaic>("demosaic", arg("width", w), arg("height", h),
                                            arg("order", order), arg("bits", std::int64_t{12}),
                                            arg("algorithm", std::string(_case.algorithm)),
                                            arg("output", std::string(_case.demosaic_output)));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, isp, {{"sample", "in"}});
    add_flow(isp, dem, {{"out", "bayer"}});
    if (*_case.resize_output == 0) {
      add_flow(dem, tx, {{"rgb", "in"}});
      return;
    }
    auto resize = make_operator<img::convert_resize>(
        "resize", arg("in_width", w), arg("in_height", h),
        arg("in_format", std::string(_case.demosaic_output)),
        arg("out_width", std::int64_t{out_width}), arg("out_height", std::int64_t{out_height}),
        arg("out_format", std::string(_case.resize_output)));
    add_flow(dem, resize, {{"rgb", "in"}});
    add_flow(resize, tx, {{"out", "in"}});
  }

  [[nodiscard]] io::mailbox& mailbox() const { return *_mailbox; }

 private:
  chain_case _case;
  std::shared_ptr<io::mailbox> _mailbox;
};

/// Random 12-bit Bayer frames, carried as the floats drive_lockstep takes (bit copies). Each
/// frame gives the four cell positions its own range, so every frame has other grey-world
/// gains: a form reading the last frame's multipliers (or frame) would not match while mode.
std::vector<std::vector<float>> bayer_frames(int n) {
  std::mt19937 rng(7);
  std::vector<std::vector<float>> frames;
  for (int i = 0; i < n; ++i) {
    std::vector<std::uint16_t> px(std::size_t{width} * height);
    for (std::size_t k = 0; k < px.size(); ++k) {
      const auto position = static_cast<unsigned>((k / width % 2) * 2 + k % 2);
      const unsigned range = 0x400U + 0x300U * ((position + static_cast<unsigned>(i)) % 4);
      px[k] = static_cast<std::uint16_t>(rng() % range);
    }
    std::vector<float> carried(px.size() / 2);
    std::memcpy(carried.data(), px.data(), px.size() * 2);
    frames.push_back(std::move(carried));
  }
  return frames;
}

class persistent_imaging : public ::testing::TestWithParam<chain_case> {};

INSTANTIATE_TEST_SUITE_P(
    chains, persistent_imaging,
    ::testing::Values(
        chain_case{"rggb_malvar_rgba16_planar", "rggb", "grey_world", "malvar", "rgba16",
                   "planar_f32"},
        chain_case{"bggr_bilinear_rgba8_rgba8", "bggr", "none", "bilinear", "rgba8", "rgba8"},
        chain_case{"grbg_malvar_planar", "grbg", "grey_world", "malvar", "planar_f32", ""},
        chain_case{"gbrg_bilinear_rgba16", "gbrg", "grey_world", "bilinear", "rgba16", ""}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_P(persistent_imaging, gives_while_modes_bytes_in_a_grid_and_in_one_block) {
  RESIDENT_REQUIRE_GPU();
  imaging_chain_app app(GetParam());
  const auto frames = bayer_frames(4);
  std::map<int, std::vector<std::vector<std::byte>>> outputs;  // -1: while; else blocks
  for (const int blocks : {-1, 0, 1}) {
    SCOPED_TRACE(blocks < 0 ? std::string("while") : "persistent_blocks " + std::to_string(blocks));
    run_options options;
    if (blocks >= 0) options.persistent_blocks = blocks;
    auto run = run_async(app, blocks < 0 ? execution_mode::while_loop : execution_mode::persistent,
                         options);
    outputs[blocks] = drive_lockstep(app.mailbox(), frames);
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs[blocks].size(), frames.size());
    EXPECT_EQ(report.counters.processed, frames.size());
  }
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_TRUE(outputs[0][i] == outputs[-1][i]) << "frame " << i << ": the grid differs";
    EXPECT_TRUE(outputs[1][i] == outputs[-1][i]) << "frame " << i << ": one block differs";
  }
  // Not a constant output: the frames differ, and so do their results.
  EXPECT_FALSE(outputs[-1][0] == outputs[-1][1]);
}

}  // namespace
}  // namespace resident::testing
