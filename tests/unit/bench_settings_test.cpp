// Benchmark flags are checked before anything runs: a bad flag is a clear error, no GPU needed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "bench/io/io_bench.hpp"
#include "bench/overhead/overhead_bench.hpp"
#include "commands/report.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

std::string error_of(const io_settings& s) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(io_settings, defaults_are_valid_and_quick_shrinks_every_configuration) {
  io_settings s;
  EXPECT_EQ(error_of(s), "");
  s.make_quick();
  EXPECT_EQ(error_of(s), "");
  EXPECT_LE(s.samples + s.warmup, 2000);
}

TEST(io_settings, observers_default_to_two_and_are_bounded) {
  io_settings s;
  EXPECT_EQ(s.observers, 2);
  s.observers = 0;
  EXPECT_THAT(error_of(s), HasSubstr("--observers must be in 1..4, got 0"));
  s.observers = 4;
  EXPECT_EQ(error_of(s), "");
}

TEST(io_settings, unknown_mode_lists_the_modes) {
  io_settings s;
  s.modes = {"while", "warp"};
  EXPECT_THAT(error_of(s), HasSubstr("unknown execution mode 'warp'; modes: eager, host-graph"));
}

TEST(io_settings, unknown_workload_and_contention_are_named) {
  io_settings s;
  s.workloads = {"resnet"};
  EXPECT_THAT(error_of(s), HasSubstr("unknown workload 'resnet'; workloads: empty, matmul6"));
  s = {};
  s.contention = {"heavy"};
  EXPECT_THAT(error_of(s), HasSubstr("unknown contention 'heavy'; levels: none, stress"));
}

TEST(io_settings, rate_must_be_positive) {
  io_settings s;
  s.rate_hz = 0;
  EXPECT_THAT(error_of(s), HasSubstr("--rate must be in (0, 1000000] Hz"));
  s.rate_hz = -5;
  EXPECT_THAT(error_of(s), HasSubstr("--rate"));
}

TEST(io_settings, empty_lists_and_bad_counts_are_refused) {
  io_settings s;
  s.modes.clear();
  EXPECT_THAT(error_of(s), HasSubstr("--modes"));
  s = {};
  s.samples = 0;
  EXPECT_THAT(error_of(s), HasSubstr("--samples"));
  s = {};
  s.warmup = -1;
  EXPECT_THAT(error_of(s), HasSubstr("--warmup"));
}

nlohmann::json io_row(const std::string& mode, const std::string& workload, double mean,
                      double jitter) {
  return {{"mode", mode},       {"workload", workload}, {"contention", "none"}, {"mean_us", mean},
          {"p99_us", mean * 2}, {"p999_us", mean * 3},  {"jitter_us", jitter}};
}

TEST(io_settings, repeats_are_bounded) {
  io_settings s;
  EXPECT_EQ(s.repeats, 1);
  s.repeats = 0;
  EXPECT_THAT(error_of(s), HasSubstr("--repeats must be in 1..10, got 0"));
  s.repeats = 3;
  EXPECT_EQ(error_of(s), "");
}

TEST(io_peers, repeats_pair_with_their_own_peer_run_and_targets_take_the_median) {
  nlohmann::json results = nlohmann::json::array();
  const double means[] = {10.5, 13.0, 10.8};  // against peers of 10: 1.05, 1.30, 1.08
  for (int rep = 0; rep < 3; ++rep) {
    nlohmann::json r = io_row("while", "empty", means[rep], 4.0);
    r["repeat"] = rep;
    nlohmann::json p = io_row("peer-while", "empty", 10.0, 3.0);
    p["repeat"] = rep;
    p["peer"] = true;
    results.push_back(r);
    results.push_back(p);
  }
  add_peer_ratios(results);
  EXPECT_DOUBLE_EQ(results[2]["vs_peer"]["mean_us"].get<double>(), 1.3);
  for (const auto& t : io_targets(results)) {
    if (t["name"] != "while empty: mean / peer") continue;
    EXPECT_DOUBLE_EQ(t["value"].get<double>(), 1.08);  // the median of 1.05, 1.30, 1.08
    EXPECT_EQ(t["met"], true);
  }
}

