// The sample policy (decide_release), execution-mode and policy names, and run_options checks.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>

#include "resident/app/loop.hpp"
#include "resident/exec/mode.hpp"
#include "resident/exec/run_options.hpp"
#include "resident/io/mailbox.hpp"
#include "test_operators.hpp"

namespace resident::test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// ---- decide_release ---------------------------------------------------------------------------

static_assert(!decide_release(sample_policy::newest, 0, 7, true).run, "nothing published: no run");
static_assert(decide_release(sample_policy::every, 5, 1, true).seq == 5);
static_assert(decide_release(sample_policy::every, 5, 1, true).dropped == 3);
static_assert(decide_release(sample_policy::newest, 4, 4, true).repeat);
static_assert(!decide_release(sample_policy::newest, 4, 4, false).run, "nothing to repeat yet");

constexpr sample_policy all_policies[] = {sample_policy::newest, sample_policy::every,
                                          sample_policy::skip_duplicate};

/// (run, repeat, seq, dropped), so a whole decision compares and prints at once.
using verdict = std::tuple<bool, bool, std::uint64_t, std::uint64_t>;

verdict decide(sample_policy p, std::uint64_t published, std::uint64_t last,
               bool have_processed = true) {
  const release_decision d = decide_release(p, published, last, have_processed);
  return {d.run, d.repeat, d.seq, d.dropped};
}

constexpr verdict idle{false, false, 0, 0};

TEST(decide_release, nothing_published_never_runs) {
  for (const auto p : all_policies) {
    EXPECT_EQ(decide(p, 0, 0), idle) << to_string(p);
    EXPECT_EQ(decide(p, 0, 9), idle) << to_string(p);
  }
}

TEST(decide_release, first_sample_runs_without_drops) {
  for (const auto p : all_policies) {
    EXPECT_EQ(decide(p, 1, 0), verdict(true, false, 1, 0)) << to_string(p);
  }
}

TEST(decide_release, next_sample_runs_without_drops) {
  for (const auto p : all_policies) {
    EXPECT_EQ(decide(p, 8, 7), verdict(true, false, 8, 0)) << to_string(p);
  }
}

TEST(decide_release, newer_sample_runs_and_counts_the_skipped_ones_as_dropped) {
  for (const auto p : all_policies) {
    EXPECT_EQ(decide(p, 10, 6), verdict(true, false, 10, 3)) << to_string(p);
    EXPECT_EQ(decide(p, 4, 0), verdict(true, false, 4, 3)) << to_string(p);
  }
}

TEST(decide_release, newest_repeats_the_last_sample_when_it_is_published_again) {
  EXPECT_EQ(decide(sample_policy::newest, 5, 5), verdict(true, true, 5, 0));
}

TEST(decide_release, newest_does_not_repeat_before_the_loop_processed_anything) {
  // A loop that starts after sample 5 (published before launch) has nothing to repeat yet.
  EXPECT_EQ(decide(sample_policy::newest, 5, 5, false), idle);
  EXPECT_EQ(decide(sample_policy::newest, 6, 5, false), verdict(true, false, 6, 0));
}

TEST(decide_release, every_idles_when_the_last_sample_is_published_again) {
  EXPECT_EQ(decide(sample_policy::every, 5, 5), idle);
}

TEST(decide_release, skip_duplicate_idles_when_the_last_sample_is_published_again) {
  EXPECT_EQ(decide(sample_policy::skip_duplicate, 5, 5), idle);
}

TEST(decide_release, newest_repeats_the_last_sample_when_an_older_one_is_published) {
  EXPECT_EQ(decide(sample_policy::newest, 3, 5), verdict(true, true, 5, 0));
}

TEST(decide_release, every_and_skip_duplicate_idle_when_an_older_sample_is_published) {
  EXPECT_EQ(decide(sample_policy::every, 3, 5), idle);
  EXPECT_EQ(decide(sample_policy::skip_duplicate, 3, 5), idle);
}

TEST(decide_release, counts_drops_up_to_the_largest_sequence_numbers) {
  constexpr std::uint64_t max = UINT64_MAX;
  EXPECT_EQ(decide(sample_policy::newest, max, 0), verdict(true, false, max, max - 1));
  EXPECT_EQ(decide(sample_policy::every, max, max - 1), verdict(true, false, max, 0));
}

// ---- execution modes --------------------------------------------------------------------------

