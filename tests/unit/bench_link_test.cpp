// bench link without a GPU: the clock offset from ping-pong rounds, the handoff and publish times
// from the two loops' telemetry, and the command line's checks.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "bench/link/clock_offset.hpp"
#include "bench/link/link_bench.hpp"
#include "commands/bench_link.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

TEST(bench_link, the_clock_offset_comes_from_the_shortest_round_trip) {
  // B's clock runs 1000 ns ahead of A's. Round 1: a 400 ns trip, B answering at its midpoint;
  // round 2: a 100 ns trip, B answering 20 ns after its midpoint (the estimate is off by 20,
  // within the 50 ns the trip allows); round 3: a long trip B answered late.
  const std::vector<ping_pong_round> rounds = {
      {10'000, 10'000 + 200 + 1000, 10'400},
      {20'000, 20'000 + 50 + 20 + 1000, 20'100},
      {30'000, 30'000 + 900 + 1000, 31'000},
  };
  const clock_offset o = estimate_clock_offset(rounds);
  EXPECT_DOUBLE_EQ(o.b_minus_a_ns, 1020.0);
  EXPECT_DOUBLE_EQ(o.round_trip_ns, 100.0);
  EXPECT_DOUBLE_EQ(o.error_ns, 50.0);
  EXPECT_DOUBLE_EQ(o.spread_ns, 1400.0 - 1000.0);
  EXPECT_EQ(o.rounds, 3U);
  EXPECT_THROW((void)estimate_clock_offset({}), std::invalid_argument);
  const std::vector<ping_pong_round> backwards = {{5'000, 5'000, 4'000}};
  EXPECT_THROW((void)estimate_clock_offset(backwards), std::invalid_argument);
}

telemetry_entry entry(std::uint64_t seq, std::uint64_t repeat, std::uint64_t arrival,
                      std::uint64_t detect, std::uint64_t commit) {
  telemetry_entry e{};
  e.seq = seq;
  e.repeat = repeat;
  e.stamp_ns[static_cast<std::size_t>(stage::arrival)] = arrival;
  e.stamp_ns[static_cast<std::size_t>(stage::detect)] = detect;
  e.stamp_ns[static_cast<std::size_t>(stage::commit)] = commit;
  return e;
}

TEST(bench_link, handoff_and_publish_times_pair_the_two_loops_samples) {
  // Consumer: arrival on the producer's clock, detect on its own, 500 ns ahead. An idle pass,
  // a repeat and an entry without an arrival stamp are skipped.
  const std::vector<telemetry_entry> consumer = {
      entry(0, 0, 0, 0, 0),                        // idle
      entry(1, 0, 1'000, 1'000 + 500 + 3'000, 0),  // handoff 3 us
      entry(1, 1, 1'000, 9'999'999, 0),            // repeat
      entry(2, 0, 10'000, 10'000 + 500 + 4'500, 0),
      entry(3, 0, 0, 30'000, 0),  // no stamp
  };
  const std::vector<double> h = handoff_us(consumer, 500.0);
  ASSERT_EQ(h.size(), 2U);
  EXPECT_DOUBLE_EQ(h[0], 3.0);
  EXPECT_DOUBLE_EQ(h[1], 4.5);
  // Producer: its k-th processed sample is the link's k-th; publish = its commit - egress start.
  const std::vector<telemetry_entry> producer = {entry(0, 0, 0, 0, 0),
                                                 entry(7, 0, 0, 900, 1'000 + 2'000),
                                                 entry(8, 0, 0, 9'000, 10'000 + 2'500)};
  const std::vector<double> p = publish_us(producer, consumer);
  ASSERT_EQ(p.size(), 2U);
  EXPECT_DOUBLE_EQ(p[0], 2.0);
  EXPECT_DOUBLE_EQ(p[1], 2.5);
}

TEST(bench_link, the_command_line_is_checked_before_any_gpu_work) {
  CLI::App root;
  cli::bench_link_command_settings s;
  cli::add_bench_link_options(root, s);
  root.parse("link --producer 0 --consumer 0 --sizes 64,4096 --modes while,persistent --quick");
  const link_settings out = s.resolve();
  EXPECT_EQ(out.sizes, (std::vector<std::size_t>{64, 4096}));
  EXPECT_EQ(out.modes, (std::vector<std::string>{"while", "persistent"}));
  EXPECT_EQ(out.samples, 200U);
  EXPECT_EQ(out.consumer, 0);
  const auto refused = [&](auto change) {
    cli::bench_link_command_settings t = s;
    change(t);
    try {
      (void)t.resolve();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_THAT(refused([](auto& t) { t.sizes = "0"; }), HasSubstr("--sizes"));
  EXPECT_THAT(refused([](auto& t) { t.sizes = "2000000000"; }), HasSubstr("--sizes: each 1 to"));
  EXPECT_THAT(refused([](auto& t) { t.modes = "eager"; }), HasSubstr("eager launches"));
  EXPECT_THAT(refused([](auto& t) { t.modes = "warp"; }), HasSubstr("warp"));
  EXPECT_THAT(refused([](auto& t) { t.modes = ""; }), HasSubstr("--modes"));
  EXPECT_THROW(root.parse("link --depth 1"), CLI::ValidationError);
  EXPECT_THROW(root.parse("link --rate 0"), CLI::ValidationError);
}

}  // namespace
}  // namespace resident::bench
