// bench loops without a GPU: flags, the partition size it picks, and the targets it evaluates.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/loops/loops_bench.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

std::string error_of(const loops_settings& s) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(loops_settings, defaults_follow_the_issue_and_bad_flags_are_clear) {
  loops_settings s;
  EXPECT_EQ(error_of(s), "");
  EXPECT_EQ(s.counts, (std::vector<int>{1, 5, 10, 15, 20}));
  s.make_quick();
  EXPECT_EQ(error_of(s), "");
  auto with = [](auto change) {
    loops_settings x;
    change(x);
    return error_of(x);
  };
  EXPECT_THAT(with([](loops_settings& x) { x.counts = {0}; }), HasSubstr("1..64, got 0"));
  EXPECT_THAT(with([](loops_settings& x) { x.modes = {"fast"}; }), HasSubstr("fast"));
  EXPECT_THAT(with([](loops_settings& x) { x.contention = {"heavy"}; }),
              HasSubstr("unknown contention 'heavy'"));
  EXPECT_THAT(with([](loops_settings& x) { x.workload = "matmul7"; }),
              HasSubstr("unknown workload 'matmul7'"));
  EXPECT_THAT(with([](loops_settings& x) { x.workload = "matmul8x2"; }),
              HasSubstr("16 <= N <= 4096"));
  EXPECT_EQ(with([](loops_settings& x) { x.workload = "matmul256x2"; }), "");
  EXPECT_THAT(with([](loops_settings& x) { x.rate_hz = 0; }), HasSubstr("--rate"));
  EXPECT_THAT(with([](loops_settings& x) { x.samples = 0; }), HasSubstr("--samples"));
  EXPECT_THAT(with([](loops_settings& x) { x.host_cores = -1; }), HasSubstr("--host-cores"));
  EXPECT_THAT(with([](loops_settings& x) { x.disturbance_ns = 0; }),
              HasSubstr("--disturbance-ns must be positive"));
  EXPECT_EQ(s.observers, 2);
  EXPECT_THAT(with([](loops_settings& x) { x.observers = 0; }), HasSubstr("--observers"));
  EXPECT_THAT(with([](loops_settings& x) { x.observers = 5; }), HasSubstr("1..4, got 5"));
  EXPECT_EQ(s.devices, 1);
  EXPECT_THAT(with([](loops_settings& x) { x.devices = 0; }), HasSubstr("--devices must be in"));
  EXPECT_THAT(with([](loops_settings& x) { x.devices = 17; }), HasSubstr("1..16, got 17"));
}

TEST(loops_settings, backend_defaults_to_green_and_takes_mps) {
  loops_settings s;
  EXPECT_EQ(s.backend, "green");
  s.backend = "mps";
  EXPECT_EQ(error_of(s), "");
  EXPECT_EQ(partition::parse_partition_backend("green"), partition::partition_backend::green);
  EXPECT_EQ(partition::parse_partition_backend("mps"), partition::partition_backend::mps);
  EXPECT_EQ(partition::to_string(partition::partition_backend::mps), "mps");
}

TEST(loops_settings, an_unknown_backend_names_the_flag_the_value_and_the_choices) {
  loops_settings s;
  s.backend = "MPS";  // names are lower case
  const std::string error = error_of(s);
  EXPECT_THAT(error, HasSubstr("--backend: unknown partition backend 'MPS'"));
  EXPECT_THAT(error, HasSubstr("green"));
  EXPECT_THAT(error, HasSubstr("mps"));
  s.backend = "";
  EXPECT_THAT(error_of(s), HasSubstr("unknown partition backend ''"));
}

TEST(loops_partition, mps_budgets_are_equal_even_shares) {
  EXPECT_EQ(choose_mps_budget(132, 1), 132);
  EXPECT_EQ(choose_mps_budget(132, 5), 26);   // 26.4
  EXPECT_EQ(choose_mps_budget(132, 10), 12);  // 13, rounded down to even: MPS would grant 14
  EXPECT_EQ(choose_mps_budget(132, 20), 6);
  EXPECT_EQ(choose_mps_budget(132, 64), 2);
  EXPECT_EQ(choose_mps_budget(3, 2), 1);
  EXPECT_THROW((void)choose_mps_budget(8, 9), std::invalid_argument);
}

TEST(loops_partition, picks_the_largest_equal_share_in_whole_groups) {
  // H200: 132 SMs, co-scheduled groups of 8 (min 8), fine groups of 2 (min 2).
  const auto ten = choose_partition(132, 10, 8, 8, 2, 2);
  EXPECT_EQ(ten.sms, 8);  // 13 per loop, rounded down to whole groups of 8
  EXPECT_FALSE(ten.ignore_coscheduling);
  const auto sixteen = choose_partition(132, 16, 8, 8, 2, 2);
  EXPECT_EQ(sixteen.sms, 8);
  // 20 loops: 6 each is below the co-scheduled minimum, so the finer split is used.
  const auto twenty = choose_partition(132, 20, 8, 8, 2, 2);
  EXPECT_EQ(twenty.sms, 6);
  EXPECT_TRUE(twenty.ignore_coscheduling);
  EXPECT_THROW((void)choose_partition(132, 100, 8, 8, 2, 2), std::invalid_argument);
}

nlohmann::json result(const std::string& mode, int loops, double p999, double max, double sd,
                      int host_cores = 0) {
  return {{"mode", mode},
          {"loops", loops},
          {"contention", "none"},
          {"p999_us", p999},
          {"max_us", max},
          {"stddev_us", sd},
          {"host_cores_for_loops", host_cores}};
}

TEST(loops_targets, compare_each_count_with_five_loops_and_host_graph_at_ten) {
  const nlohmann::json results = nlohmann::json::array(
      {result("while", 5, 100, 200, 2), result("while", 10, 140, 290, 3.9),
       result("while", 20, 160, 200, 2), result("host-graph", 10, 1500, 3000, 40, 10)});
  std::map<std::string, bool> met;
  for (const auto& t : loops_targets(results)) met[t["name"].get<std::string>()] = t["met"];
  EXPECT_TRUE(met.at("while p99.9 at 10 loops vs 5 <= 1.5x"));              // 1.4
  EXPECT_TRUE(met.at("while max at 10 loops vs 5 <= 1.5x"));                // 1.45
  EXPECT_TRUE(met.at("while stddev at 10 loops vs 5 <= 2x"));               // 1.95
  EXPECT_FALSE(met.at("while p99.9 at 20 loops vs 5 <= 1.5x"));             // 1.6
  EXPECT_TRUE(met.at("host-graph p99.9 / while p99.9 at 10 loops >= 10"));  // 10.7
  EXPECT_TRUE(met.at("host cores reserved for 10 while loops == 0"));
  EXPECT_EQ(met.count("while p99.9 at 15 loops vs 5 <= 1.5x"), 0U);  // not measured: absent
}

}  // namespace
}  // namespace resident::bench