// The mailbox's choice of sample, shared by its handler kernel and its host-loop read.
TEST(mailbox_select_sample, each_policy_takes_its_sample_from_the_ring) {
  using io::detail::select_sample;
  constexpr std::size_t depth = 4;
  EXPECT_EQ(select_sample(0, 0, false, sample_policy::every, depth), 0U) << "nothing published";
  // every: the next one, or the oldest the ring still holds once lapped.
  EXPECT_EQ(select_sample(3, 1, true, sample_policy::every, depth), 2U);
  EXPECT_EQ(select_sample(9, 2, true, sample_policy::every, depth), 6U);
  EXPECT_EQ(select_sample(9, 9, true, sample_policy::every, depth), 0U);
  // newest: the head, again when nothing new came (a repeat), but not before any processing.
  EXPECT_EQ(select_sample(9, 2, true, sample_policy::newest, depth), 9U);
  EXPECT_EQ(select_sample(9, 9, true, sample_policy::newest, depth), 9U);
  EXPECT_EQ(select_sample(9, 9, false, sample_policy::newest, depth), 0U);
  // skip-duplicate: the head only when it is new.
  EXPECT_EQ(select_sample(9, 2, true, sample_policy::skip_duplicate, depth), 9U);
  EXPECT_EQ(select_sample(9, 9, true, sample_policy::skip_duplicate, depth), 0U);
}

TEST(execution_mode, names_are_stable) {
  EXPECT_EQ(to_string(execution_mode::eager), "eager");
  EXPECT_EQ(to_string(execution_mode::host_graph), "host-graph");
  EXPECT_EQ(to_string(execution_mode::while_loop), "while");
  EXPECT_EQ(to_string(execution_mode::tail), "tail");
  EXPECT_EQ(to_string(execution_mode::persistent), "persistent");
}

TEST(execution_mode, every_mode_round_trips_through_its_name) {
  for (const auto m : all_execution_modes) {
    EXPECT_EQ(parse_execution_mode(to_string(m)), m) << to_string(m);
  }
  EXPECT_EQ(parse_execution_mode("persistent"), execution_mode::persistent);
  // `all` (the modes every operator runs in) does not hold persistent, which needs device forms.
  EXPECT_EQ(std::count(all_execution_modes.begin(), all_execution_modes.end(),
                       execution_mode::persistent),
            0);
}

TEST(execution_mode, unknown_name_lists_the_modes) {
  EXPECT_EQ(error_of<std::invalid_argument>([] { (void)parse_execution_mode("host_graph"); }),
            "unknown execution mode 'host_graph'; modes: eager, host-graph, while, tail, "
            "persistent");
}

TEST(execution_mode, names_are_case_sensitive) {
  EXPECT_THROW((void)parse_execution_mode("Eager"), std::invalid_argument);
  EXPECT_THROW((void)parse_execution_mode(""), std::invalid_argument);
}

TEST(execution_mode, the_gpu_released_modes_are_resident) {
  static_assert(is_resident(execution_mode::while_loop) && is_resident(execution_mode::tail) &&
                is_resident(execution_mode::persistent));
  static_assert(!is_resident(execution_mode::eager) && !is_resident(execution_mode::host_graph));
  EXPECT_TRUE(is_resident(parse_execution_mode("tail")));
  EXPECT_FALSE(is_resident(parse_execution_mode("eager")));
}

// ---- sample policies --------------------------------------------------------------------------

TEST(sample_policy, names_are_stable) {
  EXPECT_EQ(to_string(sample_policy::newest), "newest");
  EXPECT_EQ(to_string(sample_policy::every), "every");
  EXPECT_EQ(to_string(sample_policy::skip_duplicate), "skip-duplicate");
}

TEST(sample_policy, every_policy_round_trips_through_its_name) {
  for (const auto p : all_policies) EXPECT_EQ(parse_sample_policy(to_string(p)), p);
}

TEST(sample_policy, unknown_name_lists_the_policies) {
  EXPECT_EQ(error_of<std::invalid_argument>([] { (void)parse_sample_policy("skip_duplicate"); }),
            "unknown sample policy 'skip_duplicate'; policies: newest, every, skip-duplicate");
}

TEST(sample_policy, out_of_range_value_has_no_name) {
  EXPECT_EQ(to_string(static_cast<sample_policy>(7)), "unknown");
}

// ---- run_options::validate --------------------------------------------------------------------

