// The benches' shared result pieces, on hand-made samples.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"

namespace resident::bench {
namespace {

TEST(sm_ids, lists_the_marked_sms_across_every_word_in_order) {
  std::array<std::uint32_t, 8> mask{};
  EXPECT_TRUE(sm_ids(mask).empty());
  mask[0] = 0b1011U;      // SMs 0, 1, 3
  mask[1] = 1U << 31;     // SM 63
  mask[4] = 1U;           // SM 128
  mask[7] = 0x80000000U;  // SM 255, the last the bitmap holds
  EXPECT_EQ(sm_ids(mask), (std::vector<int>{0, 1, 3, 63, 128, 255}));
}

TEST(add_undisturbed, counts_the_disturbed_and_summarizes_the_rest) {
  nlohmann::json r;
  add_undisturbed(r, 6, {10.0, 12.0, 11.0, 13.0});
  EXPECT_EQ(r["disturbed"].get<std::int64_t>(), 2);
  EXPECT_EQ(r["undisturbed_n"].get<std::int64_t>(), 4);
  EXPECT_DOUBLE_EQ(r["undisturbed_max_us"].get<double>(), 13.0);
  EXPECT_DOUBLE_EQ(r["undisturbed_jitter_us"].get<double>(), 3.0);
  // Population stddev of 10, 11, 12, 13: sqrt(1.25).
  EXPECT_NEAR(r["undisturbed_stddev_us"].get<double>(), 1.118033988749895, 1e-12);
  EXPECT_GT(r["undisturbed_p99_us"].get<double>(), 12.9);
  EXPECT_LE(r["undisturbed_p99_us"].get<double>(), r["undisturbed_p999_us"].get<double>());
  EXPECT_GT(r["undisturbed_p999_us"].get<double>(), 12.9);
  EXPECT_LE(r["undisturbed_p999_us"].get<double>(), 13.0);
}

TEST(add_undisturbed, all_disturbed_leaves_no_undisturbed_fields) {
  nlohmann::json r;
  add_undisturbed(r, 3, {});
  EXPECT_EQ(r["disturbed"].get<std::int64_t>(), 3);
  EXPECT_FALSE(r.contains("undisturbed_n"));
  EXPECT_FALSE(r.contains("undisturbed_jitter_us"));
}

// A telemetry entry with handler start, detect and commit stamped (ns); other stages 0.
telemetry_entry entry(std::uint64_t seq, std::uint64_t handler_start, std::uint64_t detect,
                      std::uint64_t commit, std::uint64_t repeat = 0, std::uint64_t release = 0,
                      std::uint64_t empty_poll = 0) {
  telemetry_entry e{seq, repeat, {}};
  e.stamp_ns[static_cast<std::size_t>(stage::last_empty_poll)] = empty_poll;
  e.stamp_ns[static_cast<std::size_t>(stage::controller_end)] = release;
  e.stamp_ns[static_cast<std::size_t>(stage::handler_start)] = handler_start;
  e.stamp_ns[static_cast<std::size_t>(stage::detect)] = detect;
  e.stamp_ns[static_cast<std::size_t>(stage::commit)] = commit;
  return e;
}

TEST(stamps_by_sample, lays_entries_out_by_sample_and_skips_repeats_and_strays) {
  const std::uint64_t base = 100;
  const std::vector<telemetry_entry> entries = {
      entry(101, 5, 10, 20),
      entry(102, 30, 40, 55, 0, /*release=*/45, /*empty_poll=*/38),
      entry(102, 60, 70, 80, /*repeat=*/1),  // the loop re-ran 102: not its first processing
      entry(103, 90, 0, 0),                  // no detect stamp
      entry(104, 100, 120, 110),             // commit before detect: a torn entry
      entry(105, 1, 10, 20, 0, /*release=*/25, /*empty_poll=*/11),  // release, poll: after
      entry(99, 1, 2, 3),                                           // before this run
      entry(106, 1, 2, 3)};                                         // beyond total
  const auto st = stamps_by_sample(entries, base, 5);
  ASSERT_EQ(st.size(), 6U);
  EXPECT_EQ(st[1].detect, 10U);
  EXPECT_EQ(st[1].commit, 20U);
  EXPECT_EQ(st[1].handler_start, 5U);
  EXPECT_EQ(st[1].release, 0U);  // not stamped
  EXPECT_EQ(st[2].detect, 40U);  // the first processing, not the repeat
  EXPECT_EQ(st[2].commit, 55U);
  EXPECT_EQ(st[2].release, 45U);
  EXPECT_EQ(st[2].last_empty_poll, 38U);
  EXPECT_EQ(st[1].last_empty_poll, 0U);  // the first poll found it
  EXPECT_EQ(st[5].detect, 10U);
  EXPECT_EQ(st[5].release, 0U);          // after the commit: not trusted
  EXPECT_EQ(st[5].last_empty_poll, 0U);  // after the detect: not trusted
  EXPECT_EQ(st[3].detect, 0U);
  EXPECT_EQ(st[4].detect, 0U);
  EXPECT_DOUBLE_EQ(in_loop_us(st[2]), 0.015);
  EXPECT_LT(in_loop_us(st[3]), 0.0);
}

TEST(split_against_previous, parts_add_up_to_the_growth_of_the_latency) {
  sample_log log(3);
  // Host clock (ns). Sample 1: released 1000, seen 13000 (12 us). Sample 2: released 201000,
  // seen 251000 (50 us).
  log.release_ns[1] = 1000;
  log.seen_ns[1] = 13000;
  log.release_ns[2] = 201000;
  log.seen_ns[2] = 251000;
  log.publish_ns[2] = 300;
  log.late_ns[2] = 1500;
  log.poll_gap_ns[2] = 26000;
  // Device clock, offset from the host's by an unknown constant (here 7e9).
  const std::uint64_t off = 7'000'000'000;
  std::vector<device_stamps> st(4);
  // Detect 3 us after the sensor's release, 2 us in the loop (0.5 us to the DAG's release).
  st[1] = {off + 1500, off + 4000, off + 4500, off + 6000};
  // Sample 2: detected 5 us after release (2 us later than sample 1), 3 us in the loop (1 us
  // more), so the rest (commit -> seen) grew by 50 - 12 - 2 - 1 = 35 us.
  // The DAG's release came 0.75 us after detection (+0.25 us), the commit 2.25 us after it.
  // Its last read of host memory, the one that found it, took 1.25 us.
  st[2] = {off + 201000, off + 206000, off + 206750, off + 209000, off + 204750};
  const nlohmann::json one = split_against_previous(log, st, 2);
  EXPECT_EQ(one["sample"].get<std::size_t>(), 2U);
  EXPECT_DOUBLE_EQ(one["latency_us"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(one["previous_latency_us"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(one["in_loop_us"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(one["publish_us"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(one["poll_gap_us"].get<double>(), 26.0);
  EXPECT_DOUBLE_EQ(one["release_late_us"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(one["release_gap_us"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(one["handler_last_read_us"].get<double>(), 1.25);
  EXPECT_FALSE(split_against_previous(log, st, 1).contains("handler_last_read_us"));
  EXPECT_FALSE(split_against_previous(log, st, 1).contains("release_gap_us"));  // no previous
  const auto& v = one["vs_previous_us"];
  EXPECT_DOUBLE_EQ(v["release_to_detect"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(v["detect_to_commit"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(v["commit_to_seen"].get<double>(), 35.0);
  EXPECT_DOUBLE_EQ(v["release_to_detect"].get<double>() + v["detect_to_commit"].get<double>() +
                       v["commit_to_seen"].get<double>(),
                   50.0 - 12.0);
  EXPECT_DOUBLE_EQ(one["handler_polled_us"].get<double>(), 5.0);
  const auto& in = one["in_loop_vs_previous_us"];
  EXPECT_DOUBLE_EQ(in["detect_to_release"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(in["release_to_commit"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(in["detect_to_release"].get<double>() + in["release_to_commit"].get<double>(),
                   v["detect_to_commit"].get<double>());
}

TEST(split_against_previous, no_split_without_stamps_for_both_samples) {
  sample_log log(3);
  log.release_ns[1] = 0;
  log.seen_ns[1] = 10000;
  log.release_ns[2] = 100000;
  log.seen_ns[2] = 140000;
  std::vector<device_stamps> st(4);
  st[2] = {100500, 101000, 0, 102000};  // sample 1 has no stamps
  const nlohmann::json one = split_against_previous(log, st, 2);
  EXPECT_DOUBLE_EQ(one["latency_us"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(one["in_loop_us"].get<double>(), 1.0);
  EXPECT_FALSE(one.contains("vs_previous_us"));
  EXPECT_FALSE(one.contains("previous_latency_us"));
  // The first sample has no predecessor at all.
  st[1] = {1, 2, 0, 3};
  EXPECT_FALSE(split_against_previous(log, st, 1).contains("vs_previous_us"));
  // Both stamped, but without release stamps: no in-loop split.
  const nlohmann::json two = split_against_previous(log, st, 2);
  EXPECT_TRUE(two.contains("vs_previous_us"));
  EXPECT_FALSE(two.contains("in_loop_vs_previous_us"));
}

TEST(slowest_samples, keeps_the_largest_in_order_over_many_offers) {
  slowest_samples kept(3);
  for (std::size_t k = 1; k <= 1000; ++k) {
    // Peaks at 500 (value 1000), 250 (900) and 750 (800); everything else below 100.
    const double us = k == 500 ? 1000.0 : k == 250 ? 900.0 : k == 750 ? 800.0 : double(k % 100);
    kept.offer(us, static_cast<int>(k % 7), k);
  }
  const auto out = kept.sorted();
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(std::get<2>(out[0]), 500U);
  EXPECT_EQ(std::get<2>(out[1]), 250U);
  EXPECT_EQ(std::get<2>(out[2]), 750U);
  EXPECT_EQ(std::get<1>(out[1]), 250 % 7);
  EXPECT_TRUE(slowest_samples(5).sorted().empty());
}

// Two loops' samples: the disturbed ones counted, the split of each, the slowest named.
TEST(sample_accounting, counts_disturbed_samples_and_splits_the_slowest_over_loops) {
  sample_log a(3), b(3);
  std::vector<device_stamps> stamps_a(4), stamps_b(4);
  // Loop 0: sample 1 undisturbed (12 us, 10 us in the loop); sample 2 published in 30 us.
  a.release_ns[1] = 0;
  a.seen_ns[1] = 12'000;
  stamps_a[1] = {100, 1'000, 0, 11'000};
  a.release_ns[2] = 200'000;
  a.seen_ns[2] = 250'000;
  a.publish_ns[2] = 30'000;
  a.late_ns[2] = 40'000;  // released 40 us behind schedule
  stamps_a[2] = {200'500, 231'000, 0, 241'000};
  // Loop 1: sample 1 seen after a 15 us poll gap, without device stamps.
  b.release_ns[1] = 0;
  b.seen_ns[1] = 20'000;
  b.poll_gap_ns[1] = 15'000;
  sample_accounting acc(10'000);
  acc.add(0, a, stamps_a, 1, 12.0);
  acc.add(0, a, stamps_a, 2, 50.0);
  acc.add(1, b, stamps_b, 1, 20.0);
  nlohmann::json r;
  acc.write_undisturbed(r);
  EXPECT_EQ(r["disturbed"].get<std::int64_t>(), 2);
  EXPECT_EQ(r["undisturbed_n"].get<std::int64_t>(), 1);
  EXPECT_DOUBLE_EQ(r["undisturbed_max_us"].get<double>(), 12.0);
  const nlohmann::json m = acc.measurement("how", true);
  EXPECT_EQ(m["method"], "how");
  EXPECT_DOUBLE_EQ(m["threshold_us"].get<double>(), 10.0);
  EXPECT_EQ(m["sensor_disturbed"].get<std::int64_t>(), 1);
  EXPECT_EQ(m["actuator_disturbed"].get<std::int64_t>(), 1);
  EXPECT_DOUBLE_EQ(m["publish_us"]["max_us"].get<double>(), 30.0);
  EXPECT_EQ(m["late_releases"].get<std::int64_t>(), 1);
  EXPECT_DOUBLE_EQ(m["release_late_us"]["max_us"].get<double>(), 40.0);
  EXPECT_EQ(m["release_late_us"]["n"].get<std::int64_t>(), 3);
  EXPECT_DOUBLE_EQ(m["poll_gap_us"]["max_us"].get<double>(), 15.0);
  EXPECT_EQ(m["in_loop_us"]["n"].get<std::int64_t>(), 2);  // loop 1 left no stamps
  EXPECT_DOUBLE_EQ(m["in_loop_us"]["max_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(m["outside_us"]["max_us"].get<double>(), 40.0);
  ASSERT_EQ(m["slowest"].size(), 3U);
  EXPECT_EQ(m["slowest"][0]["loop"].get<int>(), 0);
  EXPECT_EQ(m["slowest"][0]["sample"].get<std::size_t>(), 2U);
  // 50 - 12 = 38 us of growth: 30 before detection (the publish), none in the loop, 8 after.
  EXPECT_DOUBLE_EQ(m["slowest"][0]["vs_previous_us"]["release_to_detect"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(m["slowest"][0]["vs_previous_us"]["detect_to_commit"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(m["slowest"][0]["vs_previous_us"]["commit_to_seen"].get<double>(), 8.0);
  EXPECT_EQ(m["slowest"][1]["loop"].get<int>(), 1);
  EXPECT_FALSE(acc.measurement("how", false)["slowest"][0].contains("loop"));
}

// Every observer against every other: two long stalls overlap, a short one does not count.
TEST(add_shared_stalls, pairs_every_observer_with_every_other_and_names_its_cpu) {
  measure::stall_log a(4), b(4), c(4);
  a.record(100'000, 30'000);  // overlaps b's long stall
  a.record(500'000, 25'000);  // overlaps only c's short one
  b.record(110'000, 40'000);
  c.record(505'000, 5'000);
  nlohmann::json obs = nlohmann::json::array({{{"cpu", 7}}, {{"cpu", 8}}, {{"cpu", 9}}});
  add_shared_stalls(obs, {&a, &b, &c}, {7, 8, 9});
  ASSERT_EQ(obs[0]["stalls_shared"].size(), 2U);
  EXPECT_EQ(obs[0]["stalls_shared"][0]["cpu"].get<int>(), 8);
  EXPECT_EQ(obs[0]["stalls_shared"][0]["stalls"].get<std::int64_t>(), 2);
  EXPECT_EQ(obs[0]["stalls_shared"][0]["shared"].get<std::int64_t>(), 1);
  EXPECT_EQ(obs[0]["stalls_shared"][1]["cpu"].get<int>(), 9);
  EXPECT_EQ(obs[0]["stalls_shared"][1]["shared"].get<std::int64_t>(), 0);
  EXPECT_EQ(obs[1]["stalls_shared"][0]["cpu"].get<int>(), 7);
  EXPECT_EQ(obs[1]["stalls_shared"][0]["shared"].get<std::int64_t>(), 1);
  EXPECT_EQ(obs[2]["stalls_shared"][0]["stalls"].get<std::int64_t>(), 0);  // no long stall
  EXPECT_DOUBLE_EQ(obs[2]["stalls_shared"][1]["min_us"].get<double>(), 20.0);
  nlohmann::json one = nlohmann::json::array({{{"cpu", 7}}});
  add_shared_stalls(one, {&a}, {7});
  EXPECT_FALSE(one[0].contains("stalls_shared"));  // nobody to compare with
}

TEST(stopping_thread, an_exception_in_its_scope_stops_and_joins_the_thread) {
  std::atomic<bool> stop{false};
  std::atomic<int> polls{0};
  std::atomic<bool> ended{false};
  try {
    stopping_thread worker([&] { stop = true; },
                           [&] {
                             while (!stop.load()) {
                               ++polls;
                               std::this_thread::sleep_for(std::chrono::microseconds(100));
                             }
                             ended = true;
                           });
    while (polls.load() == 0) std::this_thread::yield();
    throw std::runtime_error("the loop's set-up was refused");
  } catch (const std::runtime_error& e) {
    // Here, not in std::terminate: the thread was asked to stop and joined.
    EXPECT_STREQ(e.what(), "the loop's set-up was refused");
  }
  EXPECT_TRUE(stop.load());
  EXPECT_TRUE(ended.load());
}

TEST(stopping_thread, join_waits_for_the_body_and_the_stop_is_not_called) {
  bool stop_called = false;
  int result = 0;
  {
    stopping_thread worker([&] { stop_called = true; }, [&] { result = 42; });
    worker.join();
    EXPECT_EQ(result, 42);
  }
  EXPECT_FALSE(stop_called);
}

}  // namespace
}  // namespace resident::bench
