// Text and HTML reports from receipts, checked on the io fixture (2 workloads x 2 contention x
// 2 modes) and on a receipt with non-latency results.

// GCC 12's optimizer warns inside libstdc++'s std::regex (std::function members "may be used
// uninitialized", a known false positive of that compiler); nothing of this file's own.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "resident/measure/report.hpp"

namespace resident::measure {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const std::filesystem::path fixture =
    std::filesystem::path(RESIDENT_TEST_FIXTURES) / "io_receipt.json";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

receipt overhead_receipt() {
  receipt r("overhead", "resident bench overhead");
  r.git_commit = "abc1234";
  r.started_at = "2026-11-30T11:00:00Z";
  r.results.push_back({{"cost", "handler"}, {"median_ns", 850}, {"p99_ns", 1210.5}});
  r.results.push_back({{"cost", "host sync"}, {"median_ns", 4300}, {"relative_error", 3.2e-8}});
  return r;
}

// A bench reef receipt in miniature: an exclusive and a preempt policy, with their targets.
receipt reef_receipt() {
  receipt r("reef", "resident bench reef");
  r.git_commit = "def5678";
  const auto policy = [](const char* name, double p99, double ratio, double be_gflops,
                         std::int64_t sequences, double be_ratio, std::int64_t crowded) {
    return json{{"mode", name},
                {"workload", "rt-mlp"},
                {"contention", "be-mlp"},
                {"policy", name},
                {"n", 100},
                {"mean_us", p99 - 5},
                {"p50_us", p99 - 5},
                {"p99_us", p99},
                {"max_us", p99 + 50},
                {"rt_p99_over_exclusive", ratio},
                {"be_gflops_over_sequential", be_ratio},
                {"preemption_latency", {{"p50_us", 9.5}, {"p99_us", 12.25}}},
                {"be", {{"sequences", sequences}, {"gflops", be_gflops}}},
                {"rt_placement", {{"crowded_launches", crowded}}},
                {"rt_word_up", {{"n", 100}, {"mean_us", p99 - 20}, {"duty", 0.4125}}},
                {"rt_late_items", 3},
                {"rt_undisturbed_p99_over_exclusive", ratio - 0.0125},
                {"measurement", {{"in_loop_us", {{"n", 100}, {"p99_us", p99 - 3.25}}}}}};
  };
  r.results.push_back(policy("exclusive", 126.5, 1.0, 0.0, 0, 0.0, 0));
  r.results.push_back(policy("preempt", 134.5, 1.0632, 4303.25, 90, 0.5916, 7));
  r.settings["targets"] = json::array({{{"name", "preempt: RT p99 / exclusive p99"},
                                        {"value", 1.0632},
                                        {"target", 1.05},
                                        {"met", false},
                                        {"undisturbed", 1.0507},
                                        {"in_loop", 1.0712}},
                                       {{"name", "preempt: preemption latency p99 (us)"},
                                        {"value", 12.25},
                                        {"target", 20.0},
                                        {"met", true}},
                                       {{"name", "preempt-lead: preemption latency p99 (us)"},
                                        {"value", 21.5},
                                        {"target", 20.0},
                                        {"met", false},
                                        {"after_sample", 11.75}}});
  return r;
}

// ---- text --------------------------------------------------------------------------------------

TEST(report, text_lists_every_latency_result_with_its_numbers) {
  const std::string text = render_text({receipt::read(fixture)});
  EXPECT_THAT(text, HasSubstr("io: git abc1234def56, started 2026-11-30T10:00:00Z, NVIDIA H200"));
  EXPECT_THAT(text, HasSubstr("command: resident bench io --modes while,host-graph"));
  for (const char* word : {"while", "host-graph", "empty", "matmul6", "none", "stress"}) {
    EXPECT_THAT(text, HasSubstr(word));
  }
  // empty/none/while: mean 4.27, p50 4.21, p99 5.31, p99.9 7.44, max 9.87, jitter 6.25
  for (const char* number : {"4.27", "4.21", "5.31", "7.44", "9.87", "6.25", "10000", "10500"}) {
    EXPECT_THAT(text, HasSubstr(number));
  }
  // empty/stress/host-graph: max 1450.3 printed with two decimals, 37 dropped, 10463 processed
  EXPECT_THAT(text, HasSubstr("1450.30"));
  EXPECT_THAT(text, HasSubstr("10463"));
}

TEST(report, text_table_columns_are_aligned) {
  const std::string text = render_text({receipt::read(fixture)});
  std::istringstream lines(text.substr(text.find("benchmark  ")));
  std::vector<std::string> table;
  for (std::string line; std::getline(lines, line) && !line.empty();) table.push_back(line);
  ASSERT_EQ(table.size(), 9U);  // header + 8 results
  // Numbers are right-aligned up to the last column, so every line has the header's length and
  // each column starts where the header's does.
  const std::size_t mode_col = table[0].find("mode");
  const std::size_t p99_end = table[0].find("p99 ") + 3;
  for (const auto& line : table) {
    EXPECT_EQ(line.size(), table[0].size()) << line;
    EXPECT_EQ(line.substr(0, 3), table[0] == line ? "ben" : "io ");
    EXPECT_NE(line[mode_col], ' ') << line;
    EXPECT_EQ(line[p99_end], ' ') << line;
    EXPECT_NE(line[p99_end - 1], ' ') << line;
  }
}

TEST(report, text_shows_disturbed_samples_and_their_jitter_where_the_receipt_has_them) {
  const std::string text = render_text({receipt::read(fixture)});
  EXPECT_THAT(text, HasSubstr("disturbed  jitter*"));
  std::istringstream lines(text);
  int with = 0;
  int without = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("io ", 0) != 0) continue;
    // Only empty/none/while carries the counts (3 disturbed, 5.17 us without them).
    if (line.find("     3     5.17") != std::string::npos) {
      ++with;
    } else if (line.size() > 2 && line.substr(line.size() - 2) == " -") {
      ++without;
    }
  }
  EXPECT_EQ(with, 1) << text;
  EXPECT_EQ(without, 7) << text;
  EXPECT_THAT(render_html({receipt::read(fixture)}), HasSubstr("<td class=\"num\">5.17</td>"));
}

