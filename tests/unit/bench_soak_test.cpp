// bench soak's pieces that need no GPU: the per-minute latency summaries, the p99 drift, the
// process's resident set size, and the settings' ranges.

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "bench/soak/soak_bench.hpp"
#include "commands/report.hpp"
#include "resident/measure/plots.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

TEST(soak_minutes, samples_are_folded_per_minute_in_order) {
  minute_folder f(128, 4);
  EXPECT_TRUE(f.summaries().empty());
  EXPECT_FALSE(f.latest());
  for (int i = 0; i < 100; ++i) f.add({59.0 * i / 100.0, 10.0 + i % 10});  // minute 0
  EXPECT_FALSE(f.latest()) << "minute 0 is still open";
  f.add({61.0, 500.0});  // minute 1 closes minute 0
  ASSERT_TRUE(f.latest());
  EXPECT_EQ(f.latest()->minute, 0);
  EXPECT_EQ(f.latest()->n, 100U);
  f.add({60.5, 7.0});  // late: counts in the open minute 1
  for (int i = 0; i < 100; ++i) f.add({150.0 + i * 0.1, 20.0});  // minute 2; minute 1 closes
  const auto m = f.summaries();
  ASSERT_EQ(m.size(), 3U);
  EXPECT_EQ(m[0].minute, 0);
  EXPECT_EQ(m[0].n, 100U);
  EXPECT_DOUBLE_EQ(m[0].max_us, 19.0);
  EXPECT_DOUBLE_EQ(m[0].p50_us, 14.5);
  EXPECT_EQ(m[1].minute, 1);
  EXPECT_EQ(m[1].n, 2U);
  EXPECT_DOUBLE_EQ(m[1].max_us, 500.0);
  EXPECT_EQ(m[2].minute, 2) << "the open minute is summarized too";
  EXPECT_EQ(m[2].n, 100U);
  EXPECT_DOUBLE_EQ(m[2].p50_us, 20.0);
  EXPECT_EQ(f.latest()->minute, 1);
}

TEST(soak_minutes, a_minute_says_how_thick_its_slow_tail_is) {
  // 1,000 samples: 970 at 10 us, then 30 slow ones (20..49 us). The p99 lands inside the slow
  // tail; the tail share (slower than 1.5 x p50 = 15 us) counts all 30.
  minute_folder f(1000, 2);
  for (int i = 0; i < 970; ++i) f.add({i * 0.05, 10.0});
  for (int i = 0; i < 30; ++i) f.add({48.5 + i * 0.01, 20.0 + i});
  const auto m = f.summaries();
  ASSERT_EQ(m.size(), 1U);
  EXPECT_DOUBLE_EQ(m[0].p50_us, 10.0);
  EXPECT_DOUBLE_EQ(m[0].p90_us, 10.0);
  EXPECT_GT(m[0].p99_us, 38.0);
  EXPECT_LT(m[0].p99_us, 41.0);
  EXPECT_GT(m[0].p999_us, 48.0);
  EXPECT_DOUBLE_EQ(m[0].max_us, 49.0);
  EXPECT_DOUBLE_EQ(m[0].tail_share, 0.03);
}

