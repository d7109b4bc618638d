// The soak's health lines read back without the receipt (resident report health.jsonl): a run
// still going, or one that died before it wrote its receipt.

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/soak/soak_health.hpp"
#include "commands/report.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::bench {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

/// A folder of its own per test, removed at the end.
class health_files : public ::testing::Test {
 protected:
  void SetUp() override {
    _dir = std::filesystem::temp_directory_path() /
           ("resident-health-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(_dir);
  }
  void TearDown() override { std::filesystem::remove_all(_dir); }

  /// Writes `lines` (one JSON object a line) and `tail` verbatim after them.
  std::string write(const std::vector<json>& lines, const std::string& tail = {}) {
    const auto path = (_dir / "health.jsonl").string();
    std::ofstream f(path);
    for (const auto& l : lines) f << l.dump() << '\n';
    f << tail;
    return path;
  }
  std::filesystem::path _dir;
};

json counters(std::uint64_t processed, std::uint64_t dropped, std::uint64_t unaccounted = 0) {
  return {{"processed", processed},
          {"dropped", dropped},
          {"unaccounted", unaccounted},
          {"last_seq", processed + dropped + unaccounted},
          {"deadline_misses", 0},
          {"max_response_us", 30.5},
          {"repeated", 0},
          {"start_seq", 0},
          {"iterations", processed * 3},
          {"arrival_deadline_misses", 0},
          {"max_arrival_response_us", 0.0},
          {"worst_overrun_us", 0.0}};
}

json minute(int m, double p99) {
  return {{"minute", m},   {"n", 120000},     {"p50_us", 15.0}, {"p90_us", 16.0},
          {"p99_us", p99}, {"p999_us", 21.0}, {"max_us", 50.0}, {"tail_share", 0.001}};
}

/// A steady run as bench soak writes it: a line every 10 s for `n` lines, the mailbox at 2 kHz
/// and the camera at 60 Hz, nothing dropped, memory flat, the latest minute's p99 17 us.
std::vector<json> steady(int n) {
  std::vector<json> lines;
  for (int i = 1; i <= n; ++i) {
    const double t = 10.0 * i;
    const int closed = static_cast<int>(t / 60) - 1;
    const json latest = closed < 0 ? json{{"mailbox", nullptr}, {"camera", nullptr}}
                                   : json{{"mailbox", minute(closed, 17.0)},
                                          {"mailbox_host", minute(closed, 30.0 + closed)},
                                          {"camera", minute(closed, 55.0)}};
    lines.push_back(
        {{"t_s", t},
         {"warmup_s", 20.0},
         {"mailbox", counters(20000ULL * i, 0)},
         {"camera", counters(600ULL * i, 0)},
         {"mailbox_checked", 20000ULL * i},
         {"mailbox_mismatches", 0},
         {"mailbox_sensor", {{"late_over_us", 100.0}, {"late_releases", 0}, {"max_late_us", 20.0}}},
         {"camera_screens", {{"checked", 20 * i}, {"mismatches", 0}, {"busy", 0}}},
         {"latest_minute", latest},
         {"rss_bytes", 800 << 20},
         {"free_device_bytes", 140LL << 30}});
  }
  return lines;
}

std::vector<std::string> failed_checks(const json& summary) {
  std::vector<std::string> out;
  for (const auto& j : summary["judgments"]) {
    if (!j["ok"].get<bool>()) out.push_back(j["check"].get<std::string>());
  }
  return out;
}

TEST_F(health_files, a_steady_run_is_summarized_and_every_check_holds) {
  const std::string path = write(steady(30));
  ASSERT_TRUE(is_health_log(path));
  const health_log log = read_health_log(path);
  ASSERT_EQ(log.points.size(), 30U);
  EXPECT_EQ(log.loops, (std::vector<std::string>{"camera", "mailbox"}));
  const json s = health_summary(log);
  EXPECT_DOUBLE_EQ(s["interval_s"].get<double>(), 10.0);
  EXPECT_EQ(s["loops"]["mailbox"]["processed"], 600000U);
  EXPECT_EQ(s["loops"]["camera"]["processed"], 18000U);
  EXPECT_TRUE(s["gaps"].empty());
  EXPECT_EQ(s["memory"]["from_s"], 20.0);
  EXPECT_EQ(s["memory"]["rss_growth_bytes"], 0);
  EXPECT_EQ(s["latency"]["mailbox"]["first_minute"], 0);
  EXPECT_EQ(s["latency"]["mailbox"]["last_minute"], 4) << "minute 4 closed at 300 s, the last line";
  EXPECT_DOUBLE_EQ(s["latency"]["mailbox"]["p99_drift"].get<double>(), 0.0);
  EXPECT_EQ(failed_checks(s), std::vector<std::string>{}) << s.dump(2);
  const std::string text = health_report_text(log);
  EXPECT_THAT(text, HasSubstr("30 lines, t 10.0-300.0 s, one every 10.0 s")) << text;
  EXPECT_THAT(text, HasSubstr("mailbox: processed 600000, dropped 0, unaccounted 0")) << text;
  EXPECT_THAT(text, HasSubstr("600000 outputs checked, 0 wrong; 600 screens checked")) << text;
  EXPECT_THAT(text, Not(HasSubstr("MISS"))) << text;
}

TEST_F(health_files, a_loop_that_stopped_processing_is_named_with_the_windows) {
  auto lines = steady(12);
  for (std::size_t i = 6; i < lines.size(); ++i) lines[i]["mailbox"] = counters(20000ULL * 6, 0);
  const json s = health_summary(read_health_log(write(lines)));
  const json& stalls = s["loops"]["mailbox"]["stalls"];
  ASSERT_EQ(stalls.size(), 1U) << stalls.dump();
  EXPECT_EQ(stalls[0]["from_s"], 60.0);
  EXPECT_EQ(stalls[0]["to_s"], 120.0);
  EXPECT_TRUE(s["loops"]["camera"]["stalls"].empty());
  EXPECT_EQ(failed_checks(s),
            std::vector<std::string>{"every loop processed samples in every window"});
  const std::string text = health_report_text(read_health_log(write(lines)));
  EXPECT_THAT(text, HasSubstr("mailbox: processed 120000")) << text;
  EXPECT_THAT(text, HasSubstr("processed nothing in 60.0-120.0 s")) << text;
}

TEST_F(health_files, a_loop_slower_than_the_lines_is_not_stalled_between_its_samples) {
  auto lines = steady(40);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i]["camera"] = counters(i / 2, 0);  // a frame every 20 s, lines every 10 s
  }
  const json s = health_summary(read_health_log(write(lines)));
  EXPECT_TRUE(s["loops"]["camera"]["stalls"].empty()) << s["loops"]["camera"].dump();
  lines.resize(20);
  for (std::size_t i = 12; i < lines.size(); ++i) lines[i]["camera"] = counters(110, 0);
  for (std::size_t i = 0; i < 12; ++i) lines[i]["camera"] = counters(10 * i, 0);
  const json stalled = health_summary(read_health_log(write(lines)));
  ASSERT_EQ(stalled["loops"]["camera"]["stalls"].size(), 1U) << stalled["loops"]["camera"].dump();
  EXPECT_EQ(stalled["loops"]["camera"]["stalls"][0]["from_s"], 120.0);
  EXPECT_EQ(stalled["loops"]["camera"]["stalls"][0]["to_s"], 200.0);
}

