// Dynamic kernel padding: which best-effort kernel, and how many of its blocks, fill the idle
// slots of a real-time kernel without stretching it beyond its tolerance. Every expectation
// is worked out by hand from the model in padding.hpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/sched/padding.hpp"

namespace resident::sched {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t h200_sms = 132;

/// 32 blocks, one per SM, 100 us alone: 100 of the 132 slots are idle.
rt_profile small_rt() { return {"attention", 32, 1, 100.0}; }

std::string error_of(const rt_profile& rt, std::int64_t sm_count,
                     const std::vector<be_profile>& candidates, double tolerance = 0.05) {
  try {
    (void)select_padding(rt, sm_count, candidates, tolerance);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(padding, a_fully_occupied_rt_kernel_gets_no_padding) {
  // 132 SMs x 2 blocks = 264 slots; 264 and 528 blocks fill one and two waves exactly.
  const std::vector<be_profile> be{{"bulk", 1.0, 4, 1'000'000}};
  EXPECT_EQ(select_padding({"full", 264, 2, 100.0}, h200_sms, be), std::nullopt);
  EXPECT_EQ(select_padding({"full2", 528, 2, 100.0}, h200_sms, be), std::nullopt);
}

TEST(padding, idle_slots_are_those_of_the_last_wave) {
  EXPECT_EQ(idle_slots(small_rt(), h200_sms), 100);  // 132 - 32
  // 300 blocks, 132 per wave: 3 waves, 396 slots, 96 idle in the last one.
  EXPECT_EQ(idle_slots({"big", 300, 1, 50.0}, h200_sms), 96);
}

TEST(padding, a_small_rt_kernel_is_padded_with_consecutive_rounds_in_every_idle_slot) {
  // 100 idle slots x floor(105 / 10) = 10 rounds = 1000 blocks, all inside the RT kernel's
  // 100 us.
  const auto choice = select_padding(small_rt(), h200_sms, {{"resnet", 10.0, 1, 5000}});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->candidate, 0U);
  EXPECT_EQ(choice->name, "resnet");
  EXPECT_EQ(choice->slots, 100);
  EXPECT_EQ(choice->be_blocks, 1000);
  EXPECT_EQ(choice->rounds, 10);
  EXPECT_DOUBLE_EQ(choice->predicted_us, 100.0);
  EXPECT_DOUBLE_EQ(choice->be_work_us, 10'000.0);
}

TEST(padding, be_blocks_are_capped_by_what_the_kernel_has_left) {
  // 250 blocks over 100 slots: the busiest slot runs ceil(2.5) = 3 rounds, 30 us.
  const auto choice = select_padding(small_rt(), h200_sms, {{"resnet", 10.0, 1, 250}});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->be_blocks, 250);
  EXPECT_EQ(choice->rounds, 3);
  EXPECT_DOUBLE_EQ(choice->predicted_us, 100.0);
  EXPECT_DOUBLE_EQ(choice->be_work_us, 2500.0);
}

TEST(padding, chooses_the_candidate_doing_the_most_be_work) {
  // short: 100 x 10 rounds x 10 us = 10000 us. long: floor(105 / 35) = 3 rounds, 300 blocks x
  // 35 us = 10500 us, predicted 105 us (within 100 x 1.05). few: 20 blocks x 10 us = 200 us.
  const std::vector<be_profile> be{
      {"short", 10.0, 1, 5000}, {"long", 35.0, 1, 5000}, {"few", 10.0, 1, 20}};
  const auto choice = select_padding(small_rt(), h200_sms, be);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->candidate, 1U);
  EXPECT_EQ(choice->name, "long");
  EXPECT_EQ(choice->be_blocks, 300);
  EXPECT_EQ(choice->rounds, 3);
  EXPECT_DOUBLE_EQ(choice->predicted_us, 105.0);
  EXPECT_DOUBLE_EQ(choice->be_work_us, 10'500.0);
}

TEST(padding, the_tolerance_bounds_the_rounds) {
  const std::vector<be_profile> be{{"be", 52.0, 1, 5000}};
  // 5%: floor(105 / 52) = 2 rounds, 104 us. 0%: floor(100 / 52) = 1 round, 52 us < 100 us.
  const auto loose = select_padding(small_rt(), h200_sms, be, 0.05);
  ASSERT_TRUE(loose);
  EXPECT_EQ(loose->rounds, 2);
  EXPECT_DOUBLE_EQ(loose->predicted_us, 104.0);
  const auto strict = select_padding(small_rt(), h200_sms, be, 0.0);
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->rounds, 1);
  EXPECT_EQ(strict->be_blocks, 100);
  EXPECT_DOUBLE_EQ(strict->predicted_us, 100.0);
}

TEST(padding, a_be_block_longer_than_the_budget_does_not_fit) {
  // 120 us > 105 us: not a single round; with 25% (125 us) one round fits.
  const std::vector<be_profile> be{{"slow", 120.0, 1, 5000}};
  EXPECT_EQ(select_padding(small_rt(), h200_sms, be), std::nullopt);
  const auto wide = select_padding(small_rt(), h200_sms, be, 0.25);
  ASSERT_TRUE(wide);
  EXPECT_DOUBLE_EQ(wide->predicted_us, 120.0);
}

TEST(padding, a_be_kernel_with_nothing_left_does_not_fit) {
  EXPECT_EQ(select_padding(small_rt(), h200_sms, {{"done", 10.0, 1, 0}}), std::nullopt);
}

TEST(padding, a_lower_occupancy_be_kernel_uses_a_proportional_share_of_the_slots) {
  // RT: 200 blocks at 2 per SM, 264 slots, 64 idle. The BE kernel fits 1 block per SM, so
  // floor(64 x 1 / 2) = 32 slots, x floor(105 / 10) = 10 rounds = 320 blocks.
  const auto choice = select_padding({"rt", 200, 2, 100.0}, h200_sms, {{"be", 10.0, 1, 5000}});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->slots, 32);
  EXPECT_EQ(choice->be_blocks, 320);
}

