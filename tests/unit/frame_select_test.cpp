// Which frame the camera's handler takes (io::detail::select_frame, shared by the GPU handler and
// the host gate of host delivery), the CSI-2 frame number, and when a frame may be displayed.

#include <gtest/gtest.h>

#include "resident/io/frame.hpp"
#include "resident/io/sensor_bridge.hpp"

namespace resident::io {
namespace {

using detail::select_frame;

TEST(select_frame, takes_nothing_before_the_first_frame) {
  for (auto p : {sample_policy::newest, sample_policy::every, sample_policy::skip_duplicate}) {
    EXPECT_EQ(select_frame(0, 0, false, p, 4), 0U);
  }
}

TEST(select_frame, every_takes_the_next_frame_while_the_ring_still_holds_it) {
  EXPECT_EQ(select_frame(5, 3, true, sample_policy::every, 4), 4U);
  EXPECT_EQ(select_frame(5, 5, true, sample_policy::every, 4), 0U) << "nothing new";
}

TEST(select_frame, every_keeps_off_the_slot_the_bridge_may_be_filling) {
  // Ring of 4: with frame 10 the newest, frame 11 goes into frame 7's slot next, so 8 is the
  // oldest frame that is safe to read.
  EXPECT_EQ(select_frame(10, 2, true, sample_policy::every, 4), 8U);
  EXPECT_EQ(select_frame(10, 7, true, sample_policy::every, 4), 8U);
  EXPECT_EQ(select_frame(10, 8, true, sample_policy::every, 4), 9U);
  // With two slots only the newest is safe.
  EXPECT_EQ(select_frame(10, 2, true, sample_policy::every, 2), 10U);
}

TEST(select_frame, newest_and_skip_duplicate_take_the_newest) {
  EXPECT_EQ(select_frame(9, 3, true, sample_policy::newest, 4), 9U);
  EXPECT_EQ(select_frame(9, 3, true, sample_policy::skip_duplicate, 4), 9U);
}

TEST(select_frame, newest_repeats_the_last_frame_only_once_one_was_processed) {
  EXPECT_EQ(select_frame(9, 9, true, sample_policy::newest, 4), 9U);
  EXPECT_EQ(select_frame(9, 9, false, sample_policy::newest, 4), 0U)
      << "the loop's start point is not a frame it processed";
  EXPECT_EQ(select_frame(9, 9, true, sample_policy::skip_duplicate, 4), 0U);
}

TEST(csi2_frame_number, counts_one_to_65535_and_wraps_past_zero) {
  EXPECT_EQ(csi2_frame_number(1), 1U);
  EXPECT_EQ(csi2_frame_number(65535), 65535U);
  EXPECT_EQ(csi2_frame_number(65536), 1U);
  EXPECT_EQ(csi2_frame_number(0), 1U);
}

TEST(frame_integrity, is_ok_only_when_every_line_arrived_intact_from_a_good_bridge) {
  frame_integrity f{};
  f.frame = 7;
  f.expected_lines = 1080;
  f.lines = 1080;
  f.corrected_headers = 3;  // corrected headers are fine
  EXPECT_TRUE(f.ok());
  auto bad = [&](auto change) {
    frame_integrity g = f;
    change(g);
    return !g.ok();
  };
  EXPECT_TRUE(bad([](frame_integrity& g) { g.lines = 1079; }));
  EXPECT_TRUE(bad([](frame_integrity& g) { g.bridge_status = 2; }));
  EXPECT_TRUE(bad([](frame_integrity& g) { g.corrupt_headers = 1; }));
  EXPECT_TRUE(bad([](frame_integrity& g) { g.crc_errors = 1; }));
  EXPECT_TRUE(bad([](frame_integrity& g) { g.format_errors = 1; }));
  EXPECT_TRUE(bad([](frame_integrity& g) { g.overwritten = 1; }));
}

}  // namespace
}  // namespace resident::io