TEST_F(health_files, unaccounted_samples_wrong_outputs_and_counters_going_back_are_reported) {
  auto lines = steady(8);
  lines[3]["camera"] = counters(600ULL * 4, 0, 2);  // two frames unaccounted at t = 40 s
  lines[5]["mailbox_mismatches"] = 1;
  lines[6]["mailbox_mismatches"] = 1;
  lines[7]["mailbox_mismatches"] = 1;
  lines[7]["camera_screens"]["mismatches"] = 2;
  lines[7]["mailbox"] = counters(20000ULL * 5, 0);  // went back from 140000 to 100000
  const json s = health_summary(read_health_log(write(lines)));
  EXPECT_EQ(s["loops"]["camera"]["unaccounted_lines"], 1U);
  EXPECT_EQ(s["loops"]["camera"]["first_unaccounted_s"], 40.0);
  ASSERT_EQ(s["loops"]["mailbox"]["went_back"].size(), 1U);
  EXPECT_EQ(s["loops"]["mailbox"]["went_back"][0]["from_s"], 70.0);
  EXPECT_EQ(s["checks"]["output_mismatches"], 1U);
  EXPECT_EQ(s["checks"]["screen_mismatches"], 2U);
  EXPECT_EQ(failed_checks(s),
            (std::vector<std::string>{
                "every line accounts for every sample", "no wrong output and no screen mismatch",
                "every loop processed samples in every window", "counters never went back"}))
      << "a mailbox count that went back is also a window without progress";
  const std::string text = health_report_text(read_health_log(write(lines)));
  EXPECT_THAT(text, HasSubstr("samples unaccounted in 1 lines, first at 40.0 s")) << text;
  EXPECT_THAT(text, HasSubstr("counters went back in 70.0-80.0 s")) << text;
}