TEST(report, text_lists_other_results_as_key_value) {
  const std::string text = render_text({overhead_receipt()});
  EXPECT_THAT(text, HasSubstr("overhead: cost=handler median_ns=850 p99_ns=1210.50\n"));
  EXPECT_THAT(text, HasSubstr("overhead: cost=host sync median_ns=4300 relative_error=3.2e-08\n"));
  EXPECT_THAT(text, Not(HasSubstr("p99.9")));  // no latency table
}

// A bench loops result whose measurement lists its slowest samples: the first with the split
// against the sample before it, the second without (no device stamps for it).
receipt loops_receipt() {
  receipt r("loops", "resident bench loops");
  r.git_commit = "def5678";
  json slowest = json::array();
  slowest.push_back(
      {{"loop", 14},
       {"sample", 1296},
       {"latency_us", 199.154},
       {"previous_latency_us", 79.87},
       {"poll_gap_us", 137.6},
       {"publish_us", 0.21},
       {"vs_previous_us",
        {{"release_to_detect", 0.31}, {"detect_to_commit", 1.28}, {"commit_to_seen", 117.69}}}});
  slowest.push_back({{"loop", 0}, {"sample", 5233}, {"latency_us", 155.44}, {"poll_gap_us", 0.26}});
  for (int i = 0; i < 4; ++i) slowest.push_back({{"loop", 1}, {"latency_us", 90.0 - i}});
  r.results.push_back({{"mode", "while"},
                       {"workload", "matmul256x2, 20 loops"},
                       {"contention", "none"},
                       {"n", 100000},
                       {"mean_us", 79.9},
                       {"p50_us", 79.9},
                       {"min_us", 75.0},
                       {"max_us", 199.154},
                       {"measurement", {{"slowest", slowest}}}});
  r.results.push_back({{"mode", "host-graph"},
                       {"workload", "matmul256x2, 20 loops"},
                       {"contention", "none"},
                       {"mean_us", 139.8},
                       {"p50_us", 86.1},
                       {"min_us", 78.0},
                       {"max_us", 6452.7}});
  return r;
}

TEST(report, text_splits_the_slowest_samples_where_the_receipt_lists_them) {
  const std::string text = render_text({loops_receipt()});
  EXPECT_THAT(text, HasSubstr("slowest samples, each against the sample before it"));
  EXPECT_THAT(text, HasSubstr("commit>seen"));
  // The first: latency, previous, then its three parts, poll gap and publish.
  const std::regex first(
      R"(while +matmul256x2, 20 loops +none +14 +1296 +199\.15 +79\.87 +0\.31 +1\.28 +117\.69 +137\.60 +0\.21)");
  EXPECT_TRUE(std::regex_search(text, first)) << text;
  // The second has no split: dashes, not zeros.
  const std::regex second(
      R"(while +matmul256x2, 20 loops +none +0 +5233 +155\.44 +- +- +- +- +0\.26 +- +- +-)");
  EXPECT_TRUE(std::regex_search(text, second)) << text;
  EXPECT_THAT(text, Not(HasSubstr("88.00")));  // three shown per result: 89.00 is the last
  // The host-graph result lists no slowest samples, so it has no row in that section.
  EXPECT_THAT(text.substr(text.find("slowest samples")), Not(HasSubstr("host-graph")));
}