TEST(run_options, defaults_are_valid) {
  const run_options options;
  EXPECT_NO_THROW(options.validate());
  EXPECT_EQ(options.policy, sample_policy::skip_duplicate);
  EXPECT_EQ(options.stall_timeout, 2000ms);
}

TEST(run_options, stall_timeout_longer_than_twice_the_quiet_time_is_valid) {
  run_options options;
  options.idle_sleep_ns = 600'000'000;  // 0.6 s
  options.poll_ns = 400'000'000;        // 0.4 s: twice the sum is 2 s
  options.stall_timeout = 2001ms;
  EXPECT_NO_THROW(options.validate());
}

TEST(run_options, stall_timeout_of_exactly_twice_the_quiet_time_is_rejected) {
  run_options options;
  options.idle_sleep_ns = 600'000'000;
  options.poll_ns = 400'000'000;
  options.stall_timeout = 2000ms;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("stall_timeout (2000 ms) must exceed twice the idle sleep plus the "
                        "handler poll time (2000 ms)"));
}

TEST(run_options, stall_timeout_shorter_than_twice_the_idle_sleep_is_rejected) {
  run_options options;
  options.idle_sleep_ns = 1'000'000'000;
  options.stall_timeout = 1500ms;
  EXPECT_EQ(error_of<std::invalid_argument>([&] { options.validate(); }),
            "run_options: stall_timeout (1500 ms) must exceed twice the idle sleep plus the "
            "handler poll time (2000 ms), or an idle loop would be reported as stalled");
}

TEST(run_options, stall_timeout_shorter_than_twice_the_poll_time_is_rejected) {
  run_options options;
  options.poll_ns = 1'000'000'000;
  options.stall_timeout = 1999ms;
  EXPECT_THROW(options.validate(), std::invalid_argument);
}

// 2 * (idle_sleep_ns + poll_ns) exceeds 64 bits here; the check must not wrap around.
TEST(run_options, huge_idle_sleep_does_not_wrap_around_the_check) {
  run_options options;
  options.idle_sleep_ns = std::uint64_t{1} << 63;
  EXPECT_THROW(options.validate(), std::invalid_argument);
}

TEST(run_options, a_deadline_is_none_or_up_to_one_second) {
  run_options options;
  options.deadline = 500us;
  EXPECT_NO_THROW(options.validate());
  options.deadline = 1s;
  EXPECT_NO_THROW(options.validate());
  options.deadline = 1001ms;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("deadline must be 0 (none) to 1 s, got 1001000000 ns"));
  options.deadline = -1ns;
  EXPECT_THROW(options.validate(), std::invalid_argument);
}

TEST(run_options, streaming_telemetry_needs_a_ring) {
  run_options options;
  options.on_telemetry = [](std::span<const telemetry_entry>) {};
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("on_telemetry needs telemetry_samples > 0"));
  options.telemetry_samples = 1024;
  EXPECT_NO_THROW(options.validate());
}

TEST(run_options, telemetry_max_age_is_0_to_a_minute) {
  run_options options;
  EXPECT_EQ(options.telemetry_max_age, 250ms) << "the default";
  options.telemetry_max_age = 0ms;
  EXPECT_NO_THROW(options.validate());
  options.telemetry_max_age = 60000ms;
  EXPECT_NO_THROW(options.validate());
  options.telemetry_max_age = 60001ms;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("telemetry_max_age must be 0 (drain when half full) to 60000 ms, got "
                        "60001 ms"));
  options.telemetry_max_age = -1ms;
  EXPECT_THROW(options.validate(), std::invalid_argument);
}

TEST(run_options, zero_stall_timeout_is_rejected) {
  run_options options;
  options.stall_timeout = 0ms;
  EXPECT_EQ(error_of<std::invalid_argument>([&] { options.validate(); }),
            "run_options: stall_timeout must be positive");
}

TEST(run_options, negative_stall_timeout_is_rejected) {
  run_options options;
  options.stall_timeout = -5ms;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("stall_timeout must be positive"));
}

TEST(run_options, negative_device_is_rejected) {
  run_options options;
  options.device = -1;
  EXPECT_EQ(error_of<std::invalid_argument>([&] { options.validate(); }),
            "run_options: device must be >= 0");
}

TEST(run_options, unknown_policy_value_is_rejected) {
  run_options options;
  options.policy = static_cast<sample_policy>(9);
  EXPECT_EQ(error_of<std::invalid_argument>([&] { options.validate(); }),
            "run_options: policy holds an unknown value 9");
}

