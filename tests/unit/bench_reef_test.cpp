// bench reef without a GPU: flags, the policy list, and the targets it evaluates.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "bench/reef_bench.hpp"

namespace resident::bench {
namespace {

using ::testing::HasSubstr;

std::string error_of(const reef_settings& s) {
  try {
    s.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

TEST(reef_settings, defaults_run_every_policy_and_bad_flags_are_clear) {
  reef_settings s;
  EXPECT_EQ(error_of(s), "");
  EXPECT_EQ(s.policies, reef_policies());
  EXPECT_EQ(reef_policies().size(), 8U);
  EXPECT_TRUE(s.be_checkpoint);
  // The measured defaults (docs/sched.md): strided bounded grids of 4 per SM, the RT model in L2.
  EXPECT_EQ(s.be_bounded_grid, 4);
  EXPECT_FALSE(s.be_bounded_grid_counter);
  EXPECT_TRUE(s.rt_l2_persist);
  s.make_quick();
  EXPECT_EQ(error_of(s), "");
  auto with = [](auto change) {
    reef_settings x;
    change(x);
    return error_of(x);
  };
  EXPECT_THAT(with([](auto& x) {
                x.policies = {"preempt", "fifo"};
              }),
              HasSubstr("unknown policy 'fifo'; policies: exclusive, sequential"));
  EXPECT_THAT(with([](auto& x) { x.policies.clear(); }), HasSubstr("--policies is empty"));
  EXPECT_THAT(with([](auto& x) { x.arrival = "bursty"; }), HasSubstr("periodic or poisson"));
  EXPECT_THAT(with([](auto& x) { x.rate_hz = 0; }), HasSubstr("--rate"));
  EXPECT_THAT(with([](auto& x) { x.rate_hz = -5; }), HasSubstr("--rate"));
  EXPECT_THAT(with([](auto& x) { x.samples = 0; }), HasSubstr("--samples"));
  EXPECT_THAT(with([](auto& x) { x.be_model = "resnet"; }), HasSubstr("mlp or cnn"));
  EXPECT_THAT(with([](auto& x) { x.be_window = 0; }), HasSubstr("--be-window"));
  EXPECT_THAT(with([](auto& x) { x.be_checkpoint_min_steps = 0; }),
              HasSubstr("--be-checkpoint-min-steps"));
  EXPECT_THAT(with([](auto& x) { x.be_clients = 9; }), HasSubstr("--be-clients"));
  EXPECT_THAT(with([](auto& x) { x.pad_tolerance = -0.1; }), HasSubstr("--pad-tolerance"));
  EXPECT_THAT(with([](auto& x) { x.rt_out_copy = "dma"; }), HasSubstr("--rt-out-copy"));
  EXPECT_THAT(with([](auto& x) { x.rt_arena = false; }), HasSubstr("--rt-arena on"));
  EXPECT_EQ(with([](auto& x) {
              x.rt_arena = false;
              x.rt_l2_persist = false;
            }),
            "");
  EXPECT_THAT(with([](auto& x) { x.be_bounded_grid = -1; }), HasSubstr("--be-bounded-grid"));
}

nlohmann::json result(const std::string& policy, double p99, double preempt_p99, double gflops) {
  return {{"policy", policy},
          {"p99_us", p99},
          {"preemption_latency", {{"p99_us", preempt_p99}}},
          {"be", {{"gflops", gflops}}}};
}

TEST(reef_targets, compare_preemption_with_exclusive_and_sequential) {
  const nlohmann::json results = nlohmann::json::array(
      {result("exclusive", 100, 10, 0), result("sequential", 180, 25, 1000),
       result("preempt", 104, 19, 900), result("preempt-pad", 110, 21, 1600)});
  std::map<std::string, std::pair<double, bool>> got;
  for (const auto& t : reef_targets(results)) {
    got[t["name"].get<std::string>()] = {t["value"].get<double>(), t["met"].get<bool>()};
  }
  EXPECT_TRUE(got.at("preempt: preemption latency p99 (us)").second);       // 19 <= 20
  EXPECT_FALSE(got.at("preempt-pad: preemption latency p99 (us)").second);  // 21
  EXPECT_DOUBLE_EQ(got.at("preempt: RT p99 / exclusive p99").first, 1.04);
  EXPECT_TRUE(got.at("preempt: RT p99 / exclusive p99").second);
  EXPECT_FALSE(got.at("preempt-pad: RT p99 / exclusive p99").second);     // 1.1
  EXPECT_FALSE(got.at("preempt: BE throughput / sequential").second);     // 0.9
  EXPECT_TRUE(got.at("preempt-pad: BE throughput / sequential").second);  // 1.6
  // Without the baselines only the latency targets can be judged.
  const auto alone = reef_targets(nlohmann::json::array({result("preempt", 104, 19, 900)}));
  ASSERT_EQ(alone.size(), 1U);
  EXPECT_EQ(alone[0]["name"], "preempt: preemption latency p99 (us)");
}

}  // namespace
}  // namespace resident::bench