TEST(padding, decimal_times_divide_into_whole_rounds) {
  // 0.3 / 0.1 is 2.9999999999999996 in binary; the profile meant 3 rounds.
  const auto choice = select_padding({"rt", 1, 1, 0.3}, 2, {{"be", 0.1, 1, 100}}, 0.0);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->rounds, 3);
  EXPECT_EQ(choice->be_blocks, 3);
}

TEST(padding, rejects_invalid_inputs_naming_the_kernel) {
  const std::vector<be_profile> ok{{"be", 10.0, 1, 10}};
  EXPECT_THAT(error_of(small_rt(), 0, ok), HasSubstr("sm_count is 0"));
  EXPECT_THAT(error_of({"rt", 0, 1, 100.0}, h200_sms, ok),
              HasSubstr("RT kernel 'rt' has 0 blocks"));
  EXPECT_THAT(error_of({"rt", 4, 0, 100.0}, h200_sms, ok),
              HasSubstr("RT kernel 'rt' has blocks_per_sm 0"));
  EXPECT_THAT(error_of({"rt", 4, 1, -1.0}, h200_sms, ok), HasSubstr("RT kernel 'rt' has alone_us"));
  EXPECT_THAT(error_of({"rt", 4, 1, std::numeric_limits<double>::infinity()}, h200_sms, ok),
              HasSubstr("alone_us"));
  EXPECT_THAT(error_of(small_rt(), h200_sms, {ok[0], {"bad", 0.0, 1, 10}}),
              HasSubstr("BE kernel 'bad' (candidate 1) has block_us"));
  EXPECT_THAT(error_of(small_rt(), h200_sms, {{"bad", 1.0, 0, 10}}),
              HasSubstr("BE kernel 'bad' (candidate 0) has blocks_per_sm 0"));
  EXPECT_THAT(error_of(small_rt(), h200_sms, {{"bad", 1.0, 1, -5}}),
              HasSubstr("available_blocks -5"));
  EXPECT_THAT(error_of(small_rt(), h200_sms, ok, -0.1), HasSubstr("tolerance"));
  EXPECT_THAT(error_of(small_rt(), h200_sms, ok, std::nan("")), HasSubstr("tolerance"));
}

TEST(padding, a_multi_wave_kernel_is_padded_only_from_its_last_wave) {
  // 300 blocks at 1 per SM on 132 SMs: 3 waves of 100 us each (alone 300 us), 96 slots idle
  // in the last wave, from 200 us on. Budget 315 us leaves 115 us: 11 rounds of 10 us blocks.
  const rt_profile rt{"rt", 300, 1, 300.0};
  const auto choice = select_padding(rt, 132, {{"be", 10.0, 1, 100000}});
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->slots, 96);
  EXPECT_EQ(choice->rounds, 11);
  EXPECT_EQ(choice->be_blocks, 96 * 11);
  EXPECT_DOUBLE_EQ(choice->predicted_us, 310.0);  // 200 + 11 * 10
}

