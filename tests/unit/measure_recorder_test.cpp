// sample_recorder: fixed capacity, counted overflow, no reallocation while recording.

#include <gtest/gtest.h>

#include <vector>

#include "resident/measure/recorder.hpp"

namespace resident::measure {
namespace {

TEST(recorder, keeps_values_in_order_up_to_capacity) {
  sample_recorder r(3);
  EXPECT_EQ(r.capacity(), 3U);
  EXPECT_EQ(r.size(), 0U);
  EXPECT_TRUE(r.values().empty());
  EXPECT_TRUE(r.record(1.5));
  EXPECT_TRUE(r.record(2.5));
  EXPECT_TRUE(r.record(3.5));
  EXPECT_TRUE(r.full());
  EXPECT_EQ(r.size(), 3U);
  EXPECT_EQ(std::vector<double>(r.values().begin(), r.values().end()),
            (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_EQ(r.overflow(), 0U);
}

TEST(recorder, counts_overflow_and_keeps_the_first_values) {
  sample_recorder r(2);
  EXPECT_TRUE(r.record(1));
  EXPECT_TRUE(r.record(2));
  EXPECT_FALSE(r.record(3));
  EXPECT_FALSE(r.record(4));
  EXPECT_EQ(r.size(), 2U);
  EXPECT_EQ(r.overflow(), 2U);
  EXPECT_DOUBLE_EQ(r.values()[1], 2.0);
}

TEST(recorder, never_moves_its_storage_while_recording) {
  sample_recorder r(1000);
  ASSERT_TRUE(r.record(0));
  const double* data = r.values().data();
  for (int i = 1; i < 1200; ++i) {
    (void)r.record(i);
    ASSERT_EQ(r.values().data(), data) << "after record " << i;
  }
  EXPECT_EQ(r.size(), 1000U);
  EXPECT_EQ(r.overflow(), 200U);
}

TEST(recorder, clear_keeps_capacity_and_storage) {
  sample_recorder r(4);
  for (int i = 0; i < 6; ++i) (void)r.record(i);
  const double* data = r.values().data();
  r.clear();
  EXPECT_EQ(r.size(), 0U);
  EXPECT_EQ(r.overflow(), 0U);
  EXPECT_EQ(r.capacity(), 4U);
  EXPECT_TRUE(r.record(42));
  EXPECT_EQ(r.values().data(), data);
  EXPECT_DOUBLE_EQ(r.values()[0], 42.0);
}

TEST(recorder, zero_capacity_drops_everything) {
  sample_recorder r(0);
  EXPECT_FALSE(r.record(1));
  EXPECT_EQ(r.size(), 0U);
  EXPECT_EQ(r.overflow(), 1U);
}

}  // namespace
}  // namespace resident::measure