TEST(soak_table, prints_the_judged_minutes_ranges_under_each_pipeline) {
  measure::receipt rc("soak", "resident bench soak --minutes 3");
  const auto minute = [](int i, double p99, double tail, bool judged) {
    return nlohmann::json{{"minute", i},   {"n", 100},           {"p50_us", 17.0},
                          {"p99_us", p99}, {"tail_share", tail}, {"judged", judged}};
  };
  rc.results.push_back(
      {{"pipeline", "mailbox"},
       {"mode", "while"},
       {"counters",
        {{"processed", 10}, {"dropped", 0}, {"unaccounted", 0}, {"deadline_misses", 0}}},
       {"p99_drift", 0.1},
       {"minutes",
        {minute(0, 90, 0.5, false), minute(1, 33.5, 0.012, true), minute(2, 37, 0.0175, true)}},
       {"beside_camera",
        {{"slow_above_us", 25.5},
         {"slow", 200},
         {"slow_in_work_share", 0.1},
         {"slow_in_landing_share", 0.6},
         {"fast_in_work_share", 0.01},
         {"fast_in_landing_share", 0.012},
         {"gap_to_next_arrival",
          {{"edges_us", {25, 50, 100, 200, 400, 800, 1600}},
           {"slow", {100, 40, 20, 10, 10, 10, 10, 0, 0}},   // 170 of 200 within 200 us
           {"fast", {1, 1, 2, 8, 12, 24, 48, 900, 4}}}}}},  // 12 of 1000
       {"sensor", {{"late_over_us", 100.0}, {"late_releases", 37}, {"max_late_us", 1234.5}}}});
  const std::string table = soak_table(rc);
  EXPECT_THAT(table, HasSubstr("mailbox (while): processed 10"));
  EXPECT_THAT(table, HasSubstr("judged minutes: p50 17-17, p99 33.5-37 us, tail share (> 1.5 x "
                               "p50) 1.2-1.75 %"))
      << table << "(minute 0, not judged, is left out)";
  EXPECT_THAT(table, HasSubstr("slow samples (> 25.5 us): 200; during a camera frame's work 10 %, "
                               "its landing 60 % (fast samples: 1 %, 1.2 %)"))
      << table;
  EXPECT_THAT(table, HasSubstr("ended < 200 us before a frame's arrival: slow 85 %, fast 1.2 %"))
      << table;
  EXPECT_THAT(table, HasSubstr("sensor thread: 37 releases more than 100 us late (worst 1234 us)"))
      << table;
  EXPECT_THAT(table, HasSubstr("p99 drift 10%")) << "the drift keeps its own precision";
}

constexpr std::uint64_t us(std::uint64_t x) { return x * 1000; }
// A device-clock time x µs into a run (a stamp is never 0: 0 means not stamped).
constexpr std::uint64_t t(std::uint64_t x) { return (1'000'000 + x) * 1000; }