TEST_F(health_files, drop_windows_are_ranked_and_matched_with_the_sensor_threads_late_releases) {
  auto lines = steady(10);
  // Drops in three windows: 5 at 20-30 s, 400 at 50-60 s, 30 at 80-90 s; the sensor thread was
  // late (releases > 100 us late) in the 50-60 s window only.
  std::uint64_t dropped = 0;
  std::int64_t late = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const double t = lines[i]["t_s"].get<double>();
    if (t == 30.0) dropped += 5;
    if (t == 60.0) {
      dropped += 400;
      late += 7;
    }
    if (t == 90.0) dropped += 30;
    lines[i]["mailbox"] = counters(20000ULL * (i + 1) - dropped, dropped);
    lines[i]["mailbox_sensor"]["late_releases"] = late;
  }
  const json s = health_summary(read_health_log(write(lines)));
  const json& m = s["loops"]["mailbox"];
  EXPECT_EQ(m["drop_windows"], 3U);
  EXPECT_EQ(m["dropped"], 435U);
  ASSERT_EQ(m["largest_drops"].size(), 3U);
  EXPECT_EQ(m["largest_drops"][0]["dropped"], 400U);
  EXPECT_EQ(m["largest_drops"][0]["from_s"], 50.0);
  EXPECT_EQ(m["largest_drops"][1]["dropped"], 30U);
  EXPECT_EQ(m["largest_drops"][2]["dropped"], 5U);
  EXPECT_EQ(m["drop_windows_with_late_sensor"], 1U);
  EXPECT_EQ(s["sensor_late_releases"], 7);
  EXPECT_FALSE(s["loops"]["camera"].contains("drop_windows_with_late_sensor"))
      << "the sensor thread is the mailbox's";
  const std::string text = health_report_text(read_health_log(write(lines)));
  EXPECT_THAT(text, HasSubstr("drops in 3 of 9 windows; largest: 400 in 50.0-60.0 s, 30 in "
                              "80.0-90.0 s, 5 in 20.0-30.0 s; the sensor thread released late "
                              "in 1 of the windows with drops"))
      << text;
}

TEST_F(health_files, gaps_memory_growth_and_drift_are_judged_after_the_lines_own_warm_up) {
  auto lines = steady(40);
  lines.erase(lines.begin() + 20, lines.begin() + 23);  // nothing between 200 and 240 s
  for (auto& l : lines) {
    l["warmup_s"] = 35.0;
    const double t = l["t_s"].get<double>();
    if (t >= 300) l["rss_bytes"] = (800 << 20) + (3 << 20);  // +3 MiB late in the run
    if (t == 30.0) l["rss_bytes"] = 10;                      // before the warm-up: not counted
    if (t >= 370 && l["latest_minute"]["mailbox"].is_object()) {
      l["latest_minute"]["mailbox"]["p99_us"] = 19.0;  // minute 5: +11.8%
    }
  }
  const json s = health_summary(read_health_log(write(lines)));
  ASSERT_EQ(s["gaps"].size(), 1U);
  EXPECT_EQ(s["gaps"][0]["from_s"], 200.0);
  EXPECT_EQ(s["gaps"][0]["to_s"], 240.0);
  EXPECT_EQ(s["memory"]["from_s"], 40.0) << "the first line at or after the lines' 35 s warm-up";
  EXPECT_EQ(s["memory"]["rss_growth_bytes"], 3 << 20);
  EXPECT_NEAR(s["latency"]["mailbox"]["p99_drift"].get<double>(), 2.0 / 17.0, 1e-12);
  EXPECT_EQ(failed_checks(s),
            (std::vector<std::string>{"no gap longer than 2.5 intervals between lines",
                                      "host RSS grows <= 1 MiB after warm-up",
                                      "mailbox per-minute p99 drifts <= 5%"}));
  const std::string text = health_report_text(read_health_log(write(lines)));
  EXPECT_THAT(text, HasSubstr("no line in 200.0-240.0 s")) << text;
  EXPECT_THAT(text, HasSubstr("host RSS +3 MiB")) << text;
}

