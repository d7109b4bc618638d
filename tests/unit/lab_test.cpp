// The lab's CPU-side arithmetic: break-even, bucket selection, padding and masking.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "resident/exec/graph_pool.hpp"
#include "resident/measure/break_even.hpp"
#include "resident/ops/lab_batch.hpp"

namespace resident {
namespace {

using ::testing::HasSubstr;

TEST(break_even, first_cheaper_reuse_follows_the_labs_example) {
  // 12 ms of setup, 18 us eager, 12 us replay: equal at 2000 iterations, cheaper from 2001.
  const auto n = measure::first_cheaper_reuse(12'000, 18, 12);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 2001);
  EXPECT_EQ(12'000 + 2000 * 12, 2000 * 18);
  EXPECT_LT(12'000 + *n * 12, *n * 18);
}

TEST(break_even, a_graph_that_saves_nothing_never_pays_off) {
  EXPECT_FALSE(measure::first_cheaper_reuse(12'000, 12, 12).has_value());
  EXPECT_FALSE(measure::first_cheaper_reuse(10, 5, 7).has_value());
}

TEST(break_even, free_setup_pays_off_on_the_first_replay) {
  EXPECT_EQ(measure::first_cheaper_reuse(0, 3, 2), 1);
}

TEST(break_even, a_fractional_tie_rounds_up_to_the_next_whole_iteration) {
  // setup 10, saving 3: 3 iterations save 9 (< 10), 4 save 12.
  EXPECT_EQ(measure::first_cheaper_reuse(10, 5, 2), 4);
}

TEST(break_even, rejects_negative_and_non_finite_costs) {
  EXPECT_THROW((void)measure::first_cheaper_reuse(-1, 5, 2), std::invalid_argument);
  EXPECT_THROW((void)measure::first_cheaper_reuse(1, std::nan(""), 2), std::invalid_argument);
  EXPECT_THROW((void)measure::first_cheaper_reuse(1, 5, INFINITY), std::invalid_argument);
}

TEST(graph_pool_buckets, dispatch_picks_the_smallest_bucket_that_holds_the_batch) {
  const std::vector<std::size_t> buckets{1, 2, 4, 8, 16};
  EXPECT_EQ(select_bucket(buckets, 1), 1U);
  EXPECT_EQ(select_bucket(buckets, 3), 4U);
  EXPECT_EQ(select_bucket(buckets, 6), 8U);
  EXPECT_EQ(select_bucket(buckets, 8), 8U);
  EXPECT_EQ(select_bucket(buckets, 16), 16U);
  EXPECT_FALSE(select_bucket(buckets, 17).has_value());  // eager fallback
  EXPECT_FALSE(select_bucket(buckets, 0).has_value());   // nothing to run
}

TEST(graph_pool_buckets, buckets_need_not_be_powers_of_two) {
  const std::vector<std::size_t> buckets{3, 5, 24};
  EXPECT_EQ(select_bucket(buckets, 4), 5U);
  EXPECT_EQ(select_bucket(buckets, 6), 24U);
}

TEST(graph_pool_buckets, parse_accepts_a_list_and_rejects_bad_ones) {
  EXPECT_EQ(parse_buckets("1,2,4,8,16"), (std::vector<std::size_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(parse_buckets("7"), (std::vector<std::size_t>{7}));
  auto error_of = [](const std::string& text) {
    try {
      (void)parse_buckets(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error_of("1,4,2"), HasSubstr("strictly increasing, got 4 before 2"));
  EXPECT_THAT(error_of("1,1"), HasSubstr("strictly increasing"));
  EXPECT_THAT(error_of("0,2"), HasSubstr("'0' is not a positive whole number"));
  EXPECT_THAT(error_of("1,x"), HasSubstr("'x' is not a positive whole number"));
  EXPECT_THAT(error_of("1,,2"), HasSubstr("'' is not a positive whole number"));
  EXPECT_THAT(error_of("2.5"), HasSubstr("'2.5'"));
  EXPECT_THAT(error_of(""), HasSubstr("not a positive whole number"));
}

TEST(padded_batch, masking_keeps_dummy_slots_out_of_the_sum) {
  // The lab's example: requests 1..6 in a bucket of 8. Each zero-padded dummy becomes
  // (2*0+1)^2 = 1, so zero padding alone is not enough.
  const std::vector<float> six{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(ops::padded_batch_reference(six, 8, /*masked=*/true), 454.0);
  EXPECT_EQ(ops::padded_batch_reference(six, 8, /*masked=*/false), 456.0);
  EXPECT_EQ(ops::padded_batch_reference(six, 6, /*masked=*/false), 454.0);
}

TEST(padded_batch, the_toy_input_sums_to_164) {
  const std::vector<float> toy{1, 2, 3, 4};
  EXPECT_EQ(ops::padded_batch_reference(toy, 4, true), 164.0);
}

}  // namespace
}  // namespace resident
