// A camera configuration is held to ranges and buffer budgets (camera::limits): a shape, ring,
// rate or refresh a run could not allocate or keep is an error naming the key and the range,
// and so is a key given twice.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "camera/camera.hpp"
#include "resident/app/error.hpp"

namespace resident::camera {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

/// The config_error a camera section `camera` (and the rest of the file `rest`) is refused with;
/// empty when it is accepted.
std::string error_of(const std::string& camera, const std::string& rest = "") {
  try {
    (void)parse_camera_settings("camera: {" + camera + "}\n" + rest, "cam.yaml");
  } catch (const config_error& e) {
    return e.what();
  }
  return {};
}

TEST(camera_settings_limits, the_example_shape_and_the_limits_themselves_are_accepted) {
  EXPECT_EQ(error_of("width: 1920, height: 1080"), "");
  EXPECT_EQ(error_of("width: 16384, height: 8192, ring_slots: 4"), "");
  EXPECT_EQ(error_of("rate_hz: 5000", "display: {refresh_hz: 1000, min_refresh_hz: 1}\n"), "");
}

TEST(camera_settings_limits, a_side_beyond_16384_names_the_key_and_range) {
  EXPECT_EQ(error_of("width: 100000000"),
            "cam.yaml:1: 'camera.width' is 100000000; it must be a whole number in [4, 16384], "
            "a multiple of 4");
  EXPECT_THAT(error_of("width: 16384, height: 100000000"),
              HasSubstr("'camera.height' is 100000000; it must be a whole number in [2, 16384]"));
  EXPECT_THAT(error_of("width: -4"), HasSubstr("'camera.width' is -4"));
}

TEST(camera_settings_limits, a_frame_beyond_the_byte_budget_is_refused) {
  EXPECT_THAT(error_of("width: 16384, height: 16384"),
              AllOf(HasSubstr("a 16384x16384 raw12 frame is "),
                    HasSubstr(" bytes of CSI-2 packets; at most 268435456 (256 MiB) are allowed")));
}

TEST(camera_settings_limits, ring_slots_are_held_to_1024_and_4_gib) {
  EXPECT_THAT(error_of("ring_slots: 1000000000"),
              HasSubstr("'camera.ring_slots' is 1000000000; it must be a whole number in [2, "
                        "1024]"));
  EXPECT_THAT(error_of("ring_slots: 1"), HasSubstr("in [2, 1024]"));
  // 1024 slots of a 4K RAW12 frame (12.4 MB each) would take 12.7 GB of GPU memory.
  EXPECT_THAT(error_of("width: 3840, height: 2160, ring_slots: 1024"),
              HasSubstr("camera.ring_slots 1024 of 3840x2160 raw12 frames is"));
}

TEST(camera_settings_limits, rates_must_be_finite_and_within_what_the_sensor_can_keep) {
  EXPECT_THAT(error_of("rate_hz: .inf"),
              HasSubstr("'camera.rate_hz' is .inf; it must be a finite number in [1, 5000]"));
  EXPECT_THAT(error_of("rate_hz: .nan"), HasSubstr("'camera.rate_hz' is .nan"));
  EXPECT_THAT(error_of("rate_hz: 1e9"), HasSubstr("'camera.rate_hz' is 1e9"));
  EXPECT_THAT(error_of("rate_hz: 0"), HasSubstr("'camera.rate_hz' is 0"));
}

TEST(camera_settings_limits, display_refresh_is_a_real_panel_range) {
  EXPECT_THAT(error_of("", "display: {refresh_hz: 1e9}\n"),
              HasSubstr("cam.yaml:2: 'display.refresh_hz' is 1e9; it must be a finite number in "
                        "[1, 1000]"));
  EXPECT_THAT(error_of("", "display: {refresh_hz: 60, min_refresh_hz: 120}\n"),
              HasSubstr("display.min_refresh_hz (120) must be at most display.refresh_hz (60)"));
}

TEST(camera_settings_limits, the_black_level_must_be_below_the_formats_full_scale) {
  // The default black level (256, 12-bit units) is full scale and more at 8 bits.
  EXPECT_THAT(error_of("format: raw8"),
              HasSubstr("camera.black_level 256 must be below the full scale 255 of 8-bit "
                        "samples (raw8)"));
  EXPECT_EQ(error_of("format: raw8, black_level: 16"), "");
}

TEST(camera_settings_limits, a_duplicated_key_names_the_key_and_both_lines) {
  EXPECT_EQ(error_of("width: 1920", "display:\n  refresh_hz: 240\n  refresh_hz: 60\n"),
            "cam.yaml:4:3: key 'refresh_hz' is given twice (first at line 3)");
  try {
    (void)parse_camera_settings("camera: {width: 1920}\ncamera: {width: 640}\n", "cam.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const config_error& e) {
    EXPECT_STREQ(e.what(), "cam.yaml:2:1: key 'camera' is given twice (first at line 1)");
  }
}

TEST(camera_settings_isp, fused_and_its_statistics_are_read_and_checked) {
  const camera_settings s = parse_camera_settings(
      "camera: {width: 64, height: 32}\npipeline: {isp: fused, statistics: same-frame}\n",
      "cam.yaml");
  EXPECT_EQ(s.isp, "fused");
  EXPECT_EQ(s.statistics, "same-frame");
  const camera_settings d = parse_camera_settings("camera: {width: 64, height: 32}\n", "cam.yaml");
  EXPECT_EQ(d.isp, "fused") << "the fused pass is the default";
  EXPECT_EQ(d.statistics, "previous-frame");
  EXPECT_THAT(error_of("width: 64, height: 32", "pipeline: {isp: fast}\n"),
              AllOf(HasSubstr("pipeline.isp"), HasSubstr("unfused"), HasSubstr("fused")));
  EXPECT_THAT(error_of("width: 64, height: 32", "pipeline: {statistics: next-frame}\n"),
              HasSubstr("previous-frame"));
  EXPECT_THAT(error_of("width: 64, height: 32", "pipeline: {isp: fused, demosaic: npp}\n"),
              HasSubstr("'npp' needs isp: unfused"));
  EXPECT_THAT(error_of("width: 64, height: 32",
                       "pipeline: {isp: fused}\ndisplay: {present: front_buffer}\n"),
              HasSubstr("needs display.present 'flip'"));
}

// Left unnamed, pipeline.isp is the fused pass unless the configuration asks for what only the
// four operators offer; named, it is what was asked for (and refused by name where it cannot be).
TEST(camera_settings_isp, an_unnamed_isp_is_fused_unless_the_configuration_needs_the_chain) {
  const auto parse = [](const std::string& rest) {
    return parse_camera_settings("camera: {width: 64, height: 32}\n" + rest, "cam.yaml");
  };
  EXPECT_EQ(parse("pipeline: {demosaic: bilinear}\n").isp, "fused");
  EXPECT_EQ(parse("display: {present: flip}\n").isp, "fused");
  EXPECT_EQ(parse("pipeline: {demosaic: npp}\n").isp, "unfused");
  EXPECT_EQ(parse("display: {present: front_buffer}\n").isp, "unfused");
  EXPECT_EQ(parse("pipeline: {isp: unfused}\n").isp, "unfused");
  EXPECT_THROW((void)parse("pipeline: {isp: fused, demosaic: npp}\n"), config_error);
}

}  // namespace
}  // namespace resident::camera