TEST(run_options, preempt_lead_needs_a_word_and_a_longer_period) {
  std::uint32_t word = 0;
  run_options options;
  options.preempt.lead_ns = 5'000;
  options.preempt.period_ns = 125'000;
  EXPECT_EQ(error_of<std::invalid_argument>([&] { options.validate(); }),
            "run_options: preempt.lead_ns is set but preempt.word is null");
  options.preempt.word = &word;  // validate() only looks at the pointer
  options.poll_ns = 1'000'000;
  EXPECT_NO_THROW(options.validate());
  options.preempt.period_ns = 0;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("preempt.lead_ns (5000 ns) needs the sensor's preempt.period_ns"));
  options.preempt.period_ns = 5'000;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("must be shorter than it (period_ns 5000)"));
  options.preempt.lead_ns = 0;  // no lead: the period is not needed
  EXPECT_NO_THROW(options.validate());
}

TEST(run_options, preempt_lead_without_handler_polling_is_refused) {
  // The early raise happens in the handler's polling loop; without a polling budget every idle
  // iteration would raise the word and its controller clear it again.
  std::uint32_t word = 0;
  run_options options;
  options.preempt.word = &word;
  options.preempt.lead_ns = 5'000;
  options.preempt.period_ns = 125'000;
  options.poll_ns = 0;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { options.validate(); }),
              HasSubstr("preempt.lead_ns (5000 ns) needs the handler to poll between samples"));
  options.poll_ns = 5'000;
  EXPECT_NO_THROW(options.validate());
}

// ---- anticipated raises (preempt_hook::lead_ns) -----------------------------------------------

constexpr std::uint64_t period = 125'000;  // 8 kHz
constexpr std::uint64_t lead = 5'000;

static_assert(next_sample_due(1'000'000, 0, period, lead) == 1'125'000, "first sample anchors");
static_assert(anticipate(10, 0, lead, false) == anticipation::wait, "nothing due: no raise");
static_assert(anticipate(10, 100, 0, false) == anticipation::wait, "no lead: no raise");

TEST(anticipation, a_sample_on_time_or_early_anchors_the_schedule) {
  EXPECT_EQ(next_sample_due(1'125'000, 1'125'000, period, lead), 1'250'000);
  EXPECT_EQ(next_sample_due(1'124'000, 1'125'000, period, lead), 1'249'000);  // sensor ahead
}

TEST(anticipation, a_little_late_follows_the_sensor_so_clock_drift_never_adds_up) {
  // 2 us late, under half the lead: the schedule moves with it.
  EXPECT_EQ(next_sample_due(1'127'000, 1'125'000, period, lead), 1'252'000);
  // Exactly half the lead late still anchors.
  EXPECT_EQ(next_sample_due(1'127'500, 1'125'000, period, lead), 1'252'500);
}

TEST(anticipation, one_late_sample_does_not_move_the_next_ones_lead) {
  // 40 us late (the sensor's thread lost its core): the next sample is still due on the grid.
  EXPECT_EQ(next_sample_due(1'165'000, 1'125'000, period, lead), 1'250'000);
  EXPECT_EQ(next_sample_due(1'187'499, 1'125'000, period, lead), 1'250'000);
}

TEST(anticipation, half_a_period_late_or_more_anchors_anew) {
  // Missed samples or a paused sensor: the old grid says nothing about the next one.
  EXPECT_EQ(next_sample_due(1'187'500, 1'125'000, period, lead), 1'312'500);
  EXPECT_EQ(next_sample_due(5'000'000, 1'125'000, period, lead), 5'125'000);
}

TEST(anticipation, raises_once_within_the_lead_and_withdraws_a_lead_after_the_due_time) {
  constexpr std::uint64_t due = 1'000'000;
  EXPECT_EQ(anticipate(due - lead - 1, due, lead, false), anticipation::wait);
  EXPECT_EQ(anticipate(due - lead, due, lead, false), anticipation::raise);
  EXPECT_EQ(anticipate(due - 1, due, lead, true), anticipation::wait);  // raised: once
  EXPECT_EQ(anticipate(due + lead, due, lead, true), anticipation::wait);
  EXPECT_EQ(anticipate(due + lead + 1, due, lead, true), anticipation::withdraw);
  // A handler that comes back after the window (a long idle pass) raises nothing late.
  EXPECT_EQ(anticipate(due + lead + 1, due, lead, false), anticipation::withdraw);
}

}  // namespace
}  // namespace resident::test