// bench io lists its slowest samples without a loop number (one loop per result).
TEST(report, text_shows_the_slowest_samples_of_a_one_loop_bench) {
  receipt r("io", "resident bench io");
  json slowest = json::array();
  slowest.push_back(
      {{"sample", 77},
       {"latency_us", 41.5},
       {"previous_latency_us", 12.25},
       {"poll_gap_us", 0.1},
       {"publish_us", 0.3},
       {"release_late_us", 0.4},
       {"handler_last_read_us", 26.5},
       {"vs_previous_us",
        {{"release_to_detect", 27.0}, {"detect_to_commit", 2.0}, {"commit_to_seen", 0.25}}}});
  r.results.push_back({{"mode", "tail"},
                       {"workload", "empty"},
                       {"contention", "stress"},
                       {"n", 100},
                       {"mean_us", 13.0},
                       {"p50_us", 12.5},
                       {"min_us", 11.0},
                       {"max_us", 41.5},
                       {"measurement", {{"slowest", slowest}}}});
  const std::string text = render_text({r});
  const std::regex row(
      R"(tail +empty +stress +- +77 +41\.50 +12\.25 +27\.00 +2\.00 +0\.25 +0\.10 +0\.30 +0\.40 +26\.50)");
  EXPECT_TRUE(std::regex_search(text, row)) << text;
}

TEST(report, receipts_without_slowest_samples_get_no_such_section) {
  EXPECT_THAT(render_text({receipt::read(fixture)}), Not(HasSubstr("slowest samples")));
  EXPECT_THAT(render_html({receipt::read(fixture)}), Not(HasSubstr("slowest samples")));
}