// bench io split across runs (empty in one, matmul6 in another): `resident report --merge`
// judges the targets again over the merged results, so each part's target is judged.
TEST(io_peers, a_merged_receipt_judges_the_targets_of_every_part) {
  const auto part = [](const char* workload, double mean, double peer_mean) {
    nlohmann::json results = nlohmann::json::array();
    results.push_back(io_row("while", workload, mean, 4.0));
    results.push_back(io_row("peer-while", workload, peer_mean, 4.0));
    results.back()["peer"] = true;
    add_peer_ratios(results);
    measure::receipt r("io", std::string("resident bench io --workloads ") + workload);
    r.results = results;
    r.settings["targets"] = io_targets(results);
    return r;
  };
  const auto dir = std::filesystem::temp_directory_path() / "resident-io-merge-test";
  std::filesystem::create_directories(dir);
  part("empty", 12.0, 10.0).write((dir / "a.json").string());
  part("matmul6", 101.0, 100.0).write((dir / "b.json").string());
  cli::report_settings s;
  s.receipts = {(dir / "a.json").string(), (dir / "b.json").string()};
  s.merged = (dir / "merged.json").string();
  testing::internal::CaptureStdout();
  EXPECT_EQ(cli::run_report(s), 0);
  (void)testing::internal::GetCapturedStdout();
  const measure::receipt merged = measure::receipt::read(s.merged);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : merged.settings["targets"]) by_name[t["name"].get<std::string>()] = t;
  EXPECT_EQ(by_name["while empty: mean / peer"]["met"], false);         // 1.2 against 1.10
  EXPECT_EQ(by_name["while matmul6: |mean / peer - 1|"]["met"], true);  // 0.01 against 0.03
  EXPECT_TRUE(by_name["tail empty: mean / peer"]["met"].is_null());     // no tail anywhere
  std::filesystem::remove_all(dir);
}

// disb and inference receipts are merged by their own benchmark, which relates and judges them
// again; `resident report --merge` refuses them by name rather than concatenate.
TEST(report_merge, python_benchmarks_receipts_are_sent_to_their_own_merge) {
  const auto dir = std::filesystem::temp_directory_path() / "resident-disb-merge-test";
  std::filesystem::create_directories(dir);
  for (const char* name : {"disb", "inference"}) {
    measure::receipt r(name, std::string("python -m resident.bench.") + name);
    r.results = nlohmann::json::array({{{"policy", "exclusive"}}});
    r.write((dir / "a.json").string());
    r.write((dir / "b.json").string());
    cli::report_settings s;
    s.receipts = {(dir / "a.json").string(), (dir / "b.json").string()};
    s.merged = (dir / "merged.json").string();
    try {
      (void)cli::run_report(s);
      ADD_FAILURE() << name << " receipts were merged";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("resident bench ") + name + " --merge"));
    }
    EXPECT_FALSE(std::filesystem::exists(s.merged));
  }
  std::filesystem::remove_all(dir);
}

TEST(io_settings, unknown_peer_lists_the_peers) {
  io_settings s;
  s.peers = {"while", "warp"};
  EXPECT_THAT(error_of(s), HasSubstr("unknown peer 'warp'; peers: while, tail, host-graph, "
                                     "persistent"));
}