TEST_F(health_files, the_host_views_drift_is_reported_and_not_judged) {
  const json s = health_summary(read_health_log(write(steady(42))));  // minutes 0..5 closed
  const double host = s["latency"]["mailbox_host"]["p99_drift"].get<double>();
  EXPECT_NEAR(host, (36.0 - 31.0) / 31.0, 1e-12) << "whole minutes 1..6 after the warm-up";
  for (const auto& j : s["judgments"]) {
    EXPECT_THAT(j["check"].get<std::string>(), Not(HasSubstr("mailbox_host")));
  }
}

TEST_F(health_files, a_cut_last_line_is_left_out_and_a_cut_line_before_others_is_refused) {
  const std::string cut = R"({"t_s": 40.0, "mailbox": {"processed": 8)";
  const health_log log = read_health_log(write(steady(3), cut));
  EXPECT_TRUE(log.torn_last_line);
  EXPECT_EQ(log.points.size(), 3U);
  EXPECT_THAT(health_report_text(log), HasSubstr("the last line was cut short and is left out"));
  const auto lines = steady(4);
  const std::string path = write({lines[0], lines[1]}, cut + "\n" + lines[3].dump() + "\n");
  try {
    (void)read_health_log(path);
    ADD_FAILURE() << "a cut line with a line after it was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ":3: not valid JSON"));
  }
}

TEST_F(health_files, lines_that_are_not_health_lines_are_refused_by_line_and_field) {
  const auto refused = [&](std::vector<json> lines, const std::string& what) {
    try {
      (void)read_health_log(write(lines));
      ADD_FAILURE() << "accepted: " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr(what));
    }
  };
  auto back = steady(3);
  back[2]["t_s"] = 15.0;
  refused(back, ":3: 't_s' 15.0 is not after the line before's");
  auto fewer = steady(3);
  fewer[1].erase("camera");
  refused(fewer, ":2: its loops differ from the first line's");
  auto negative = steady(3);
  negative[2]["mailbox"]["dropped"] = -4;
  refused(negative, ":3: 'mailbox.dropped' must be a whole number");
  auto array = steady(2);
  array.push_back(json::array({1, 2}));
  refused(array, ":3: not a health line");
  EXPECT_THROW((void)read_health_log(write({})), std::invalid_argument) << "an empty file";
  EXPECT_THROW((void)read_health_log((_dir / "missing.jsonl").string()), std::invalid_argument);
}

TEST_F(health_files, a_receipt_is_not_taken_for_health_lines) {
  measure::receipt rc("soak", "resident bench soak");
  rc.results.push_back({{"judgments", json::array()}});
  const auto pretty = (_dir / "soak.json").string();
  rc.write(pretty);
  EXPECT_FALSE(is_health_log(pretty));
  const auto one_line = (_dir / "one-line.json").string();
  std::ofstream(one_line) << json{{"benchmark", "soak"}, {"results", json::array()}}.dump() << "\n";
  EXPECT_FALSE(is_health_log(one_line));
  EXPECT_FALSE(is_health_log((_dir / "missing.jsonl").string()));
}

TEST_F(health_files, resident_report_reads_health_lines_alone_with_a_page_of_charts) {
  cli::report_settings s;
  s.receipts = {write(steady(12))};
  s.html = (_dir / "health.html").string();
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(cli::run_report(s), 0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_THAT(out, HasSubstr("health lines: ")) << out;
  EXPECT_THAT(out, HasSubstr("ok    every loop processed samples in every window")) << out;
  std::ifstream page(s.html);
  const std::string html{std::istreambuf_iterator<char>(page), {}};
  EXPECT_THAT(html, HasSubstr("mailbox: samples processed per second"));
  EXPECT_THAT(html, HasSubstr("camera: samples dropped per window"));
  EXPECT_THAT(html, HasSubstr("host RSS"));
  EXPECT_THAT(html, HasSubstr("mailbox: p99 of each whole minute"));

  measure::receipt rc("soak", "resident bench soak");
  rc.results.push_back({{"judgments", json::array()}});
  rc.write((_dir / "soak.json").string());
  cli::report_settings mixed;
  mixed.receipts = {(_dir / "soak.json").string(), s.receipts.front()};
  EXPECT_THROW((void)cli::run_report(mixed), std::invalid_argument);
  cli::report_settings merge;
  merge.receipts = s.receipts;
  merge.merged = (_dir / "merged.json").string();
  EXPECT_THROW((void)cli::run_report(merge), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(merge.merged));
}

}  // namespace
}  // namespace resident::bench