TEST(report, html_tables_the_slowest_samples_under_their_group) {
  const std::string html = render_html({loops_receipt()});
  EXPECT_THAT(html, HasSubstr("slowest samples, each against the sample before it"));
  EXPECT_THAT(html, HasSubstr("<th class=\"num\">commit&gt;seen</th>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">117.69</td>"));
  EXPECT_EQ(count(html, "<td class=\"num\">1296</td>"), 1U);
}

// bench reef: a co-scheduling row per policy (ratios, preemption latency, BE throughput, RT
// placement) and the receipt's targets; a policy without BE work shows no throughput.
TEST(report, text_tables_co_scheduling_policies_and_their_targets) {
  const std::string text = render_text({reef_receipt()});
  EXPECT_THAT(text, HasSubstr("reef: co-scheduling"));
  const auto line_of = [&](const std::string& start) {
    const auto at = text.find("\n" + start);
    return at == std::string::npos ? std::string()
                                   : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  const std::string preempt = line_of("preempt ");
  EXPECT_THAT(preempt, HasSubstr("134.50"));
  EXPECT_THAT(preempt, HasSubstr("1.063x"));
  EXPECT_THAT(preempt, HasSubstr("12.25"));
  EXPECT_THAT(preempt, HasSubstr("4303.25"));
  EXPECT_THAT(preempt, HasSubstr("0.592x"));
  EXPECT_THAT(preempt, HasSubstr(" 0.41 "));  // RT duty: the word up 41% of the run
  EXPECT_THAT(preempt, HasSubstr("1.051x"));  // without the disturbed samples
  EXPECT_THAT(preempt, HasSubstr("131.25"));  // the device's part (in-loop p99)
  EXPECT_THAT(text, HasSubstr("in-loop p99"));
  const std::string exclusive = line_of("exclusive ");
  EXPECT_THAT(exclusive, HasSubstr("1.000x"));
  EXPECT_THAT(exclusive, Not(HasSubstr("0.000x")));  // no BE work: no throughput ratio
  // The ratio target with the same ratio without the host's share beside it.
  EXPECT_THAT(text, HasSubstr("missed  preempt: RT p99 / exclusive p99: 1.063 (target 1.05); "
                              "undisturbed 1.051; in-loop 1.071\n"));
  // A target without that context ends at its bracket.
  EXPECT_THAT(text,
              HasSubstr("met     preempt: preemption latency p99 (us): 12.25 (target 20.00)\n"));
  // A latency judged from a raise ahead of the sample, with the wait after the sample beside it.
  EXPECT_THAT(text, HasSubstr("missed  preempt-lead: preemption latency p99 (us): 21.5 (target "
                              "20.00); from the sample 11.75\n"));
  // Receipts of other benches have no such section.
  EXPECT_THAT(render_text({overhead_receipt()}), Not(HasSubstr("co-scheduling")));
}

// A bench disb receipt (Python): one row per policy in a serving table, text and HTML; a
// policy without preemption shows "-" for its latency, not a made-up number.
TEST(report, serving_policies_of_bench_disb_get_a_table) {
  receipt r("disb", "python -m resident.bench.disb");
  const auto policy = [](const char* name, double p99, const json& ratio, double be,
                         const json& be_ratio, const json& preemption) {
    return json{
        {"policy", name},
        {"workload", "one"},
        {"arrivals", "fixed"},
        {"latency_us",
         {{"n", 300}, {"p50", p99 - 4}, {"p99", p99}, {"p99_9", p99 + 1}, {"max", p99 + 2}}},
        {"deadline_misses", 0},
        {"rt_p99_over_exclusive", ratio},
        {"be_inferences_per_s", be},
        {"be_throughput_over_sequential", be_ratio},
        {"preemption_latency_us", preemption},
        {"wrong_outputs", 0},
        {"be", json::array()}};
  };
  r.results.push_back(policy("exclusive", 2200.25, 1.0, 0.0, nullptr, nullptr));
  r.results.push_back(policy("translated", 2310.5, 1.05, 181.5, 1.6,
                             {{"n", 290}, {"p50", 6.5}, {"p99", 18.75}, {"max", 30.0}}));
  r.results.back()["priority_p99_over_rt_p99"] = 3.25;  // priority's RT p99 over translated's
  json poisson = policy("exclusive", 2400.0, 1.0, 0.0, nullptr, nullptr);
  poisson["arrivals"] = "poisson";
  r.results.push_back(poisson);
  const std::string text = render_text({r});
  // One row per result, its workload and arrivals named; no raw dump of the same results.
  EXPECT_THAT(text, HasSubstr("one/poisson"));
  EXPECT_THAT(text, Not(HasSubstr("policy=")));
  EXPECT_THAT(text, HasSubstr("disb: serving"));
  const auto at = text.find("\ntranslated ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string row = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  EXPECT_THAT(row, HasSubstr("2310.50"));
  EXPECT_THAT(row, HasSubstr("1.050x"));
  EXPECT_THAT(row, HasSubstr("1.600x"));
  EXPECT_THAT(row, HasSubstr("3.250x"));
  EXPECT_THAT(row, HasSubstr("18.75"));
  EXPECT_THAT(text, HasSubstr("priority / RT p99"));
  const auto ex = text.find("\nexclusive ");
  ASSERT_NE(ex, std::string::npos);
  EXPECT_THAT(text.substr(ex + 1, text.find('\n', ex + 1) - ex - 1), Not(HasSubstr("0.000x")));
  EXPECT_THAT(render_html({r}), HasSubstr("<h3>serving</h3>"));
  EXPECT_THAT(render_text({reef_receipt()}), Not(HasSubstr("serving")));
}

// A target a configuration was missing for has met = null and value = null: shown as not judged
// (bench io writes those, with "limit" for its bound), never as missed and never a crash.
TEST(report, a_target_not_judged_is_shown_as_such) {
  receipt r = overhead_receipt();
  r.settings["targets"] = json::array(
      {{{"name", "host-graph matmul6: |mean / peer - 1|"},
        {"limit", 0.03},
        {"met", nullptr},
        {"value", nullptr}},
       {{"name", "while empty: mean / peer"}, {"limit", 1.1}, {"met", true}, {"value", 0.98}}});
  const std::string text = render_text({r});
  EXPECT_THAT(text, HasSubstr("-       host-graph matmul6: |mean / peer - 1|: not run (target "));
  EXPECT_THAT(text, HasSubstr("met     while empty: mean / peer: 0.98 (target 1.10"));
}

TEST(report, html_tables_co_scheduling_policies_and_their_targets) {
  const std::string html = render_html({reef_receipt()});
  EXPECT_THAT(html, HasSubstr("<h3>co-scheduling</h3>"));
  EXPECT_THAT(html, HasSubstr("<td>preempt</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">1.063x</td>"));
  EXPECT_THAT(html, HasSubstr("<h3>targets</h3>"));
  EXPECT_EQ(count(html, "<td class=\"missed\">missed</td>"), 2U);  // a row per target
  EXPECT_EQ(count(html, "<td class=\"met\">met</td>"), 1U);
  EXPECT_THAT(render_html({overhead_receipt()}), Not(HasSubstr("co-scheduling")));
}

// Targets: a table of verdict, name, value, target and notes (the context beside a ratio or a
// latency); not repeated in the settings, and never as raw JSON.
TEST(report, html_tables_the_targets_with_their_verdicts_and_notes) {
  const std::string html = render_html({reef_receipt()});
  EXPECT_THAT(html, HasSubstr("<th>verdict</th><th>name</th><th class=\"num\">value</th><th "
                              "class=\"num\">target</th><th>notes</th>"));
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"missed\">missed</td><td>preempt: RT p99 / "
                              "exclusive p99</td><td class=\"num\">1.063</td><td "
                              "class=\"num\">1.05</td><td>undisturbed 1.051; in-loop "
                              "1.071</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"num\">21.5</td><td class=\"num\">20.00</td><td>from "
                              "the sample 11.75</td>"));
  EXPECT_THAT(html, Not(HasSubstr("<ul")));
  EXPECT_THAT(html, Not(HasSubstr("<th>targets</th>")));  // not in the settings table too
  EXPECT_THAT(html, Not(HasSubstr("{\"")));
  // Not judged (met null, value null): neither met nor missed.
  receipt r = overhead_receipt();
  r.settings["targets"] = json::array({{{"name", "host-graph matmul6: |mean / peer - 1|"},
                                        {"limit", 0.03},
                                        {"met", nullptr},
                                        {"value", nullptr}}});
  EXPECT_THAT(render_html({r}), HasSubstr("<td class=\"unjudged\">not judged</td><td>host-graph "
                                          "matmul6: |mean / peer - 1|</td><td class=\"num\">not "
                                          "run</td><td class=\"num\">0.03</td><td></td>"));
}

TEST(report, text_of_nothing) { EXPECT_EQ(render_text({}), "no receipts\n"); }

// ---- HTML --------------------------------------------------------------------------------------

TEST(report, html_is_one_self_contained_page) {
  const std::string html = render_html({receipt::read(fixture), overhead_receipt()});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  EXPECT_EQ(count(html, "<svg"), 4U);  // one per (workload, contention) group
  EXPECT_EQ(count(html, "</svg>"), 4U);
  EXPECT_EQ(count(html, "class=\"box\""), 8U);  // one per mode and group
  EXPECT_EQ(count(html, "<table"), count(html, "</table>"));
  EXPECT_EQ(count(html, "<tr>"), count(html, "</tr>"));
  EXPECT_EQ(count(html, "<section"), count(html, "</section>"));
  EXPECT_EQ(count(html, "<div"), count(html, "</div>"));
  EXPECT_EQ(count(html, "<g "), count(html, "</g>"));
  // Nothing to fetch and nothing to run.
  EXPECT_THAT(html, Not(HasSubstr("http")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("href=")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("url(")));
}

TEST(report, html_header_shows_each_receipt) {
  const std::string html = render_html({receipt::read(fixture), overhead_receipt()});
  EXPECT_THAT(html, HasSubstr("<h2>io</h2>"));
  EXPECT_THAT(html, HasSubstr("<h2>overhead</h2>"));
  EXPECT_THAT(html, HasSubstr("resident bench io --modes while,host-graph"));
  EXPECT_THAT(html, HasSubstr("abc1234def56"));
  EXPECT_THAT(html, HasSubstr("2026-11-30T10:00:00Z"));
  EXPECT_THAT(html, HasSubstr("NVIDIA H200, 132 SMs, compute capability 9.0, driver 580.159.04, "
                              "CUDA runtime 13.0, SM clocks seen 1980, 1755 MHz"));
  EXPECT_THAT(html, HasSubstr("16 CPUs, kernel 6.18.0-resident-test, AMD EPYC 9654"));
  EXPECT_THAT(html, HasSubstr("<tr><th>rate_hz</th><td>1000</td></tr>"));
  EXPECT_THAT(html, HasSubstr("workload matmul6, contention stress"));
  // The other receipt's fields become a table.
  EXPECT_THAT(html, HasSubstr("<th>median_ns</th>"));
  EXPECT_THAT(html, HasSubstr("<th>relative_error</th>"));
  EXPECT_THAT(html, HasSubstr("host sync"));
}

// Settings: a key/value table; a nested object a nested table, an array of objects a table with
// the union of their keys as columns, a flat array its values; no raw JSON anywhere.
TEST(report, html_shows_settings_as_tables_not_json) {
  receipt r = overhead_receipt();
  r.settings = {{"rate_hz", 1000},
                {"cpus", {{"loop", 13}, {"sensor", 15}}},
                {"modes", {"while", "tail"}},
                {"merged_from",
                 {{{"command", "part <one>"}, {"git_commit", "abc"}},
                  {{"command", "part two"}, {"started_at", "now"}}}},
                {"empty", json::object()}};
  const std::string html = render_html({r});
  EXPECT_THAT(html, HasSubstr("<tr><th>settings</th><td><table class=\"kv\">"));
  EXPECT_THAT(html, HasSubstr("<tr><th>cpus</th><td><table class=\"kv\"><tbody>\n<tr><th>loop</th>"
                              "<td>13</td></tr>\n<tr><th>sensor</th><td>15</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>modes</th><td>while, tail</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>merged_from</th><td><table class=\"list\">\n<thead><tr>"
                              "<th>command</th><th>git_commit</th><th>started_at</th></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>part &lt;one&gt;</td><td>abc</td><td></td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>part two</td><td></td><td>now</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><th>empty</th><td>(empty)</td></tr>"));
  EXPECT_THAT(html, Not(HasSubstr("{\"")));
  EXPECT_THAT(html, Not(HasSubstr("[\"")));
  EXPECT_EQ(count(html, "<table"), count(html, "</table>"));
  // The same for a bare value and an array of values and objects mixed.
  EXPECT_EQ(detail::value_html(json("a<b")), "a&lt;b");
  EXPECT_EQ(detail::value_html(json::array({1, 2.5, "x"})), "1, 2.50, x");
  EXPECT_THAT(detail::value_html(json::array({{{"k", 1}}, 7})),
              HasSubstr("<th>k</th><th>value</th>"));
  EXPECT_THAT(detail::value_html(json{{"a", 1}, {"b", 2}}, {"a"}), Not(HasSubstr("<th>a</th>")));
}

// A mode that ran more than once in one group (bench io's repeats) is labelled run k of n in
// the table and the box plot; modes that ran once keep their name.
TEST(report, html_labels_repeated_runs_of_a_mode) {
  receipt r = receipt::read(fixture);
  r.results.push_back(r.results[0]);  // empty / none / while, a second time
  const std::string html = render_html({r});
  EXPECT_EQ(count(html, "<td>while (run 1 of 2)</td>"), 1U);
  EXPECT_EQ(count(html, "<td>while (run 2 of 2)</td>"), 1U);
  EXPECT_EQ(count(html, "text-anchor=\"end\">while (run 1 of 2)</text>"), 1U);
  EXPECT_EQ(count(html, "text-anchor=\"end\">while (run 2 of 2)</text>"), 1U);
  EXPECT_EQ(count(html, "<td>host-graph</td>"), 4U);  // once in each group
  EXPECT_EQ(count(html, "<td>while</td>"), 3U);       // the other three groups
  EXPECT_EQ(count(html, "class=\"box\""), 9U);
  EXPECT_EQ(detail::run_labels({"a", "b", "a", "c"}),
            (std::vector<std::string>{"a (run 1 of 2)", "b", "a (run 2 of 2)", "c"}));
  EXPECT_TRUE(detail::run_labels({}).empty());
}

// Every table sits in a box that scrolls sideways, so a wide table keeps the page's width.
TEST(report, html_tables_scroll_inside_the_page) {
  const std::string html =
      render_html({receipt::read(fixture), overhead_receipt(), reef_receipt(), loops_receipt()});
  EXPECT_THAT(html, HasSubstr(".table-scroll{overflow-x:auto"));
  const std::string wrap = "<div class=\"table-scroll\">\n<table";
  // Top-level tables: meta (one per receipt) and the results, slowest, policy and target tables.
  std::size_t top_level = 0;
  for (const char* cls : {"meta", "results", "targets"}) {
    top_level += count(html, std::string("<table class=\"") + cls + "\"");
  }
  EXPECT_EQ(count(html, wrap), top_level);
  EXPECT_GT(top_level, 10U);
}

TEST(report, html_uses_a_log_axis_only_where_max_over_min_exceeds_100) {
  const std::string html = render_html({receipt::read(fixture)});
  // empty/stress spans 3.71 .. 1450.3 (391x); the others 13x, 2.4x and 43x.
  EXPECT_EQ(count(html, "log scale"), 1U);
  EXPECT_EQ(count(html, "latency (&#181;s)"), 3U);
  report_options linear;
  linear.scale = axis_scale::linear;
  EXPECT_EQ(count(render_html({receipt::read(fixture)}, linear), "log scale"), 0U);
  report_options log;
  log.scale = axis_scale::log;
  EXPECT_EQ(count(render_html({receipt::read(fixture)}, log), "log scale"), 4U);
}

TEST(report, html_escapes_all_text) {
  receipt r = receipt::read(fixture);
  r.results[0]["mode"] = "<script>alert('x')</script>";
  r.command = "resident bench io --tag \"a&b\"";
  const std::string html = render_html({r});
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("--tag &quot;a&amp;b&quot;"));
  EXPECT_EQ(detail::html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(report, html_of_nothing_is_still_a_page) {
  const std::string html = render_html({});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_THAT(html, HasSubstr("No receipts."));
  EXPECT_EQ(count(html, "<svg"), 0U);
}

// ---- geometry ----------------------------------------------------------------------------------

TEST(report, linear_axis_has_round_ticks_covering_the_range) {
  const detail::axis a = detail::choose_axis(3.62, 48.2);
  EXPECT_FALSE(a.log);
  EXPECT_LE(a.lo, 3.62);
  EXPECT_GE(a.hi, 48.2);
  // range 44.58 / 5 = 8.9 -> step 10: 0, 10, ..., 50
  EXPECT_EQ(a.ticks, (std::vector<double>{0, 10, 20, 30, 40, 50}));
  EXPECT_DOUBLE_EQ(a.lo, 0.0);
  EXPECT_DOUBLE_EQ(a.hi, 50.0);
  // 0.3 .. 0.9: step 0.2 (0.12 rounded up) -> 0.2, 0.4, 0.6, 0.8, 1.0 without rounding noise
  const detail::axis small = detail::choose_axis(0.3, 0.9);
  ASSERT_FALSE(small.ticks.empty());
  EXPECT_DOUBLE_EQ(small.ticks.front(), 0.2);
  EXPECT_DOUBLE_EQ(small.ticks.back(), 1.0);
}

TEST(report, log_axis_rule_and_decades) {
  const detail::axis a = detail::choose_axis(3.71, 1450.3);  // 391x > 100
  EXPECT_TRUE(a.log);
  EXPECT_EQ(a.ticks, (std::vector<double>{1, 10, 100, 1000, 10000}));
  EXPECT_FALSE(detail::choose_axis(41.9, 1822.5).log);  // 43x
  EXPECT_FALSE(detail::choose_axis(1.0, 100.0).log);    // exactly 100x: linear
  EXPECT_FALSE(detail::choose_axis(3.71, 1450.3, axis_scale::linear).log);
  const detail::axis forced = detail::choose_axis(20.0, 50.0, axis_scale::log);
  EXPECT_TRUE(forced.log);
  EXPECT_EQ(forced.ticks, (std::vector<double>{10, 20, 50, 100}));
  EXPECT_FALSE(detail::choose_axis(0.0, 50.0, axis_scale::log).log);  // no log of 0
}

TEST(report, a_single_value_gets_a_usable_axis) {
  const detail::axis a = detail::choose_axis(5.0, 5.0);
  EXPECT_LT(a.lo, 5.0);
  EXPECT_GT(a.hi, 5.0);
  EXPECT_GE(a.ticks.size(), 2U);
}

TEST(report, axis_position_maps_the_ends_and_the_middle) {
  const detail::axis lin = detail::choose_axis(0.0, 100.0, axis_scale::linear);
  EXPECT_DOUBLE_EQ(detail::axis_position(lin, lin.lo, 10, 110), 10.0);
  EXPECT_DOUBLE_EQ(detail::axis_position(lin, lin.hi, 10, 110), 110.0);
  EXPECT_DOUBLE_EQ(detail::axis_position(lin, 50.0, 10, 110), 60.0);
  const detail::axis log = detail::choose_axis(1.0, 100.0, axis_scale::log);
  EXPECT_NEAR(detail::axis_position(log, 10.0, 0, 200), 100.0, 1e-9);  // one of two decades
}

TEST(report, box_geometry_of_every_fixture_result_is_monotone) {
  const receipt r = receipt::read(fixture);
  for (const auto scale : {axis_scale::automatic, axis_scale::linear, axis_scale::log}) {
    for (const auto& result : r.results) {
      const auto v = detail::box_from_result(result);
      ASSERT_TRUE(v.has_value());
      const detail::axis a = detail::choose_axis(v->min, v->max, scale);
      const detail::box_values p = detail::box_positions(a, *v, 100.0, 700.0);
      const std::vector<double> xs{p.min, p.whisker_low,  p.p25, p.p50,
                                   p.p75, p.whisker_high, p.max};
      EXPECT_TRUE(std::is_sorted(xs.begin(), xs.end())) << result.dump();
      EXPECT_GE(p.min, 100.0);
      EXPECT_LE(p.max, 700.0);
      EXPECT_GE(p.mean, p.min);
      EXPECT_LE(p.mean, p.max);
    }
  }
}

TEST(report, box_from_result_needs_the_core_fields) {
  EXPECT_FALSE(detail::box_from_result(json{{"mean_us", 1.0}}).has_value());
  const auto flat = detail::box_from_result(
      json{{"mean_us", 2.0}, {"p50_us", 2.0}, {"min_us", 1.0}, {"max_us", 3.0}});
  ASSERT_TRUE(flat.has_value());
  EXPECT_DOUBLE_EQ(flat->p25, 2.0);  // no quartiles: a flat box at the median
  EXPECT_DOUBLE_EQ(flat->whisker_low, 1.0);
  EXPECT_DOUBLE_EQ(flat->whisker_high, 3.0);
}

// Parses the emitted SVG: in every mode group the whiskers, box, median and markers sit in order.
TEST(report, emitted_svg_coordinates_are_in_box_plot_order) {
  const std::string html = render_html({receipt::read(fixture)});
  const std::regex group(R"(<g class="mode">([\s\S]*?)</g>)");
  const std::regex whisker(
      R"re(<line class="whisker" x1="([-\d.]+)" y1="[-\d.]+" x2="([-\d.]+)")re");
  const std::regex box(
      R"re(<rect class="box" x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)")re");
  const std::regex median(
      R"re(<line class="median" x1="([-\d.]+)" y1="([-\d.]+)" x2="[-\d.]+" y2="([-\d.]+)")re");
  const std::regex mean(R"re(<polygon class="mean" points="([-\d.]+),([-\d.]+))re");
  const std::regex extreme(R"re(<path class="extreme" d="M([-\d.]+) )re");
  std::size_t groups = 0;
  for (auto g = std::sregex_iterator(html.begin(), html.end(), group); g != std::sregex_iterator();
       ++g, ++groups) {
    const std::string body = (*g)[1];
    std::vector<std::pair<double, double>> whiskers;
    for (auto w = std::sregex_iterator(body.begin(), body.end(), whisker);
         w != std::sregex_iterator(); ++w) {
      whiskers.emplace_back(std::stod((*w)[1]), std::stod((*w)[2]));
    }
    std::vector<double> extremes;
    for (auto e = std::sregex_iterator(body.begin(), body.end(), extreme);
         e != std::sregex_iterator(); ++e) {
      extremes.push_back(std::stod((*e)[1]) + 4.0);  // the cross is drawn from x - 4
    }
    std::smatch b;
    std::smatch m;
    std::smatch d;
    ASSERT_TRUE(std::regex_search(body, b, box));
    ASSERT_TRUE(std::regex_search(body, m, median));
    ASSERT_TRUE(std::regex_search(body, d, mean));
    ASSERT_EQ(whiskers.size(), 2U);
    ASSERT_EQ(extremes.size(), 2U);
    const double box_left = std::stod(b[1]);
    const double box_right = box_left + std::stod(b[3]);
    const double box_top = std::stod(b[2]);
    const double box_bottom = box_top + std::stod(b[4]);
    const double median_x = std::stod(m[1]);
    // min <= lower whisker end <= box left <= median <= box right <= upper whisker end <= max
    const std::vector<double> xs{extremes[0],       whiskers[0].first,  whiskers[0].second,
                                 box_left,          median_x,           box_right,
                                 whiskers[1].first, whiskers[1].second, extremes[1]};
    for (std::size_t i = 1; i < xs.size(); ++i) {
      EXPECT_LE(xs[i - 1], xs[i] + 0.11) << "group " << groups << " point " << i;  // 1-decimal
    }
    EXPECT_NEAR(whiskers[0].second, box_left, 0.11);
    EXPECT_NEAR(whiskers[1].first, std::stod(b[1]) + std::stod(b[3]), 1.1);  // >= 1 px box
    // The median spans the box vertically; the mean diamond's top is inside it.
    EXPECT_DOUBLE_EQ(std::stod(m[2]), box_top);
    EXPECT_DOUBLE_EQ(std::stod(m[3]), box_bottom);
    EXPECT_GT(std::stod(d[2]), box_top);
    EXPECT_LT(std::stod(d[2]), box_bottom);
  }
  EXPECT_EQ(groups, 8U);
}

}  // namespace
}  // namespace resident::measure