// ---- fit_padding_budget: the measured fit of a budget to the tolerance ----------------------

// A padded launch that grows 0.01 us per BE block from 30 us: within 33 us up to 300 blocks.
double linear_launch(std::int64_t blocks) { return 30.0 + 0.01 * static_cast<double>(blocks); }

std::vector<std::int64_t> budgets_of(const padding_fit& fit) {
  std::vector<std::int64_t> b;
  for (const auto& t : fit.tried) b.push_back(t.be_blocks);
  return b;
}

TEST(fit_padding_budget, keeps_a_proposal_that_fits_without_more_tries) {
  const auto fit = fit_padding_budget(248, 33.0, linear_launch);
  EXPECT_EQ(fit.be_blocks, 248);
  EXPECT_DOUBLE_EQ(fit.padded_us, 32.48);
  EXPECT_EQ(budgets_of(fit), (std::vector<std::int64_t>{248}));
}

TEST(fit_padding_budget, halves_then_bisects_towards_the_largest_budget_that_fits) {
  // 496 misses (34.96), 248 fits; then 372 and 310 miss, 279 fits.
  const auto fit = fit_padding_budget(496, 33.0, linear_launch);
  EXPECT_EQ(budgets_of(fit), (std::vector<std::int64_t>{496, 248, 372, 310, 279}));
  EXPECT_EQ(fit.be_blocks, 279);
  EXPECT_DOUBLE_EQ(fit.padded_us, 32.79);
  // Halving alone keeps 248; enough steps reach 300 exactly.
  EXPECT_EQ(fit_padding_budget(496, 33.0, linear_launch, 0).be_blocks, 248);
  EXPECT_EQ(fit_padding_budget(496, 33.0, linear_launch, 20).be_blocks, 300);
  // The result is a measured fit even when the measurements are not monotone: a budget that
  // misses once is never returned.
  const auto noisy = fit_padding_budget(
      496, 33.0, [](std::int64_t b) { return b == 279 ? 40.0 : linear_launch(b); });
  EXPECT_EQ(noisy.be_blocks, 248);
  EXPECT_DOUBLE_EQ(noisy.padded_us, 32.48);
  for (const auto& t : noisy.tried) {
    if (t.be_blocks == noisy.be_blocks) {
      EXPECT_LE(t.padded_us, 33.0);
    }
  }
}

TEST(fit_padding_budget, returns_zero_when_not_one_block_fits) {
  const auto fit = fit_padding_budget(496, 33.0, [](std::int64_t) { return 40.0; });
  EXPECT_EQ(fit.be_blocks, 0);
  EXPECT_DOUBLE_EQ(fit.padded_us, 40.0);  // the last try's
  EXPECT_EQ(budgets_of(fit), (std::vector<std::int64_t>{496, 248, 124, 62, 31, 15, 7, 3, 1}));
}

TEST(fit_padding_budget, refuses_bad_arguments_and_measurements) {
  const auto error_of = [](std::int64_t proposed, double limit, int steps,
                           double measured = 1.0) -> std::string {
    try {
      (void)fit_padding_budget(
          proposed, limit, [&](std::int64_t) { return measured; }, steps);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return {};
  };
  EXPECT_THAT(error_of(0, 33.0, 3), HasSubstr("proposed budget 0 must be >= 1"));
  EXPECT_THAT(error_of(8, 0.0, 3), HasSubstr("must be a positive time"));
  EXPECT_THAT(error_of(8, std::numeric_limits<double>::infinity(), 3),
              HasSubstr("must be a positive time"));
  EXPECT_THAT(error_of(8, 33.0, -1), HasSubstr("refine_steps -1 must be >= 0"));
  EXPECT_THAT(error_of(8, 33.0, 3, std::numeric_limits<double>::quiet_NaN()),
              HasSubstr("the launch with 8 BE blocks measured"));
  EXPECT_EQ(error_of(8, 33.0, 3), "");
}

}  // namespace
}  // namespace resident::sched