TEST(io_peers, each_mode_is_divided_by_its_own_peer_in_the_same_configuration) {
  nlohmann::json results = nlohmann::json::array();
  results.push_back(io_row("while", "empty", 12.0, 8.0));
  results.push_back(io_row("while", "matmul6", 100.0, 8.0));
  results.push_back(io_row("eager", "empty", 30.0, 8.0));  // no eager peer: no ratio
  results.push_back(io_row("peer-while", "empty", 10.0, 4.0));
  results.back()["peer"] = true;
  add_peer_ratios(results);
  ASSERT_TRUE(results[0].contains("vs_peer"));
  EXPECT_EQ(results[0]["vs_peer"]["peer"], "peer-while");
  EXPECT_DOUBLE_EQ(results[0]["vs_peer"]["mean_us"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(results[0]["vs_peer"]["p999_us"].get<double>(), 1.2);
  EXPECT_DOUBLE_EQ(results[0]["vs_peer"]["jitter_us"].get<double>(), 2.0);
  EXPECT_FALSE(results[1].contains("vs_peer")) << "no matmul6 peer ran";
  EXPECT_FALSE(results[2].contains("vs_peer"));
  EXPECT_FALSE(results[3].contains("vs_peer")) << "a peer is not compared with itself";
}

TEST(io_peers, targets_are_judged_from_the_ratios_and_not_judged_without_runs) {
  nlohmann::json results = nlohmann::json::array();
  auto add = [&](const std::string& mode, const std::string& workload,
                 const std::string& contention, double mean, double jitter) {
    nlohmann::json r = io_row(mode, workload, mean, jitter);
    r["contention"] = contention;
    if (mode.rfind("peer-", 0) == 0) r["peer"] = true;
    results.push_back(r);
  };
  add("while", "empty", "none", 10.5, 4.0);  // 1.05x its peer: met
  add("peer-while", "empty", "none", 10.0, 3.0);
  add("tail", "empty", "none", 12.0, 4.0);  // 1.2x: missed
  add("peer-tail", "empty", "none", 10.0, 3.0);
  add("persistent", "empty", "none", 6.0, 2.0);  // below 7 us, 1.2x its peer: both met
  add("peer-persistent", "empty", "none", 5.0, 2.0);
  add("while", "matmul6", "none", 103.5, 5.0);  // 3.5% off its peer: missed
  add("peer-while", "matmul6", "none", 100.0, 5.0);
  add("while", "empty", "stress", 11.0, 7.0);  // J 7 / 4 = 1.75x quiet: missed
  add_peer_ratios(results);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : io_targets(results)) by_name[t["name"].get<std::string>()] = t;
  EXPECT_EQ(by_name.at("while empty: mean / peer")["met"], true);
  EXPECT_EQ(by_name.at("tail empty: mean / peer")["met"], false);
  EXPECT_EQ(by_name.at("persistent empty: mean / peer")["met"], true);
  EXPECT_EQ(by_name.at("persistent empty: mean (us)")["met"], true);
  EXPECT_EQ(by_name.at("while matmul6: |mean / peer - 1|")["met"], false);
  EXPECT_NEAR(by_name.at("while matmul6: |mean / peer - 1|")["value"].get<double>(), 0.035, 1e-12);
  EXPECT_EQ(by_name.at("while empty: J under stress / quiet J")["met"], false);
  EXPECT_DOUBLE_EQ(by_name.at("while empty: J under stress / quiet J")["value"].get<double>(),
                   1.75);
  // No host-graph runs: not judged, never "met".
  EXPECT_TRUE(by_name.at("host-graph empty: mean / peer")["met"].is_null());
  EXPECT_TRUE(by_name.at("tail matmul6: |mean / peer - 1|")["met"].is_null());
}

TEST(io_peers, small_samples_in_the_lines_format_are_judged_against_their_own_peers) {
  nlohmann::json results = nlohmann::json::array();
  auto add = [&](const std::string& mode, double mean) {
    nlohmann::json r = io_row(mode, "empty/lines", mean, 2.0);
    if (mode.rfind("peer-", 0) == 0) r["peer"] = true;
    results.push_back(r);
  };
  add("persistent", 6.0);  // at the 6 us limit, 1.07x its peer: mean met, ratio missed
  add("peer-persistent", 5.6);
  add("while", 10.1);  // over 10 us, 0.98x its peer
  add("peer-while", 10.3);
  results.push_back(io_row("tail", "empty/sequence-lock", 9.0, 2.0));  // another format
  add_peer_ratios(results);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : io_targets(results)) by_name[t["name"].get<std::string>()] = t;
  EXPECT_EQ(by_name.at("persistent empty/lines: mean (us)")["met"], true);
  EXPECT_EQ(by_name.at("persistent empty/lines: mean / peer")["met"], false);
  EXPECT_EQ(by_name.at("while empty/lines: mean (us)")["met"], false);
  EXPECT_EQ(by_name.at("while empty/lines: mean / peer")["met"], true);
  EXPECT_TRUE(by_name.at("tail empty/lines: mean (us)")["met"].is_null());
  measure::receipt r("io", "resident bench io --mailbox-formats lines,sequence-lock");
  r.results = results;
  for (auto& row : r.results) {  // the fields the table prints beside the ones judged
    row.update(
        {{"n", 20000}, {"p50_us", 1.0}, {"max_us", 1.0}, {"dropped", 0}, {"wrong_outputs", 0}});
  }
  EXPECT_THAT(io_table(r), HasSubstr("empty/sequence-lock none"));  // the columns stay apart
}

TEST(overhead_settings, refuses_too_few_iterations) {
  overhead_settings s;
  EXPECT_NO_THROW(s.validate());
  s.iterations = 1;
  EXPECT_THROW(s.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace resident::bench
