// resident bench camera without a GPU: its flags and settings, the configurations it runs, the
// results and targets it builds from measured runs (synthetic here), and its reports.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/camera/camera_bench.hpp"
#include "bench/camera/camera_report.hpp"
#include "bench/camera/camera_stages.hpp"
#include "bench/camera/camera_statistics.hpp"
#include "commands/bench_camera.hpp"

namespace resident::bench {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string error_of(const camera_bench_settings& s) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

int runs_of(const std::vector<camera_case>& cases, const std::string& workload,
            const std::string& mode) {
  for (const auto& c : cases) {
    if (c.workload() == workload && c.mode == mode) return c.runs;
  }
  return 0;
}

// ---- settings and configurations ---------------------------------------------------------------

TEST(camera_bench_settings, defaults_cover_the_full_matrix_and_repeat_the_target_configurations) {
  const camera_bench_settings s;
  EXPECT_EQ(error_of(s), "");
  const auto quiet = software_cases(s, "none");
  EXPECT_EQ(quiet.size(), 2U * 2U * 4U);  // resolutions x formats x modes
  EXPECT_EQ(runs_of(quiet, "1080p raw12", "while"), 3);
  EXPECT_EQ(runs_of(quiet, "1080p raw12", "tail"), 3);
  EXPECT_EQ(runs_of(quiet, "1080p raw12", "host-graph"), 1);
  EXPECT_EQ(runs_of(quiet, "1080p raw10", "while"), 1);
  EXPECT_EQ(runs_of(quiet, "4k raw12", "while"), 1);
  EXPECT_EQ(runs_of(software_cases(s, "stress"), "1080p raw12", "tail"), 3);
}

TEST(camera_bench_settings, fused_pipelines_run_beside_the_unfused_ones_but_not_cpu_hostmem) {
  camera_bench_settings s;
  s.pipelines = {"unfused", "fused"};
  s.modes = {"cpu-hostmem", "while", "persistent"};
  s.resolutions = {"1080p"};
  s.formats = {"raw12"};
  EXPECT_EQ(error_of(s), "");
  const auto cases = software_cases(s, "none");
  ASSERT_EQ(cases.size(), 3U + 2U);
  EXPECT_EQ(runs_of(cases, "1080p raw12 fused", "while"), 3);
  EXPECT_EQ(runs_of(cases, "1080p raw12 fused", "persistent"), 3);
  EXPECT_EQ(runs_of(cases, "1080p raw12 fused", "cpu-hostmem"), 0);
  EXPECT_EQ(camera_settings_for(cases.back(), s).isp, "fused");
  EXPECT_EQ(camera_settings_for(cases.front(), s).isp, "unfused");
  s.pipelines = {"fast"};
  EXPECT_THAT(error_of(s), ::testing::HasSubstr("--pipelines"));
}

TEST(camera_bench_settings, photon_cases_put_front_buffer_beside_flip_for_gpu_resident_modes) {
  const camera_bench_settings s;
  const auto quiet = photon_cases(s, "none");
  EXPECT_EQ(quiet.size(), 4U + 2U + 4U);  // vrr240 flip, front (while, tail), fixed 60 Hz
  EXPECT_EQ(runs_of(quiet, "photon vrr240-flip", "while"), 3);
  EXPECT_EQ(runs_of(quiet, "photon vrr240-flip", "host-graph"), 1);
  EXPECT_EQ(runs_of(quiet, "photon vrr240-front", "tail"), 1);
  EXPECT_EQ(runs_of(quiet, "photon vrr240-front", "host-graph"), 0);
  EXPECT_EQ(runs_of(quiet, "photon fixed60-flip", "cpu-hostmem"), 1);
  const auto stress = photon_cases(s, "stress");
  EXPECT_EQ(stress.size(), 4U + 2U);  // the fixed display's quantization is shown quiet only
  for (const auto& c : stress) EXPECT_EQ(c.resolution + " " + c.format, "1080p raw12");
}

TEST(camera_bench_settings, quick_runs_1080p_and_4k_raw12_quiet_once_each) {
  camera_bench_settings s;
  s.make_quick();
  EXPECT_EQ(error_of(s), "");
  EXPECT_EQ(s.frames, 1000);
  EXPECT_EQ(s.contention, std::vector<std::string>{"none"});
  const auto cases = software_cases(s, "none");
  ASSERT_EQ(cases.size(), 8U);
  for (const auto& c : cases) {
    EXPECT_EQ(c.format, "raw12");
    EXPECT_EQ(c.runs, 1);
  }
  EXPECT_DOUBLE_EQ(s.photon_seconds, 3.0);
}

TEST(camera_bench_settings, bad_values_are_named) {
  camera_bench_settings s;
  s.resolutions = {"1080p", "8k"};
  EXPECT_THAT(error_of(s), HasSubstr("--resolutions: unknown resolution '8k'; known: 1080p, 4k"));
  s = {};
  s.formats = {"raw12", "raw12"};
  EXPECT_THAT(error_of(s), HasSubstr("--formats: 'raw12' given twice"));
  s = {};
  s.modes = {"while", "warp"};
  EXPECT_THAT(error_of(s), HasSubstr("--modes: camera mode 'warp' is not one of cpu-hostmem"));
  s = {};
  s.parts.clear();
  EXPECT_THAT(error_of(s), HasSubstr("--parts: name at least one part"));
  s = {};
  s.displays = {"oled"};
  EXPECT_THAT(error_of(s), HasSubstr("--displays: unknown display 'oled'"));
  s = {};
  s.repeats = 0;
  EXPECT_THAT(error_of(s), HasSubstr("--repeats must be in 1..15"));
  s = {};
  s.photon_seconds = 0.5;
  EXPECT_THAT(error_of(s), HasSubstr("--photon-seconds"));
  s = {};
  s.sensor_cpu = 3;
  s.loop_cpu = 3;
  EXPECT_THAT(error_of(s), HasSubstr("--sensor-cpu and --loop-cpu must differ"));
}

TEST(camera_settings_for, sets_the_sensor_and_display_of_each_case) {
  const camera_bench_settings s;
  const camera_case software{"software", "4k", "raw10", "none", "while", "vrr240-flip", 1};
  const auto a = camera_settings_for(software, s);
  EXPECT_EQ(a.sensor.width, 3840U);
  EXPECT_EQ(a.sensor.height, 2160U);
  EXPECT_EQ(a.sensor.format, io::csi2::raw_format::raw10);
  EXPECT_EQ(a.sensor.black_level, 64);  // 256 at 12 bits
  EXPECT_DOUBLE_EQ(a.sensor.rate_hz, 2000.0);
  EXPECT_EQ(a.demosaic, "malvar");
  const camera_case front{"photon", "1080p", "raw12", "none", "tail", "vrr240-front", 1};
  const auto b = camera_settings_for(front, s);
  EXPECT_DOUBLE_EQ(b.sensor.rate_hz, 60.0);
  EXPECT_EQ(b.sensor.distinct_frames, 4U);
  EXPECT_EQ(b.sensor.black_level, 256);
  EXPECT_EQ(b.display.mode, io::present_mode::front_buffer);
  EXPECT_EQ(b.display.sync, io::display_sync::variable);
  EXPECT_DOUBLE_EQ(b.display.refresh_hz, 240.0);
  const camera_case fixed{"photon", "1080p", "raw12", "none", "while", "fixed60-flip", 1};
  const auto c = camera_settings_for(fixed, s);
  EXPECT_EQ(c.display.sync, io::display_sync::fixed);
  EXPECT_DOUBLE_EQ(c.display.refresh_hz, 60.0);
  EXPECT_EQ(c.display.mode, io::present_mode::flip);
}

// ---- the command line ----------------------------------------------------------------------

std::string parse_error(CLI::App& app, const std::string& line) {
  try {
    app.parse(line);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return {};
}

TEST(bench_camera_cli, quick_keeps_numbers_and_lists_given_on_the_command_line) {
  CLI::App root;
  cli::bench_camera_command_settings s;
  add_bench_camera_options(root, s);
  EXPECT_EQ(parse_error(root, "camera --quick --frames 5000 --modes while,tail"), "");
  const camera_bench_settings r = s.resolve();
  EXPECT_EQ(r.frames, 5000);
  EXPECT_EQ(r.warmup, 100);
  EXPECT_EQ(r.formats, std::vector<std::string>{"raw12"});
  EXPECT_EQ(r.modes, (std::vector<std::string>{"while", "tail"}));
  EXPECT_TRUE(r.realtime);
}

TEST(bench_camera_cli, refuses_bad_values_at_the_flag_or_when_resolved) {
  CLI::App root;
  cli::bench_camera_command_settings s;
  add_bench_camera_options(root, s);
  EXPECT_THAT(parse_error(root, "camera --repeats 0"), HasSubstr("--repeats"));
  EXPECT_THAT(parse_error(root, "camera --rate -1"), HasSubstr("--rate"));
  CLI::App again;
  cli::bench_camera_command_settings t;
  add_bench_camera_options(again, t);
  EXPECT_EQ(parse_error(again, "camera --resolutions 1080p,8k --no-fifo"), "");
  EXPECT_THROW((void)t.resolve(), std::invalid_argument);
}

TEST(bench_camera_cli, the_report_goes_beside_the_receipt_unless_it_names_a_folder) {
  cli::bench_camera_command_settings s;
  EXPECT_EQ(s.report_path(), std::filesystem::path("bench-out/camera-report.html"));
  s.out = "/tmp/run/camera.json";
  s.report = "r.html";
  EXPECT_EQ(s.report_path(), std::filesystem::path("/tmp/run/r.html"));
  s.report = "elsewhere/r.html";
  EXPECT_EQ(s.report_path(), std::filesystem::path("elsewhere/r.html"));
}

// ---- results from measured runs -------------------------------------------------------------

/// A run of `n` samples: base + a ramp 0..jitter, frames numbered from 1.
camera_run synthetic_run(std::size_t n, double base, double jitter) {
  camera_run r;
  for (std::size_t i = 0; i < n; ++i) {
    r.us.push_back(base + jitter * static_cast<double>(i) / static_cast<double>(n - 1));
    r.t_s.push_back(static_cast<double>(i) / 2000.0);
  }
  r.requested = n;
  r.produced = n + 5;
  r.processed = n;
  r.dropped = 5;
  r.written = n;
  r.displayed = n / 8;
  return r;
}

json software(const std::string& workload, const std::string& contention, const std::string& mode,
              std::vector<camera_run> runs) {
  const auto space = workload.find(' ');
  const camera_case c{
      "software",    workload.substr(0, space),    workload.substr(space + 1), contention, mode,
      "vrr240-flip", static_cast<int>(runs.size())};
  return case_result(c, runs);
}

json photon(const std::string& contention, const std::string& mode, double base, double jitter) {
  const camera_case c{"photon", "1080p", "raw12", contention, mode, "vrr240-flip", 1};
  return case_result(c, {synthetic_run(150, base, jitter)});
}

TEST(measured_run, drops_the_warmup_dates_samples_by_frame_and_checks_the_accounting) {
  camera::camera_result r;
  r.counters.start_seq = 10;
  r.counters.last_seq = 20;
  r.counters.processed = 8;
  r.counters.dropped = 2;
  r.display.frames_written = 8;
  r.software_us = {90, 80, 30, 31, 32};
  r.software_frames = {11, 12, 14, 17, 21};
  const camera_case c{"software", "1080p", "raw12", "none", "while", "vrr240-flip", 1};
  const camera_run run = measured_run(r, c, 2, 2000.0, 3);
  EXPECT_EQ(run.us, (std::vector<double>{30, 31, 32}));
  EXPECT_EQ(run.t_s, (std::vector<double>{3 / 2000.0, 6 / 2000.0, 10 / 2000.0}));
  EXPECT_EQ(run.error, "");
  r.counters.dropped = 1;  // a frame neither processed nor dropped
  r.display.corrupt_frames = 1;
  r.display.rewritten_frames = 1;
  const camera_run bad = measured_run(r, c, 2, 2000.0, 3);
  EXPECT_EQ(bad.corrupt, 1U);
  EXPECT_EQ(bad.rewritten, 1U);
  EXPECT_EQ(case_result(c, {bad})["rewritten"], 1) << "the count reaches the result";
  EXPECT_THAT(bad.error,
              HasSubstr("frame accounting does not add up: 8 processed + 1 dropped of 10"));
  EXPECT_THAT(bad.error, HasSubstr("8 frames processed but 8 written and 1 refused"));
}

TEST(case_result, takes_each_statistic_as_the_median_of_the_runs_and_plots_the_median_run) {
  const json r = software(
      "1080p raw12", "none", "while",
      {synthetic_run(1000, 30, 4), synthetic_run(1000, 31, 6), synthetic_run(1000, 29, 5)});
  EXPECT_EQ(r["kind"], "software");
  EXPECT_EQ(r["workload"], "1080p raw12");
  EXPECT_EQ(r["width"], 1920);
  EXPECT_DOUBLE_EQ(r["jitter_us"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(r["min_us"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(r["mean_us"].get<double>(), 32.0);  // means 32, 34, 31.5
  EXPECT_EQ(r["runs"].size(), 3U);
  EXPECT_EQ(r["runs"][1]["jitter_us"], 6.0);
  EXPECT_EQ(r["plotted_run"], 3);
  EXPECT_EQ(r["processed"], 3000);
  EXPECT_EQ(r["dropped"], 15);
  EXPECT_EQ(r["produced"], 3015);
  EXPECT_EQ(r["series"]["t"].size(), 200U);
  EXPECT_EQ(r["histogram"]["counts"].size(), 60U);
  EXPECT_TRUE(r["errors"].empty());
  EXPECT_THAT(r["aggregate"].get<std::string>(), HasSubstr("median over 3 runs"));
}

TEST(case_result, a_run_without_samples_is_an_error_not_a_statistic) {
  camera_run empty;
  empty.error = "the loop did not stop";
  const json r = software("4k raw10", "stress", "host-graph", {empty});
  EXPECT_FALSE(r.contains("mean_us"));
  EXPECT_EQ(r["errors"].size(), 1U);
  measure::receipt rc("camera", "resident bench camera");
  rc.results.push_back(r);
  const auto failures = camera_failures(rc);
  ASSERT_EQ(failures.size(), 1U);
  EXPECT_THAT(failures[0], HasSubstr("software 4k raw10 / stress / host-graph: run 1: the loop"));
}

TEST(case_result, photon_results_carry_every_sample) {
  const json r = photon("none", "while", 9000, 600);
  EXPECT_EQ(r["kind"], "photon");
  EXPECT_EQ(r["workload"], "photon vrr240-flip");
  EXPECT_EQ(r["points"]["us"].size(), 150U);
  EXPECT_FALSE(r.contains("series"));
}

// ---- targets ---------------------------------------------------------------------------------

const json* target(const camera_verdicts& v, const std::string& start) {
  for (const auto& t : v.targets) {
    if (t["name"].get<std::string>().rfind(start, 0) == 0) return &t;
  }
  return nullptr;
}

bool not_judged(const camera_verdicts& v, const std::string& start) {
  return std::any_of(v.not_judged.begin(), v.not_judged.end(), [&](const json& t) {
    return t["name"].get<std::string>().rfind(start, 0) == 0;
  });
}

TEST(judge_camera_targets, judges_mean_and_median_jitter_and_needs_20000_frames_a_run) {
  json results = json::array();
  results.push_back(software(
      "1080p raw12", "none", "while",
      {synthetic_run(20000, 30, 4), synthetic_run(20000, 30, 7), synthetic_run(20000, 30, 4.5)}));
  results.push_back(software("1080p raw12", "none", "tail", {synthetic_run(1000, 30, 4)}));
  results.push_back(software("4k raw12", "none", "while", {synthetic_run(1000, 125, 4)}));
  const camera_verdicts v = judge_camera_targets(results);
  const json* mean = target(v, "software 1080p RAW12 quiet, while: mean");
  ASSERT_NE(mean, nullptr);
  EXPECT_TRUE((*mean)["met"].get<bool>());
  const json* j = target(v, "software 1080p RAW12 quiet, while: J");
  ASSERT_NE(j, nullptr);
  EXPECT_DOUBLE_EQ((*j)["value"].get<double>(), 4.5);
  EXPECT_TRUE((*j)["met"].get<bool>());
  EXPECT_EQ((*j)["run_values"].size(), 3U);
  const json* short_run = target(v, "software 1080p RAW12 quiet, tail: J");
  ASSERT_NE(short_run, nullptr);
  EXPECT_FALSE((*short_run)["met"].get<bool>());
  EXPECT_THAT((*short_run)["note"].get<std::string>(), HasSubstr("only 1000 frames"));
  const json* four_k = target(v, "software 4K RAW12 quiet, while: mean <= 120");
  ASSERT_NE(four_k, nullptr);
  EXPECT_FALSE((*four_k)["met"].get<bool>());
  EXPECT_TRUE(not_judged(v, "software 4K RAW12 quiet, tail"));
  EXPECT_TRUE(not_judged(v, "software 1080p RAW12 under contention, while"));
  EXPECT_TRUE(not_judged(v, "photon-to-display"));
  EXPECT_TRUE(not_judged(v, "demosaic Malvar p50 / NPP bilinear p50 at 1080p"));
}

json fused(const std::string& resolution, const std::string& contention, const std::string& mode,
           std::vector<camera_run> runs) {
  camera_case c{"software",
                resolution,
                "raw12",
                contention,
                mode,
                "vrr240-flip",
                static_cast<int>(runs.size())};
  c.pipeline = "fused";
  return case_result(c, runs);
}

/// A run whose stage breakdown found spaced frames with this J.
camera_run with_spaced_jitter(camera_run r, double j) {
  r.stages = {{"spaced", {{"n", 100}, {"jitter_us", j}}},
              {"idle", {{"n", 90}, {"jitter_us", j / 2}}}};
  return r;
}

TEST(judge_camera_targets, the_fused_pass_is_judged_in_every_gpu_resident_mode) {
  json results = json::array();
  results.push_back(fused("1080p", "none", "while",
                          {synthetic_run(20000, 18, 1.5), synthetic_run(20000, 18, 1.5),
                           synthetic_run(20000, 18, 1.5)}));
  results.push_back(fused("1080p", "none", "persistent", {synthetic_run(20000, 19, 8)}));
  results.push_back(fused("4k", "none", "while", {synthetic_run(1000, 45, 2)}));
  results.push_back(fused("4k", "none", "persistent", {synthetic_run(1000, 44, 2)}));
  // Under contention: every frame's J 40 us, the spaced frames' 6, 9 and 30 (median 9).
  results.push_back(fused("1080p", "stress", "while",
                          {with_spaced_jitter(synthetic_run(500, 20, 40), 6),
                           with_spaced_jitter(synthetic_run(500, 20, 40), 9),
                           with_spaced_jitter(synthetic_run(500, 20, 40), 30)}));
  const camera_verdicts v = judge_camera_targets(results);
  const json* mean = target(v, "fused 1080p RAW12 quiet, while: mean <= 20 us");
  ASSERT_NE(mean, nullptr);
  EXPECT_TRUE((*mean)["met"].get<bool>());
  const json* spread = target(v, "fused 1080p RAW12 quiet, while: p99 - p50 <= 2 us");
  ASSERT_NE(spread, nullptr);
  EXPECT_TRUE((*spread)["met"].get<bool>()) << (*spread)["value"];
  const json* wide = target(v, "fused 1080p RAW12 quiet, persistent: p99 - p50 <= 2 us");
  ASSERT_NE(wide, nullptr);
  EXPECT_FALSE((*wide)["met"].get<bool>()) << "a ramp of 8 us: p99 - p50 is about 3.9 us";
  EXPECT_FALSE((*target(v, "fused 1080p RAW12 quiet, persistent: J <= 5 us"))["met"].get<bool>());
  const json* contended = target(v, "fused 1080p RAW12 under contention, while: J over spaced");
  ASSERT_NE(contended, nullptr);
  EXPECT_DOUBLE_EQ((*contended)["value"].get<double>(), 9.0);
  EXPECT_TRUE((*contended)["met"].get<bool>());
  EXPECT_DOUBLE_EQ((*contended)["all_frames_jitter_us"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ((*contended)["idle_frames_jitter_us"].get<double>(), 4.5) << "3, 4.5 and 15";
  const json* ratio_1080p = target(v, "fused 1080p RAW12 quiet: mean persistent / while");
  ASSERT_NE(ratio_1080p, nullptr);
  EXPECT_FALSE((*ratio_1080p)["met"].get<bool>()) << "23 against 18.75 us";
  const json* ratio_4k = target(v, "fused 4K RAW12 quiet: mean persistent / while");
  ASSERT_NE(ratio_4k, nullptr);
  EXPECT_TRUE((*ratio_4k)["met"].get<bool>());
  EXPECT_TRUE((*target(v, "fused 4K RAW12 quiet, persistent: mean <= 50 us"))["met"].get<bool>());
  EXPECT_TRUE(not_judged(v, "fused 1080p RAW12 quiet, tail"));
  EXPECT_TRUE(not_judged(v, "fused 1080p RAW12 under contention, persistent"));
}

TEST(judge_camera_targets, a_run_without_spaced_frames_leaves_the_spaced_j_unjudged) {
  json results = json::array();
  results.push_back(
      fused("1080p", "stress", "while",
            {with_spaced_jitter(synthetic_run(500, 20, 40), 6), synthetic_run(500, 20, 40)}));
  EXPECT_FALSE(results[0].contains("spaced_jitter_us")) << "one run of two had none";
  const camera_verdicts v = judge_camera_targets(results);
  EXPECT_TRUE(not_judged(v, "fused 1080p RAW12 under contention, while: J over spaced"));
}

TEST(judge_camera_targets, reports_host_graph_over_gpu_resident_under_contention) {
  json results = json::array();
  results.push_back(software("1080p raw12", "stress", "while", {synthetic_run(500, 30, 8)}));
  results.push_back(software("1080p raw12", "stress", "host-graph", {synthetic_run(500, 60, 800)}));
  results.push_back(photon("stress", "while", 9000, 600));
  results.push_back(photon("stress", "host-graph", 12000, 4800));
  const camera_verdicts v = judge_camera_targets(results);
  const json* contended = target(v, "software 1080p RAW12 under contention, while: J <= 10");
  ASSERT_NE(contended, nullptr);
  EXPECT_TRUE((*contended)["met"].get<bool>());
  const json* p = target(v,
                         "photon-to-display, 240 Hz variable refresh, flip, under contention, "
                         "while: J <= 1 ms");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE((*p)["met"].get<bool>());
  bool software_ratio = false;
  bool photon_ratio = false;
  for (const auto& r : v.ratios) {
    const std::string name = r["name"];
    if (name == "software 1080p RAW12, under contention: J host-graph / while") {
      EXPECT_DOUBLE_EQ(r["value"].get<double>(), 100.0);
      EXPECT_DOUBLE_EQ(r["paper"].get<double>(), 170.0);
      software_ratio = true;
    }
    if (name == "photon-to-display 240 Hz VRR flip, under contention: J host-graph / while") {
      EXPECT_DOUBLE_EQ(r["value"].get<double>(), 8.0);
      photon_ratio = true;
    }
  }
  EXPECT_TRUE(software_ratio);
  EXPECT_TRUE(photon_ratio);
}

TEST(judge_camera_targets, compares_our_demosaic_with_npp_in_time_and_quality) {
  json results = json::array();
  for (const std::string res : {"1080p", "4k"}) {
    results.push_back({{"kind", "operator"},
                       {"operator", "demosaic malvar"},
                       {"resolution", res},
                       {"p50_us", res == "4k" ? 40.0 : 12.0}});
    results.push_back({{"kind", "operator"},
                       {"operator", "demosaic npp"},
                       {"resolution", res},
                       {"p50_us", res == "4k" ? 34.8 : 14.7}});
  }
  for (int i = 0; i < 4; ++i) {
    results.push_back({{"kind", "demosaic_quality"},
                       {"photo", "p" + std::to_string(i)},
                       {"psnr_malvar_db", 35.0},
                       {"psnr_bilinear_db", 31.0},
                       {"psnr_npp_db", 30.5}});
  }
  const camera_verdicts v = judge_camera_targets(results);
  const json* hd = target(v, "demosaic Malvar p50 / NPP bilinear p50 at 1080p");
  const json* uhd = target(v, "demosaic Malvar p50 / NPP bilinear p50 at 4k");
  ASSERT_TRUE(hd != nullptr && uhd != nullptr);
  EXPECT_TRUE((*hd)["met"].get<bool>());
  EXPECT_FALSE((*uhd)["met"].get<bool>());
  const json* gain = target(v, "PSNR Malvar - bilinear >= 3 dB");
  ASSERT_NE(gain, nullptr);
  EXPECT_DOUBLE_EQ((*gain)["value"].get<double>(), 4.0);
  EXPECT_TRUE((*gain)["met"].get<bool>());
  const json* npp = target(v, "PSNR Malvar - NPP >= 0 dB");
  ASSERT_NE(npp, nullptr);
  EXPECT_TRUE((*npp)["met"].get<bool>());
}

TEST(judge_camera_targets, quality_needs_four_photographs) {
  json results = json::array();
  results.push_back({{"kind", "demosaic_quality"},
                     {"photo", "astronaut"},
                     {"psnr_malvar_db", 35.0},
                     {"psnr_bilinear_db", 31.0},
                     {"psnr_npp_db", nullptr}});
  const camera_verdicts v = judge_camera_targets(results);
  EXPECT_EQ(target(v, "PSNR"), nullptr);
  EXPECT_TRUE(not_judged(v, "PSNR Malvar - bilinear"));
}

// ---- reports ------------------------------------------------------------------------------------

measure::receipt small_receipt() {
  measure::receipt rc("camera", "resident bench camera --quick");
  rc.git_commit = "abc1234";
  rc.results.push_back(software("1080p raw12", "none", "while", {synthetic_run(2000, 30, 3)}));
  rc.results.push_back(
      software("1080p raw12", "none", "host-graph", {synthetic_run(2000, 50, 300)}));
  rc.results.push_back(photon("none", "while", 9000, 600));
  rc.results.push_back({{"kind", "operator"},
                        {"operator", "isp"},
                        {"resolution", "1080p"},
                        {"p50_us", 8.5},
                        {"p99_us", 9.25},
                        {"checked", "reference"}});
  record_verdicts(rc);
  return rc;
}

TEST(camera_report, the_page_has_targets_plots_per_mode_and_the_operator_table) {
  const measure::receipt rc = small_receipt();
  const std::string html = render_camera_report(rc);
  EXPECT_THAT(html, HasSubstr("<h2>Targets</h2>"));
  EXPECT_THAT(html, HasSubstr("software 1080p RAW12 quiet, while: mean &lt;= 40 us"));
  EXPECT_THAT(html, HasSubstr("<h2>Software processing latency</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Photon to display</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>Per-operator device times</h2>"));
  EXPECT_THAT(html, HasSubstr("latency box plot"));
  // Software: a time series and a histogram per mode; photon: one of each for its one mode.
  std::size_t series = 0;
  std::size_t histograms = 0;
  for (auto p = html.find("latency over time"); p != std::string::npos;
       p = html.find("latency over time", p + 1)) {
    ++series;
  }
  for (auto p = html.find("aria-label=\"histogram"); p != std::string::npos;
       p = html.find("aria-label=\"histogram", p + 1)) {
    ++histograms;
  }
  EXPECT_EQ(series, 3U);
  EXPECT_EQ(histograms, 3U);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

// The SVG of the plot whose aria-label is `label` ("latency over time: while"), or "".
std::string svg_labelled(const std::string& html, const std::string& label) {
  const auto at = html.find("aria-label=\"" + label + "\"");
  if (at == std::string::npos) return {};
  const auto begin = html.rfind("<svg", at);
  return html.substr(begin, html.find("</svg>", at) + 6 - begin);
}

// The texts of an SVG's labels drawn with text-anchor `anchor`, in order.
std::vector<std::string> anchored_texts(const std::string& svg, const std::string& anchor) {
  std::vector<std::string> texts;
  const std::string open = "text-anchor=\"" + anchor + "\">";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto begin = at + open.size();
    texts.push_back(svg.substr(begin, svg.find("</text>", begin) - begin));
  }
  return texts;
}

// The modes of one group share one latency axis on their series plots and one on their
// histograms, so they can be compared by eye (while runs at 30-33 us, host-graph at 50-350).
TEST(camera_report, the_modes_of_a_group_share_their_plots_axes) {
  const std::string html = render_camera_report(small_receipt());
  const std::string series_while = svg_labelled(html, "latency over time: while");
  const std::string series_host = svg_labelled(html, "latency over time: host-graph");
  ASSERT_FALSE(series_while.empty());
  ASSERT_FALSE(series_host.empty());
  const auto y_ticks = anchored_texts(series_while, "end");
  EXPECT_EQ(y_ticks, anchored_texts(series_host, "end"));
  EXPECT_EQ(y_ticks.back(), "400");  // host-graph's max (350) is on while's axis too
  const std::string hist_while = svg_labelled(html, "histogram: while");
  const std::string hist_host = svg_labelled(html, "histogram: host-graph");
  ASSERT_FALSE(hist_while.empty());
  EXPECT_EQ(anchored_texts(hist_while, "middle"), anchored_texts(hist_host, "middle"));
}

// Runs that carry a stage breakdown draw one stacked bar per mode (p50 of each stage of the
// plotted run), on one scale: the widest bar is the group's slowest mode.
TEST(camera_report, the_stage_breakdown_is_a_stacked_bar_per_mode) {
  measure::receipt rc = small_receipt();
  EXPECT_THAT(render_camera_report(rc), Not(HasSubstr("Where a frame's time goes")));
  const auto with_stages = [](json& result, double queue, double dag) {
    for (auto& run : result["runs"]) {
      run["stages"] = {{"n", 100},
                       {"stages_us",
                        {{"queue", {{"p50", queue}, {"p99", queue}, {"max", queue}}},
                         {"sighting", {{"p50", 1.0}, {"p99", 1.0}, {"max", 1.0}}},
                         {"controller", {{"p50", 0.5}, {"p99", 0.5}, {"max", 0.5}}},
                         {"dag", {{"p50", dag}, {"p99", dag}, {"max", dag}}}}},
                       {"slowest", json::array()}};
    }
  };
  with_stages(rc.results[0], 0.0, 28.5);   // while
  with_stages(rc.results[1], 20.0, 28.5);  // host-graph
  const std::string html = render_camera_report(rc);
  EXPECT_THAT(html, HasSubstr("Where a frame's time goes"));
  EXPECT_THAT(html, HasSubstr("full bar 50.00 &#181;s"));  // host-graph: 20 + 1 + 0.5 + 28.5
  EXPECT_THAT(html, HasSubstr("<title>queue 20.00 &#181;s</title>"));
  EXPECT_THAT(html, HasSubstr("<title>dag 28.50 &#181;s</title>"));
  EXPECT_THAT(html, Not(HasSubstr("late frames"))) << "no late-frame counts in these runs";
  for (auto& run : rc.results[1]["runs"]) {
    run["stages"]["late"] = {
        {"margin_us", 20.0},
        {"threshold_us", 70.0},
        {"frames", 3},
        {"by_stage", {{"queue", 2}, {"sighting", 0}, {"controller", 0}, {"dag", 1}}},
        {"bunched", 2},
        {"sensor_late", 1}};
  }
  const std::string with_late = render_camera_report(rc);
  EXPECT_THAT(with_late, HasSubstr("<th>late frames</th>"));
  EXPECT_THAT(with_late, HasSubstr("<tr><td>host-graph</td><td>3 of 100</td><td>2</td><td>0</td>"
                                   "<td>0</td><td>1</td><td>2</td><td>1</td></tr>"));
}

// A mode that occurs twice in one group: "mode (run k of n)" in the table, the box plot and the
// plots' titles; the others keep their names.
TEST(camera_report, repeated_runs_of_a_mode_are_labelled) {
  measure::receipt rc = small_receipt();
  rc.results.push_back(software("1080p raw12", "none", "while", {synthetic_run(2000, 32, 5)}));
  const std::string html = render_camera_report(rc);
  for (const char* label : {"while (run 1 of 2)", "while (run 2 of 2)"}) {
    EXPECT_THAT(html, HasSubstr(std::string("<tr><td>") + label + "</td>"));
    EXPECT_THAT(html, HasSubstr(std::string("text-anchor=\"end\">") + label + "</text>"));
    EXPECT_THAT(html, HasSubstr(std::string("aria-label=\"latency over time: ") + label + "\""));
    EXPECT_THAT(html, HasSubstr(std::string("aria-label=\"histogram: ") + label + "\""));
  }
  EXPECT_THAT(html, HasSubstr("<tr><td>host-graph</td>"));
  EXPECT_THAT(html, HasSubstr("aria-label=\"latency over time: while\""));  // photon: once
}

// Tables scroll inside the page; the settings are a table, not JSON.
TEST(camera_report, tables_scroll_and_settings_are_a_table) {
  measure::receipt rc = small_receipt();
  rc.settings["cpus"] = {{"loop", 14}, {"sensor", 15}};
  rc.settings["modes"] = {"while", "host-graph"};
  const std::string html = render_camera_report(rc);
  EXPECT_THAT(html, HasSubstr(".table-scroll{overflow-x:auto"));
  std::size_t tables = 0;
  for (auto p = html.find("<div class=\"table-scroll\">\n<table"); p != std::string::npos;
       p = html.find("<div class=\"table-scroll\">\n<table", p + 1)) {
    ++tables;
  }
  EXPECT_GE(tables, 6U);  // meta, targets, two latency tables, operators, settings
  EXPECT_THAT(html, HasSubstr("<h2>Settings</h2>\n<div class=\"table-scroll\">\n<table "
                              "class=\"kv\">"));
  EXPECT_THAT(html, HasSubstr("<tr><th>cpus</th><td><table class=\"kv\">"));
  EXPECT_THAT(html, HasSubstr("<tr><th>modes</th><td>while, host-graph</td></tr>"));
  EXPECT_THAT(html, Not(HasSubstr("<pre>")));
  const auto settings = html.substr(html.find("<h2>Settings</h2>"));
  EXPECT_THAT(settings, Not(HasSubstr("{\"")));
}

TEST(camera_report, the_table_lists_results_and_verdicts) {
  const std::string table = camera_table(small_receipt());
  EXPECT_THAT(table, HasSubstr("software latency"));
  EXPECT_THAT(table, HasSubstr("1080p raw12"));
  EXPECT_THAT(table, HasSubstr("met    software 1080p RAW12 quiet, while: mean <= 40 us"));
  EXPECT_THAT(table, HasSubstr("not judged"));
  EXPECT_THAT(table, HasSubstr("isp"));
}

TEST(camera_report, a_receipt_round_trips_through_json_and_draws_the_same_page) {
  const measure::receipt rc = small_receipt();
  const measure::receipt back = measure::receipt::from_json(rc.to_json());
  EXPECT_EQ(render_camera_report(back), render_camera_report(rc));
}

// ---- the command without a GPU -----------------------------------------------------------------

std::pair<int, std::string> run_command(std::vector<std::string> args) {
  CLI::App root;
  root.require_subcommand(1);
  CLI::App* bench = cli::add_bench_group(root);
  std::vector<cli::command> commands{cli::add_bench_camera_command(*bench, "test")};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = cli::parse_and_run(root, commands, static_cast<int>(argv.size()), argv.data());
  (void)::testing::internal::GetCapturedStdout();
  return {rc, ::testing::internal::GetCapturedStderr()};
}

TEST(camera_result_key, a_software_run_without_a_pipeline_is_replaced_by_an_unfused_rerun) {
  const json old_run = {{"kind", "software"},
                        {"workload", "1080p raw12"},
                        {"mode", "while"},
                        {"contention", "none"},
                        {"mean_us", 70.7}};
  json rerun = old_run;
  rerun["pipeline"] = "unfused";
  rerun["mean_us"] = 71.8;
  json fused = rerun;
  fused["pipeline"] = "fused";
  fused["workload"] = "1080p raw12 fused";
  EXPECT_EQ(camera_result_key(old_run), camera_result_key(rerun));
  EXPECT_NE(camera_result_key(old_run), camera_result_key(fused));
  json photon = {{"kind", "photon"}, {"mode", "while"}};
  EXPECT_THAT(camera_result_key(photon), Not(HasSubstr("unfused")));

  measure::receipt a("camera", "bench camera (old)");
  measure::receipt b("camera", "bench camera (re-run)");
  a.results = json::array({old_run});
  b.results = json::array({rerun, fused});
  const measure::receipt merged = measure::merge({a, b}, camera_result_key);
  ASSERT_EQ(merged.results.size(), 2U);
  EXPECT_DOUBLE_EQ(merged.results[0]["mean_us"].get<double>(), 71.8);
  EXPECT_EQ(merged.results[1]["pipeline"], "fused");
}

TEST(bench_camera_cli, a_bad_list_is_refused_before_the_gpu_is_looked_for) {
  const auto [rc, err] = run_command({"resident", "bench", "camera", "--formats", "raw14"});
  EXPECT_EQ(rc, 1);
  EXPECT_THAT(err, HasSubstr("resident bench camera: --formats: unknown format 'raw14'"));
  EXPECT_THAT(err, Not(HasSubstr("no usable CUDA GPU")));
}

TEST(bench_camera_cli, from_judges_a_receipt_again_and_draws_its_report_without_a_gpu) {
  const auto dir = std::filesystem::temp_directory_path() / "bench-camera-from-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  measure::receipt rc = small_receipt();
  rc.settings.erase("targets");  // as a merge of parts could leave them: stale or missing
  rc.write(dir / "merged.json");
  const auto [status, err] =
      run_command({"resident", "bench", "camera", "--from", (dir / "merged.json").string(),
                   "--json", (dir / "out" / "camera.json").string()});
  EXPECT_EQ(status, 0) << err;
  const measure::receipt back = measure::receipt::read(dir / "out" / "camera.json");
  EXPECT_FALSE(back.settings["targets"].empty());
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "camera-report.html"));
  std::filesystem::remove_all(dir);
}

}  // namespace
// ---- stage breakdown -------------------------------------------------------------------------

camera::frame_stages stamped(std::uint64_t frame, std::uint64_t arrival, std::uint64_t start,
                             std::uint64_t detect, std::uint64_t release, std::uint64_t commit,
                             std::uint64_t late = 0) {
  return {frame, arrival - 1000, late, arrival, start, detect, release, commit};
}

TEST(stage_breakdown, splits_each_frame_and_names_where_the_slowest_waited) {
  const std::vector<camera::frame_stages> frames = {
      stamped(1, 100'000, 90'000, 101'000, 101'500, 150'000),  // warm-up: left out
      stamped(2, 600'000, 590'000, 601'000, 601'500, 650'000),
      // Landed while the loop was busy with frame 2: 30 us in the queue.
      stamped(3, 620'000, 650'000, 651'000, 651'500, 700'000, 45'000),
      stamped(4, 1'100'000, 1'090'000, 1'101'000, 0, 1'150'000),  // no controller stamp
      stamped(5, 0, 1'590'000, 1'601'000, 1'601'500, 1'650'000),  // no arrival: not counted
  };
  const auto b = stage_breakdown(frames, 2, 2);
  ASSERT_FALSE(b.is_null());
  EXPECT_EQ(b["n"], 3);
  EXPECT_DOUBLE_EQ(b["stages_us"]["queue"]["max"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(b["stages_us"]["sighting"]["max"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(b["stages_us"]["dag"]["max"].get<double>(), 49.0);
  ASSERT_EQ(b["slowest"].size(), 2U);
  const auto& worst = b["slowest"][0];
  EXPECT_EQ(worst["frame"], 3);
  EXPECT_DOUBLE_EQ(worst["total_us"].get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(worst["queue_us"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(worst["controller_us"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(worst["dag_us"].get<double>(), 48.5);
  EXPECT_DOUBLE_EQ(worst["sensor_late_us"].get<double>(), 45.0);
  EXPECT_DOUBLE_EQ(worst["arrival_gap_us"].get<double>(), 20.0) << "it landed 20 us after frame 2";
  EXPECT_TRUE(b["slowest"][1]["frame"] == 2 || b["slowest"][1]["frame"] == 4);
  EXPECT_TRUE(stage_breakdown(frames, 6).is_null()) << "no frame from 6 on";
  // Frame 4 has no controller stamp: its DAG is counted from the sighting.
  const auto only4 = stage_breakdown({frames[3]}, 0);
  EXPECT_DOUBLE_EQ(only4["slowest"][0]["controller_us"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(only4["slowest"][0]["dag_us"].get<double>(), 49.0);
  EXPECT_TRUE(only4["slowest"][0]["arrival_gap_us"].is_null());
}

// Late frames (arrival -> commit more than 20 us over the median) are filed under the stage that
// exceeds its own median the most, and counted as bunched when they landed right after the frame
// before (half the median gap or less).
TEST(stage_breakdown, late_frames_are_filed_under_the_stage_they_waited_in) {
  std::vector<camera::frame_stages> frames;
  std::uint64_t t = 1'000'000;
  // 40 regular frames 1 ms apart: 1 us queue, 1 us sighting, 0.5 us controller, 50 us DAG.
  for (std::uint64_t f = 1; f <= 40; ++f, t += 1'000'000) {
    frames.push_back(stamped(f, t, t + 1'000, t + 2'000, t + 2'500, t + 52'500));
  }
  // Frame 41 lands 100 us after frame 40 (bunched) and waits 60 us in the queue.
  const std::uint64_t a41 = t - 1'000'000 + 100'000;
  frames.push_back(stamped(41, a41, a41 + 60'000, a41 + 61'000, a41 + 61'500, a41 + 111'500));
  // Frame 42, on time, with a DAG 40 us slower than usual, its sensor thread 30 us late.
  const std::uint64_t a42 = t + 1'000'000;
  frames.push_back(stamped(42, a42, a42 + 1'000, a42 + 2'000, a42 + 2'500, a42 + 92'500, 30'000));
  const auto late = stage_breakdown(frames, 1)["late"];
  EXPECT_DOUBLE_EQ(late["threshold_us"].get<double>(), 52.5 + late_margin_us);
  EXPECT_EQ(late["frames"], 2);
  EXPECT_EQ(late["by_stage"]["queue"], 1);
  EXPECT_EQ(late["by_stage"]["dag"], 1);
  EXPECT_EQ(late["by_stage"]["sighting"], 0);
  EXPECT_EQ(late["bunched"], 1) << "frame 41 landed 0.1 ms after frame 40, the median gap 1 ms";
  EXPECT_EQ(late["sensor_late"], 1) << "frame 42's sensor thread was 30 us late";
  // Spaced frames: those that landed more than one pipeline latency (52.5 us) after the frame
  // before. Frame 41 (0.1 ms after frame 40) qualifies but frame 1 has no frame before it.
  const auto spaced = stage_breakdown(frames, 1)["spaced"];
  EXPECT_DOUBLE_EQ(spaced["gap_over_us"].get<double>(), 52.5);
  EXPECT_EQ(spaced["n"], 41);
  EXPECT_DOUBLE_EQ(spaced["jitter_us"].get<double>(), 111.5 - 52.5);
  // Frame 41 landing 40 us after frame 40, inside the pipeline latency: left out of the spaced J.
  frames[40] = stamped(41, a41 - 60'000, a41, a41 + 1'000, a41 + 1'500, a41 + 51'500);
  const auto bunched = stage_breakdown(frames, 1)["spaced"];
  EXPECT_EQ(bunched["n"], 40);
  EXPECT_DOUBLE_EQ(bunched["max_us"].get<double>(), 92.5) << "frame 42, late in its own DAG";
}

// Idle frames: those that landed after every earlier frame's commit. A frame spaced from its
// predecessor by more than one latency can still wait when that predecessor queued.
TEST(stage_breakdown, idle_frames_leave_out_a_frame_whose_predecessor_was_still_running) {
  const std::vector<camera::frame_stages> frames = {
      stamped(1, 1'000'000, 990'000, 1'001'000, 1'001'500, 1'051'000),
      // Lands 20 us after frame 1: queues 30 us; commits at 1'101'000.
      stamped(2, 1'020'000, 1'051'000, 1'052'000, 1'052'500, 1'101'000, 90'000),
      // Lands 60 us after frame 2 (over the 50-us latency: spaced) but before frame 2's commit.
      stamped(3, 1'080'000, 1'101'000, 1'102'000, 1'102'500, 1'151'000),
      // Lands 1 ms later, the loop idle: 50 us.
      stamped(4, 2'080'000, 2'070'000, 2'081'000, 2'081'500, 2'130'000),
      stamped(5, 3'080'000, 3'070'000, 3'081'000, 3'081'500, 3'132'000),  // 52 us
  };
  const auto b = stage_breakdown(frames, 1);
  EXPECT_EQ(b["spaced"]["n"], 3) << "frames 3, 4 and 5";
  EXPECT_DOUBLE_EQ(b["spaced"]["max_us"].get<double>(), 71.0) << "frame 3 waited for frame 2";
  const auto idle = b["idle"];
  ASSERT_FALSE(idle.is_null());
  EXPECT_EQ(idle["n"], 2) << "frames 4 and 5; frame 1 has no frame before it";
  EXPECT_DOUBLE_EQ(idle["min_us"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(idle["jitter_us"].get<double>(), 2.0);
  // Only bunched frames: none found the loop idle.
  EXPECT_TRUE(stage_breakdown({frames[0], frames[1], frames[2]}, 1)["idle"].is_null());
}

// ---- white-balance statistics ----------------------------------------------------------------

io::rgb8_image striped_photo(std::uint32_t w, std::uint32_t h) {
  io::rgb8_image p{w, h, std::vector<std::uint8_t>(std::size_t{w} * h * 3)};
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      auto* px = &p.rgb[(std::size_t{y} * w + x) * 3];
      px[0] = static_cast<std::uint8_t>(60 + (x * 7 + y) % 120);
      px[1] = static_cast<std::uint8_t>(70 + (x / 4 + y / 4) % 2 * 90);
      px[2] = static_cast<std::uint8_t>(50 + y * 150 / h);
    }
  }
  return p;
}

TEST(statistics_study, previous_frame_gains_lag_one_frame_behind_a_change_of_illuminant) {
  statistics_study_options o;
  o.frames = 6;
  o.step_at = 3;
  const json r = statistics_study(striped_photo(64, 48), "stripes", o);
  EXPECT_EQ(r["kind"], "statistics");
  ASSERT_EQ(r["psnr_same_db"].size(), 6U);
  const auto same = r["psnr_same_db"].get<std::vector<double>>();
  const auto previous = r["psnr_previous_db"].get<std::vector<double>>();
  // Frame 0 runs with gain 1 under a strong cast: far worse than its own gains.
  EXPECT_LT(previous[0], same[0] - 1.0);
  // The step frame runs with the old illuminant's gains; the frame after has caught up.
  EXPECT_LT(previous[3], same[3] - 1.0);
  EXPECT_NEAR(previous[4], same[4], 0.5) << "one frame of lag on a slowly panning scene";
  EXPECT_EQ(r["settle_frames"], 1);
  EXPECT_NEAR(r["step_loss_db"].get<double>(), same[3] - previous[3], 1e-9);
  EXPECT_LT(r["mean_previous_db"].get<double>(), r["mean_same_db"].get<double>());
  o.step_at = 0;
  EXPECT_THROW((void)statistics_study(striped_photo(64, 48), "stripes", o), std::invalid_argument);
}

TEST(judge_camera_targets, previous_frame_statistics_are_judged_against_same_frame) {
  json results = json::array();
  results.push_back({{"kind", "statistics"}, {"mean_same_db", 30.0}, {"mean_previous_db", 29.8}});
  results.push_back({{"kind", "statistics"}, {"mean_same_db", 28.0}, {"mean_previous_db", 27.0}});
  const camera_verdicts v = judge_camera_targets(results);
  const json* t = target(v, "PSNR previous-frame statistics");
  ASSERT_NE(t, nullptr);
  EXPECT_NEAR((*t)["value"].get<double>(), 0.6, 1e-9);
  EXPECT_FALSE((*t)["met"].get<bool>());
  EXPECT_TRUE(not_judged(judge_camera_targets(json::array()), "PSNR previous-frame statistics"));
}

}  // namespace resident::bench
