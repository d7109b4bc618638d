// The camera pipeline's configuration (examples/camera.yaml): read, checked, errors named.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "camera/camera.hpp"
#include "resident/app/error.hpp"

namespace resident::camera {
namespace {

TEST(camera, reads_its_configuration_and_names_a_bad_key) {
  const auto s = parse_camera_settings(
      "camera: {width: 3840, height: 2160, format: raw10, bayer: bggr, rate_hz: 120}\n"
      "pipeline: {demosaic: bilinear, gamma: 2.4}\n"
      "display: {refresh_hz: 60, sync: fixed, present: front_buffer}\n",
      "cam.yaml");
  EXPECT_EQ(s.sensor.width, 3840U);
  EXPECT_EQ(s.sensor.format, io::csi2::raw_format::raw10);
  EXPECT_EQ(s.sensor.order, io::bayer_order::bggr);
  EXPECT_EQ(s.demosaic, "bilinear");
  EXPECT_EQ(s.display.sync, io::display_sync::fixed);
  EXPECT_EQ(s.display.mode, io::present_mode::front_buffer);
  try {
    (void)parse_camera_settings("camera: {width: 64}\npipeline: {demosiac: npp}\n", "cam.yaml");
    FAIL() << "expected a config_error";
  } catch (const config_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cam.yaml:2"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown key 'pipeline.demosiac'"));
  }
}

TEST(camera, the_example_configuration_reads) {
  const auto s = load_camera_settings(RESIDENT_TEST_FIXTURES "/../../../examples/camera.yaml");
  EXPECT_EQ(s.sensor.width, 1920U);
  EXPECT_EQ(s.sensor.height, 1080U);
  EXPECT_EQ(s.demosaic, "malvar");
  EXPECT_EQ(s.isp, "fused");
  EXPECT_DOUBLE_EQ(s.display.refresh_hz, 240.0);
}

TEST(camera, the_loop_section_gives_the_deadline_and_the_wcet_within_their_ranges) {
  const auto s = parse_camera_settings(
      "camera: {width: 640, height: 480}\nloop: {deadline_us: 250, wcet_us: 90}\n", "cam.yaml");
  EXPECT_DOUBLE_EQ(s.deadline_us, 250.0);
  EXPECT_DOUBLE_EQ(s.wcet_us, 90.0);
  EXPECT_THAT(
      [] {
        (void)parse_camera_settings(
            "camera: {width: 640, height: 480}\nloop: {deadline_us: .inf}\n", "c.yaml");
      },
      ::testing::ThrowsMessage<config_error>(::testing::HasSubstr("'loop.deadline_us'")));
  EXPECT_THAT(
      [] {
        (void)parse_camera_settings("camera: {width: 640, height: 480}\nloop: {dedline_us: 5}\n",
                                    "c.yaml");
      },
      ::testing::ThrowsMessage<config_error>(
          ::testing::HasSubstr("unknown key 'loop.dedline_us'")));
  EXPECT_DOUBLE_EQ(
      load_camera_settings(RESIDENT_TEST_FIXTURES "/../../../examples/camera.yaml").deadline_us,
      200.0);
}

TEST(camera, modes_are_named_and_a_wrong_one_lists_them) {
  EXPECT_EQ(parse_camera_mode("cpu-hostmem").delivery, io::frame_delivery::host);
  EXPECT_EQ(parse_camera_mode("while").mode, execution_mode::while_loop);
  EXPECT_EQ(compared_camera_modes().size(), 4U);
  EXPECT_THROW((void)parse_camera_mode("gpu"), config_error);
}

}  // namespace
}  // namespace resident::camera
