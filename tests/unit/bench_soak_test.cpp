// bench soak's pieces that need no GPU: the per-minute latency summaries, the p99 drift, the
// process's resident set size, and the settings' ranges.

#include <gmock/gmock.h>

#include <sstream>
#include <stdexcept>
#include <vector>

#include "bench/soak/soak_bench.hpp"

namespace resident::bench {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(soak_minutes, samples_are_summarized_per_whole_minute_in_order) {
  std::vector<timed_latency> v;
  for (int i = 0; i < 100; ++i) v.push_back({59.0 * i / 100.0, 10.0 + i % 10});  // minute 0
  for (int i = 0; i < 100; ++i) v.push_back({120.0 + i * 0.1, 20.0});            // minute 2
  v.push_back({61.0, 500.0});                                                    // minute 1
  const auto m = per_minute(v);
  ASSERT_EQ(m.size(), 3U);
  EXPECT_EQ(m[0].minute, 0);
  EXPECT_EQ(m[0].n, 100U);
  EXPECT_DOUBLE_EQ(m[0].max_us, 19.0);
  EXPECT_EQ(m[1].minute, 1);
  EXPECT_EQ(m[1].n, 1U);
  EXPECT_DOUBLE_EQ(m[1].p99_us, 500.0);
  EXPECT_EQ(m[2].minute, 2);
  EXPECT_DOUBLE_EQ(m[2].p50_us, 20.0);
}

TEST(soak_minutes, drift_is_the_spread_of_the_p99s_after_warm_up) {
  const std::vector<minute_summary> m{{0, 10, 5, 100, 100},  // warm-up: left out
                                      {1, 10, 5, 10, 10},
                                      {2, 10, 5, 10.4, 11},
                                      {3, 10, 5, 10.2, 11}};
  EXPECT_NEAR(p99_drift(m, 30.0, 240.0).value(), 0.04, 1e-12);
  EXPECT_NEAR(p99_drift(m, 0.0, 240.0).value(), 9.0, 1e-12) << "with minute 0: (100 - 10) / 10";
  EXPECT_FALSE(p99_drift(std::vector<minute_summary>{{1, 1, 1, 1, 1}}, 0.0, 120.0))
      << "one minute has nothing to drift from";
}

TEST(soak_minutes, a_last_minute_the_run_did_not_fill_is_not_judged) {
  // An 8-minute run's ninth minute holds the samples of its last fraction of a second: a p99 of
  // a handful of samples, lower than any whole minute's.
  const std::vector<minute_summary> m{
      {1, 1000, 5, 40, 50}, {2, 1000, 5, 41, 50}, {3, 1000, 5, 40.5, 50}, {4, 1, 28, 28, 28}};
  EXPECT_NEAR(p99_drift(m, 20.0, 240.5).value(), 0.025, 1e-12);
  EXPECT_NEAR(p99_drift(m, 20.0, 300.0).value(), (41.0 - 28.0) / 28.0, 1e-12)
      << "a whole fifth minute counts";
  EXPECT_FALSE(p99_drift(m, 20.0, 100.0)) << "only minute 1 is whole: nothing to compare";
}

TEST(soak_minutes, in_loop_latency_is_sighting_to_commit_filed_by_sequence) {
  auto entry = [](std::uint64_t seq, std::uint64_t repeat, std::uint64_t detect,
                  std::uint64_t commit) {
    telemetry_entry e{};
    e.seq = seq;
    e.repeat = repeat;
    e.stamp_ns[static_cast<std::size_t>(stage::detect)] = detect;
    e.stamp_ns[static_cast<std::size_t>(stage::commit)] = commit;
    return e;
  };
  const std::vector<telemetry_entry> t{
      entry(101, 0, 1000, 4500),      // 3.5 us, 1st sample after base 100
      entry(101, 1, 2000, 9000),      // a repeat: not a response
      entry(100, 0, 1000, 2000),      // before the run's base
      entry(4101, 0, 0, 5000),        // no sighting stamp
      entry(4101, 0, 7000, 6000),     // commit before sighting: not a response
      entry(4102, 0, 10000, 12250)};  // 2.25 us, 4002nd sample: 2.001 s at 2 kHz
  const auto l = in_loop_latencies(t, 100, 2000.0);
  ASSERT_EQ(l.size(), 2U);
  EXPECT_DOUBLE_EQ(l[0].t_s, 1.0 / 2000.0);
  EXPECT_DOUBLE_EQ(l[0].us, 3.5);
  EXPECT_DOUBLE_EQ(l[1].t_s, 4002.0 / 2000.0);
  EXPECT_DOUBLE_EQ(l[1].us, 2.25);
}

TEST(soak_memory, the_resident_set_is_read_and_grows_with_touched_memory) {
  const std::uint64_t before = resident_set_bytes();
  ASSERT_GT(before, 0U);
  std::vector<char> touched(64 << 20, 1);
  EXPECT_GE(resident_set_bytes(), before + (32 << 20)) << touched[12345];
}

TEST(soak_settings, ranges_and_modes_are_checked_by_name) {
  soak_settings s;
  EXPECT_NO_THROW(s.validate());
  s.minutes = 0;
  EXPECT_THAT([&] { s.validate(); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("--minutes must be")));
  s = {};
  s.camera_mode = "host-graph";
  EXPECT_THAT([&] { s.validate(); }, ::testing::ThrowsMessage<std::invalid_argument>(
                                         HasSubstr("'host-graph' is not GPU-resident")));
  s = {};
  s.minutes = 24 * 60.0;  // a day at 2 kHz: 172.8 million samples' stamps, about 20 GB
  EXPECT_THAT([&] { s.validate(); },
              ::testing::ThrowsMessage<std::invalid_argument>(AllOf(
                  HasSubstr("publishes 1.728e+08 samples"), HasSubstr("at most 66.6667 minutes"))));
  s.minutes = 60.0;
  EXPECT_NO_THROW(s.validate());
  s.mailbox_rate_hz = 100'000.0;
  EXPECT_THROW(s.validate(), std::invalid_argument) << "an hour at 100 kHz";
  s = {};
  s.warmup_s = 1e9;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s = {};
  s.make_quick();
  EXPECT_NO_THROW(s.validate());
  EXPECT_LT(s.minutes, 1.0);
}

TEST(soak_settings, a_health_path_that_cannot_be_written_is_refused_before_anything_starts) {
  // Refused before the camera's reference frames, the loops or any thread: no GPU is touched,
  // so the error comes the same with or without one.
  soak_settings s;
  s.make_quick();
  s.health_path = "/nonexistent-folder/of/soak/health.jsonl";
  std::ostringstream log;
  bool ok = true;
  EXPECT_THAT([&] { (void)run_soak_bench(s, log, ok); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr(
                  "cannot write the health lines to /nonexistent-folder/of/soak/health.jsonl")));
  EXPECT_EQ(log.str(), "");
}

}  // namespace
}  // namespace resident::bench