TEST(overlap_census, counts_slow_and_fast_samples_beside_a_frames_work_and_landing) {
  overlap_census c(us(100), 4, 8, 16);  // landing: the 100 us before a frame's arrival
  for (std::uint64_t x : {0, 20, 40, 60}) c.add_sample(t(x), t(x + 10));  // median 10 us
  c.add_sample(t(950), t(960));    // fast, in frame 1's landing [900, 1000]
  c.add_sample(t(1000), t(1040));  // slow, in frame 1's work [1010, 1060]
  c.add_sample(t(2000), t(2050));  // slow, beside nothing
  c.add_sample(t(3000), t(3005));  // fast, in frame 2's work [2990, 3010]
  c.add_frame(t(1000), t(1010), t(1060));
  c.add_frame(t(1500), 0, t(1600));  // not stamped: left out (it would span from time 0)
  c.add_frame(t(2980), t(2990), t(3010));
  auto n = c.result(false);
  EXPECT_DOUBLE_EQ(n.slow_above_us, 15.0) << "1.5 x the first four samples' median";
  EXPECT_EQ(n.slow, 2U);
  EXPECT_EQ(n.slow_in_work, 1U);
  EXPECT_EQ(n.slow_in_landing, 0U);
  EXPECT_EQ(n.fast, 5U) << "the sample at 3000 waits: a frame arriving before 3105 could touch it";
  EXPECT_EQ(n.fast_in_landing, 1U);
  EXPECT_EQ(n.fast_in_work, 0U);
  c.add_frame(t(5000), t(5005), t(5050));  // arrives after 3105: the last sample is judged
  n = c.result(false);
  EXPECT_EQ(n.fast, 6U);
  EXPECT_EQ(n.fast_in_work, 1U);
  EXPECT_EQ(n.unjudged, 0U);
  // How long before the next arrival each ended: the slow one at 1000 contains frame 1's
  // arrival (0 us), the one at 2000 ends 930 us before frame 2's; the fast ones 930-990 us
  // (calibration), 40 us (950) and 1,995 us (3000, before frame 3's) before theirs.
  using gaps = std::array<std::uint64_t, overlap_census::gap_buckets>;
  EXPECT_EQ(n.slow_by_gap, (gaps{1, 0, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(n.fast_by_gap, (gaps{0, 1, 0, 0, 0, 0, 4, 1, 0}));
}

TEST(overlap_census, what_it_cannot_judge_is_counted_as_unjudged) {
  overlap_census early(us(100), 4, 8, 16);
  early.add_sample(t(0), t(10));
  early.add_frame(t(500), t(510), t(520));
  EXPECT_EQ(early.result(false).unjudged, 0U) << "waits for the calibration";
  const auto e = early.result(true);
  EXPECT_EQ(e.unjudged, 1U) << "the run ended before 4 samples calibrated the threshold";
  EXPECT_EQ(e.slow + e.fast, 0U);

  overlap_census c(us(100), 1, 2, 16);  // two frames kept
  c.add_sample(t(0), t(10));            // calibrates: slow above 15 us
  c.add_sample(t(1000), t(1020));       // waits for frames past 1120
  c.add_frame(t(3000), t(3010), t(3020));
  c.add_frame(t(4000), t(4010), t(4020));
  c.add_frame(t(5000), t(5010), t(5020));  // the first kept frame is now at 4000
  auto n = c.result(false);
  EXPECT_EQ(n.fast, 1U) << "the calibration sample was judged while frame 3000 was kept";
  EXPECT_EQ(n.slow, 1U) << "frames 3000.. could not touch [1000, 1020]: judged when covered";

  overlap_census late(us(100), 2, 2, 16);  // calibrates on its second sample
  late.add_sample(t(0), t(10));            // waits for the calibration ...
  for (std::uint64_t x : {3000, 4000, 5000}) late.add_frame(t(x), t(x + 10), t(x + 20));
  late.add_sample(t(6000), t(6010));  // ... which ends when frame 3000 is no longer kept
  n = late.result(true);
  EXPECT_EQ(n.unjudged, 1U) << "a sample older than every frame kept";
  EXPECT_EQ(n.fast, 1U);

  overlap_census full(us(100), 1, 8, 2);  // room for two waiting samples
  full.add_sample(t(0), t(10));
  full.add_sample(t(20), t(40));
  full.add_sample(t(50), t(60));  // full: the oldest is judged against no frame
  n = full.result(false);
  EXPECT_EQ(n.fast, 1U);
  EXPECT_EQ(n.slow + n.unjudged, 0U);
  n = full.result(true);
  EXPECT_EQ(n.slow, 1U);
  EXPECT_EQ(n.fast, 2U);
  EXPECT_EQ(n.fast_by_gap.back(), 2U) << "no frame came after them";
  EXPECT_EQ(n.slow_by_gap.back(), 1U);
}

TEST(soak_report, prints_the_soak_table_and_a_row_a_minute_old_receipts_included) {
  measure::receipt rc("soak", "resident bench soak --minutes 2");
  rc.git_commit = "abc1234";
  rc.device.name = "NVIDIA H200";
  const auto minute = [](int i, bool judged, bool with_tail) {
    nlohmann::json m{{"minute", i},    {"n", 120000},  {"p50_us", 17.0},
                     {"p99_us", 21.5}, {"max_us", 56}, {"judged", judged}};
    if (with_tail) {
      m["p90_us"] = 17.5;
      m["p999_us"] = 40.25;
      m["tail_share"] = 0.012;
    }
    return m;
  };
  rc.results.push_back(
      {{"pipeline", "mailbox"},
       {"mode", "while"},
       {"counters",
        {{"processed", 10}, {"dropped", 0}, {"unaccounted", 0}, {"deadline_misses", 0}}},
       {"p99_drift", 0.0},
       {"minutes", {minute(0, false, true), minute(1, true, true)}},
       {"host_minutes", {minute(1, true, false)}}});
  rc.results.push_back(
      {{"pipeline", "camera"},
       {"mode", "while"},
       {"counters", {{"processed", 5}, {"dropped", 0}, {"unaccounted", 0}, {"deadline_misses", 0}}},
       {"p99_drift", nullptr},
       {"minutes", {minute(2, false, false)}}});  // a minute only the camera has
  const std::string text = soak_report_text(rc);
  EXPECT_THAT(text, HasSubstr("soak: git abc1234, started"));
  EXPECT_THAT(text, HasSubstr("NVIDIA H200\n  command: resident bench soak --minutes 2"));
  EXPECT_THAT(text, HasSubstr("mailbox (while): processed 10"));
  EXPECT_THAT(text, HasSubstr("camera (while): processed 5, dropped 0, unaccounted 0, deadline "
                              "misses 0, p99 drift not judged"));
  EXPECT_THAT(text, HasSubstr("     1    yes   120000    17.00    17.50    21.50    40.25    56.00 "
                              "   1.20     21.50        -        -        -"))
      << text;
  EXPECT_THAT(text, HasSubstr("     2     no        -        -        -        -        -        - "
                              "      -         -    17.00    21.50    56.00"))
      << text;
  // The camera's minutes carry no tail share: its judged-minutes line (none judged) is left
  // out, and the mailbox's says "?" only where a judged minute lacks a field.
  EXPECT_THAT(text, HasSubstr("judged minutes: p50 17-17, p99 21.5-21.5 us, tail share (> 1.5 x "
                              "p50) 1.2-1.2 %"));
}

TEST(soak_report, resident_report_prints_a_soak_receipt_with_its_own_table) {
  const auto dir = std::filesystem::temp_directory_path() / "resident-soak-report-test";
  std::filesystem::create_directories(dir);
  measure::receipt rc("soak", "resident bench soak --quick");
  rc.results.push_back(
      {{"pipeline", "mailbox"},
       {"mode", "tail"},
       {"counters", {{"processed", 3}, {"dropped", 1}, {"unaccounted", 0}, {"deadline_misses", 0}}},
       {"p99_drift", nullptr},
       {"minutes",
        {{{"minute", 0}, {"n", 3}, {"p50_us", 9.0}, {"p99_us", 9.5}, {"max_us", 9.5}}}}});
  rc.write((dir / "soak.json").string());
  cli::report_settings s;
  s.receipts = {(dir / "soak.json").string()};
  s.html = (dir / "soak.html").string();
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(cli::run_report(s), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  std::ifstream page(s.html);
  const std::string html{std::istreambuf_iterator<char>(page), {}};
  EXPECT_THAT(html, HasSubstr("<h1>resident bench soak</h1>")) << "the soak's own page";
  EXPECT_THAT(out, HasSubstr("mailbox (tail): processed 3, dropped 1")) << out;
  EXPECT_THAT(out, HasSubstr("per minute (us; judged: counted for drift)")) << out;
  EXPECT_THAT(out, ::testing::Not(HasSubstr("counters={"))) << "not the generic key=value dump";
  std::filesystem::remove_all(dir);
}

TEST(soak_report, the_html_page_charts_each_series_per_minute_and_escapes_text) {
  measure::receipt rc("soak", "resident bench soak --health <stderr>");
  const nlohmann::json minutes = {
      {{"minute", 0}, {"p50_us", 17.0}, {"p99_us", 21.0}, {"p999_us", 30.0}, {"max_us", 50.0}},
      {{"minute", 1}, {"p50_us", 17.1}, {"p99_us", 35.0}, {"max_us", 60.0}}};  // no p99.9
  rc.results.push_back(
      {{"pipeline", "mailbox"},
       {"mode", "while"},
       {"counters", {{"processed", 1}, {"dropped", 0}, {"unaccounted", 0}, {"deadline_misses", 0}}},
       {"p99_drift", 0.6},
       {"latency", "sighting -> commit"},
       {"minutes", minutes},
       {"host_minutes", minutes}});
  const std::string html = soak_report_html(rc);
  std::size_t charts = 0;
  for (auto at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++charts;
  }
  EXPECT_EQ(charts, 2U) << "the mailbox's own series and its host view";
  EXPECT_THAT(html, HasSubstr("mailbox: sighting -&gt; commit"));
  EXPECT_THAT(html, HasSubstr("--health &lt;stderr&gt;")) << "the command is escaped";
  EXPECT_THAT(html, ::testing::Not(HasSubstr("<stderr>")));
  EXPECT_THAT(html, HasSubstr(measure::plot_css)) << "the band and line are styled";
  EXPECT_THAT(html, HasSubstr("per minute (us; judged: counted for drift)"));
  rc.results[0]["minutes"][0]["p50_us"] = "x";
  EXPECT_THROW((void)soak_report_html(rc), std::invalid_argument);
}

TEST(soak_report, a_receipt_not_shaped_as_bench_soak_writes_it_is_refused_by_field) {
  const nlohmann::json good = {
      {"pipeline", "mailbox"},
      {"mode", "while"},
      {"counters", {{"processed", 1}, {"dropped", 0}, {"unaccounted", 0}, {"deadline_misses", 0}}},
      {"p99_drift", nullptr},
      {"minutes", {{{"minute", 0}, {"p99_us", 1.0}, {"judged", true}}}},
      {"beside_camera",
       {{"slow", 1}, {"gap_to_next_arrival", {{"edges_us", {25}}, {"slow", {1}}, {"fast", {0}}}}}}};
  const auto error_of = [](const nlohmann::json& result) {
    measure::receipt rc("soak", "resident bench soak");
    rc.results.push_back(result);
    try {
      (void)soak_report_text(rc);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(good), "no error");
  auto r = good;
  r["pipeline"] = 7;
  EXPECT_EQ(error_of(r), "soak receipt: result #1: 'pipeline' must be a string");
  r = good;
  r.erase("counters");
  EXPECT_EQ(error_of(r), "soak receipt: result #1: 'counters' must be an object");
  r = good;
  r["counters"].erase("dropped");
  EXPECT_EQ(error_of(r), "soak receipt: result #1: counters: 'dropped' must be a number");
  r = good;
  r.erase("p99_drift");
  EXPECT_THAT(error_of(r), HasSubstr("'p99_drift' must be present"));
  r = good;
  r["minutes"][0]["minute"] = "one";
  EXPECT_EQ(error_of(r),
            "soak receipt: result #1: minutes[]: 'minute' must be a whole number in an object");
  r = good;
  r["minutes"][0]["judged"] = "yes";
  EXPECT_THAT(error_of(r), HasSubstr("'judged' must be true or false"));
  r = good;
  r["minutes"][0]["p99_us"] = "fast";
  EXPECT_THAT(error_of(r), HasSubstr("'p99_us' must be a number"));
  r = good;
  r["beside_camera"]["gap_to_next_arrival"]["slow"] = {"a"};
  EXPECT_THAT(error_of(r), HasSubstr("gap_to_next_arrival: 'slow' must be an array of numbers"));
  r = good;
  r["beside_camera"]["slow"] = "many";
  EXPECT_THAT(error_of(r), HasSubstr("beside_camera: 'slow' must be a number"));
  r = good;
  r["sensor"] = {{"late_releases", "some"}};
  EXPECT_THAT(error_of(r), HasSubstr("sensor: 'late_releases' must be a number"));
  r["sensor"] = 3;
  EXPECT_THAT(error_of(r), HasSubstr("'sensor' must be an object"));
  const nlohmann::json judgments = {{"judgments", {{{"ok", "yes"}, {"check", "x"}, {"value", 0}}}}};
  EXPECT_THAT(error_of(judgments), HasSubstr("judgments[]: 'ok' must be true or false"));
}

TEST(soak_minutes, a_week_of_samples_keeps_one_minute_of_them) {
  // 7 days at 2 kHz in a folder reserved for one minute of 2 kHz and a week of summaries: the
  // process does not grow while it folds 1.2 billion samples' worth (here one in 1,000 of them,
  // spread over the same week, to keep the test short).
  constexpr std::size_t minutes = 7 * 24 * 60;
  minute_folder f(120, minutes);
  const std::uint64_t before = resident_set_bytes();
  for (std::size_t m = 0; m < minutes; ++m) {
    for (int i = 0; i < 120; ++i) f.add({m * 60.0 + i * 0.5, 10.0 + (i % 7)});
  }
  EXPECT_LE(resident_set_bytes(), before + (1 << 20));
  const auto s = f.summaries();
  ASSERT_EQ(s.size(), minutes);
  EXPECT_EQ(s.back().minute, static_cast<int>(minutes) - 1);
  EXPECT_EQ(s.back().n, 120U);
  EXPECT_DOUBLE_EQ(s.back().max_us, 16.0);
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

TEST(soak_minutes, a_minute_is_judged_after_warm_up_and_when_the_run_filled_it) {
  const auto minute = [](int i) { return minute_summary{i, 100, 5, 10, 10}; };
  EXPECT_FALSE(minute_judged(minute(0), 20.0, 490.0)) << "minute 0 starts inside the warm-up";
  EXPECT_TRUE(minute_judged(minute(0), 0.0, 490.0));
  EXPECT_TRUE(minute_judged(minute(1), 20.0, 490.0));
  EXPECT_TRUE(minute_judged(minute(7), 20.0, 490.0)) << "420-480 s lies inside 490 s";
  EXPECT_FALSE(minute_judged(minute(8), 20.0, 490.0)) << "480-540 s: the run ended at 490 s";
  EXPECT_TRUE(minute_judged(minute(8), 20.0, 540.0));
}

telemetry_entry processed(std::uint64_t seq, std::uint64_t repeat = 0) {
  return telemetry_entry{seq, repeat, {}};
}

TEST(soak_predecessors, each_frame_knows_the_frame_processed_before_it) {
  predecessor_ring ring(16);
  EXPECT_FALSE(ring.before(1)) << "nothing has come in";
  const std::vector<telemetry_entry> first{processed(1), processed(2), processed(3)};
  ring.add(first);
  EXPECT_EQ(ring.before(1), 0U) << "the first frame processed has none";
  EXPECT_EQ(ring.before(2), 1U);
  EXPECT_EQ(ring.before(3), 2U);
  EXPECT_FALSE(ring.before(4)) << "not processed yet";
  // Frame 4 dropped, 5 processed after 3; 5 processed again (a repeat carries its own gains).
  const std::vector<telemetry_entry> second{processed(5), processed(5, 1), processed(6)};
  ring.add(second);
  EXPECT_FALSE(ring.before(4));
  EXPECT_EQ(ring.before(5), 5U) << "its latest processing was a repeat";
  EXPECT_EQ(ring.before(6), 5U);
}

TEST(soak_predecessors, a_slot_the_ring_moved_past_answers_nothing) {
  predecessor_ring ring(4);
  std::vector<telemetry_entry> batch;
  for (std::uint64_t f = 1; f <= 9; ++f) batch.push_back(processed(f));
  ring.add(batch);
  EXPECT_FALSE(ring.before(5)) << "slot 1 now holds frame 9";
  EXPECT_EQ(ring.before(9), 8U);
  EXPECT_EQ(ring.before(6), 5U);
  EXPECT_FALSE(ring.before(0));
  EXPECT_FALSE(ring.before(std::uint64_t{1} << 32)) << "beyond what a slot's word holds";
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
  const auto first = in_loop_latency(entry(101, 0, 1000, 4500), 100, 2000.0);
  ASSERT_TRUE(first) << "3.5 us, the 1st sample after base 100";
  EXPECT_DOUBLE_EQ(first->t_s, 1.0 / 2000.0);
  EXPECT_DOUBLE_EQ(first->us, 3.5);
  EXPECT_FALSE(in_loop_latency(entry(101, 1, 2000, 9000), 100, 2000.0)) << "a repeat";
  EXPECT_FALSE(in_loop_latency(entry(100, 0, 1000, 2000), 100, 2000.0)) << "before the base";
  EXPECT_FALSE(in_loop_latency(entry(4101, 0, 0, 5000), 100, 2000.0)) << "no sighting stamp";
  EXPECT_FALSE(in_loop_latency(entry(4101, 0, 7000, 6000), 100, 2000.0))
      << "commit before sighting: not a response";
  const auto later = in_loop_latency(entry(4102, 0, 10000, 12250), 100, 2000.0);
  ASSERT_TRUE(later) << "2.25 us, the 4002nd sample: 2.001 s at 2 kHz";
  EXPECT_DOUBLE_EQ(later->t_s, 4002.0 / 2000.0);
  EXPECT_DOUBLE_EQ(later->us, 2.25);
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
  s.minutes = 7 * 24 * 60.0;  // a week: the summaries are folded as the run goes
  EXPECT_NO_THROW(s.validate());
  s.minutes = soak_settings::max_minutes + 1;
  EXPECT_THAT([&] { s.validate(); }, ::testing::ThrowsMessage<std::invalid_argument>(
                                         HasSubstr("--minutes must be 0.05 to 44640")));
  s = {};
  s.mailbox_rate_hz = 100'001.0;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s = {};
  s.warmup_s = 1e9;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s = {};
  s.mailbox_telemetry_age_ms = 60001;
  EXPECT_THAT([&] { s.validate(); }, ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr(
                                         "--mailbox-telemetry-age-ms must be 0 to 60000")));
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
