// bench reef without a GPU: flags, the policy list, and the targets it evaluates.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "bench/reef/reef_bench.hpp"

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

TEST(reef_settings, defaults_run_every_policy_and_bad_knobs_are_named) {
  reef_settings s;
  EXPECT_EQ(error_of(s), "");
  EXPECT_EQ(s.policies, reef_policies());
  EXPECT_EQ(reef_policies().size(), 11U);
  // The baseline again at the end: how far it drifted over the run.
  EXPECT_EQ(s.policies.front(), "exclusive");
  EXPECT_EQ(s.policies.back(), "exclusive-end");
  // The RT loop alone in the split's partition, the baseline for green-split and preempt-sm.
  EXPECT_NE(std::find(s.policies.begin(), s.policies.end(), "exclusive-split"), s.policies.end());
  EXPECT_EQ(s.be_window_sm, 2U);     // spatial launches hand cut blocks back: two in flight
  EXPECT_EQ(s.be_window_split, 2U);  // green-split never preempts: two in flight
  EXPECT_TRUE(s.split_be_rest);      // ... on every SM the RT partition leaves
  EXPECT_EQ(s.split_sms, 40);        // five of the H200's driver groups for the RT loop
  EXPECT_EQ(s.be_rt_sm_blocks, 3);   // ... and leave room for one RT block on each RT SM
  EXPECT_TRUE(s.be_checkpoint);
  // The measured defaults (docs/findings.md): strided bounded grids of 4 per SM, the RT model in
  // L2.
  EXPECT_EQ(s.be_bounded_grid, 4);
  EXPECT_FALSE(s.be_bounded_grid_counter);
  EXPECT_TRUE(s.rt_l2_persist);
  // ... and its kernels joined by programmatic edges (the drift and 2.4 us of the body gone).
  EXPECT_TRUE(s.rt_pdl);
  // The placement record costs the RT kernels time: only on request, or with the trace.
  EXPECT_FALSE(s.rt_placement);
  EXPECT_FALSE(s.records_placement());
  {
    reef_settings traced;
    traced.be_trace = true;
    EXPECT_TRUE(traced.records_placement());
    traced.be_trace = false;
    traced.rt_placement = true;
    EXPECT_TRUE(traced.records_placement());
  }
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
  EXPECT_THAT(with([](auto& x) { x.policies.clear(); }),
              HasSubstr("--policies (policies) is empty"));
  EXPECT_THAT(with([](auto& x) { x.arrival = "bursty"; }), HasSubstr("periodic or poisson"));
  EXPECT_THAT(with([](auto& x) { x.rate_hz = 0; }),
              HasSubstr("--rate (rate_hz) must be in (0, 20000] Hz"));
  EXPECT_THAT(with([](auto& x) { x.rate_hz = -5; }), HasSubstr("--rate"));
  EXPECT_THAT(with([](auto& x) { x.samples = 0; }),
              HasSubstr("--samples (samples) must be positive"));
  EXPECT_EQ(s.disturbance_ns, 2000);  // bench io's threshold
  EXPECT_THAT(with([](auto& x) { x.disturbance_ns = 0; }),
              HasSubstr("disturbance_ns must be positive, got 0"));
  EXPECT_THAT(with([](auto& x) { x.be_model = "resnet"; }), HasSubstr("mlp, mlp-fused or cnn"));
  EXPECT_EQ(with([](auto& x) { x.be_model = "mlp-fused"; }), "");
  EXPECT_THAT(with([](auto& x) { x.be_window = 0; }),
              HasSubstr("be_window must be in 1..8, got 0"));
  EXPECT_THAT(with([](auto& x) { x.be_window_sm = 9; }),
              HasSubstr("be_window_sm must be in 1..8, got 9"));
  EXPECT_THAT(with([](auto& x) { x.be_window_split = 0; }),
              HasSubstr("be_window_split must be in 1..8"));
  EXPECT_THAT(with([](auto& x) { x.be_rt_sm_blocks = -1; }),
              HasSubstr("be_rt_sm_blocks must be in 0..64 (0: no limit), got -1"));
  EXPECT_EQ(with([](auto& x) { x.be_rt_sm_blocks = 0; }), "");  // no limit
  EXPECT_THAT(with([](auto& x) { x.rt_raise = "early"; }),
              HasSubstr("rt_raise must be detect or after-copy, got 'early'"));
  EXPECT_EQ(with([](auto& x) { x.rt_raise = "after-copy"; }), "");
  EXPECT_FALSE(s.raises_after_copy());  // detect by default
  EXPECT_EQ(s.rt_raise_lead_us, 10.0);  // preempt-lead's lead
  EXPECT_THAT(with([](auto& x) { x.rt_raise_lead_us = -1; }),
              HasSubstr("rt_raise_lead_us must be positive"));
  EXPECT_THAT(with([](auto& x) { x.rt_raise_lead_us = 0; }), HasSubstr("must be positive"));
  EXPECT_EQ(with([](auto& x) { x.rt_raise_lead_us = 5; }), "");
  // Poisson arrivals: preempt-lead has nothing to raise ahead of and is left out, not refused.
  EXPECT_EQ(with([](auto& x) { x.arrival = "poisson"; }), "");
  EXPECT_THAT(with([](auto& x) {
                x.rt_raise_lead_us = 125;  // half the 4 kHz period
                x.rate_hz = 4000;
              }),
              HasSubstr("under half the RT period"));
  EXPECT_THAT(with([](auto& x) { x.be_checkpoint_min_steps = 0; }),
              HasSubstr("be_checkpoint_min_steps must be at least 1"));
  EXPECT_THAT(with([](auto& x) { x.be_clients = 9; }),
              HasSubstr("be_clients must be in 1..8, got 9"));
  EXPECT_THAT(with([](auto& x) { x.pad_tolerance = -0.1; }),
              HasSubstr("pad_tolerance must be in [0, 1]"));
  EXPECT_THAT(with([](auto& x) { x.pad_place_wait_us = -1; }),
              HasSubstr("pad_place_wait_us must be in [0, 1000]"));
  EXPECT_THAT(with([](auto& x) { x.pad_place_wait_us = 5000; }),
              HasSubstr("pad_place_wait_us must be in [0, 1000]"));
  EXPECT_EQ(with([](auto& x) { x.pad_place_wait_us = 0; }), "");
  EXPECT_THAT(with([](auto& x) { x.rt_out_copy = "dma"; }),
              HasSubstr("rt_out_copy must be memcpy or kernel, got 'dma'"));
  EXPECT_THAT(with([](auto& x) { x.rt_arena = false; }),
              HasSubstr("rt_l2_persist needs rt_arena on"));
  EXPECT_EQ(with([](auto& x) {
              x.rt_arena = false;
              x.rt_l2_persist = false;
            }),
            "");
  EXPECT_THAT(with([](auto& x) { x.be_bounded_grid = -1; }),
              HasSubstr("be_bounded_grid must be in 0..64"));
}

// split_sms against the device (before any policy runs): an H200's 132 SMs, of which the
// driver hands out 15 whole groups of 8 (the other 12 SMs form no group).
TEST(reef_settings, only_the_preemptive_policies_raise_ahead_of_the_sample) {
  reef_settings s;
  s.rate_hz = 8000;
  EXPECT_EQ(s.period_ns(), 125'000U);
  EXPECT_EQ(s.raise_lead_ns("preempt-lead"), 10'000U);
  s.rt_raise_lead_us = 5;
  EXPECT_EQ(s.raise_lead_ns("preempt-lead"), 5'000U);
  // Every other policy raises when the sample comes: sequential must not lose the lead to the
  // word, and preempt, preempt-pad and preempt-sm stay REEF's raise on arrival.
  for (const char* p :
       {"exclusive", "sequential", "multi-stream", "priority", "green-split", "exclusive-split",
        "preempt", "preempt-pad", "preempt-sm", "exclusive-end"}) {
    EXPECT_EQ(s.raise_lead_ns(p), 0U) << p;
  }
  EXPECT_EQ(s.runnable_policies(), s.policies);
  s.arrival = "poisson";
  const auto runnable = s.runnable_policies();
  EXPECT_EQ(runnable.size(), s.policies.size() - 1);
  EXPECT_EQ(std::find(runnable.begin(), runnable.end(), "preempt-lead"), runnable.end());
}

TEST(reef_settings, split_sms_must_leave_the_split_policies_a_best_effort_partition) {
  auto check = [](std::vector<std::string> policies, int split_sms, int groups = 15) {
    reef_settings s;
    s.policies = std::move(policies);
    s.split_sms = split_sms;
    try {
      s.check_split(132, 8, groups);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(check(reef_policies(), 32), "");
  EXPECT_EQ(check(reef_policies(), 112), "");  // 14 groups for RT, 1 for BE
  // 120 SMs are all of the whole groups: green-split and exclusive-split would have no BE
  // partition (bench reef dereferenced the missing one and crashed once; then it let 120
  // through, counting 132 / 8 = 16 groups, and the split failed after the first policy).
  const std::string no_rest = check({"exclusive", "exclusive-split"}, 120);
  EXPECT_THAT(no_rest, HasSubstr("split_sms 120"));
  EXPECT_THAT(no_rest, HasSubstr("groups of 8 SMs, 120 of the device's 132 SMs"));
  EXPECT_THAT(no_rest, HasSubstr("at most 112"));
  EXPECT_THAT(check({"green-split"}, 113), HasSubstr("need at least 8 SMs for the BE partition"));
  // preempt-sm keeps BE on every SM: only the RT partition has to fit.
  EXPECT_EQ(check({"preempt-sm"}, 120), "");
  EXPECT_THAT(check({"preempt-sm"}, 121), HasSubstr("the RT partition needs 128 SMs"));
  // A device that does not say how many groups it has: every whole multiple of the alignment.
  EXPECT_EQ(check({"preempt-sm"}, 128, 0), "");
  EXPECT_THAT(check({"exclusive-split"}, 121, 0), HasSubstr("at most 120"));
  // Policies without a partition ignore the setting (and the device is not asked).
  EXPECT_EQ(check({"exclusive", "preempt"}, 500), "");
  reef_settings plain;
  plain.policies = {"exclusive", "preempt", "exclusive-end"};
  EXPECT_FALSE(plain.needs_partition());
  plain.policies.push_back("preempt-sm");
  EXPECT_TRUE(plain.needs_partition());
  EXPECT_TRUE(reef_settings{}.needs_partition());
}

nlohmann::json result(const std::string& policy, double p99, double preempt_p99, double gflops) {
  return {{"policy", policy},
          {"p99_us", p99},
          {"preemption_latency", {{"p99_us", preempt_p99}}},
          {"be", {{"gflops", gflops}}}};
}

TEST(reef_ratios, against_the_first_and_the_last_baseline_and_sequential) {
  auto with_stats = [](nlohmann::json r, double mean, double max) {
    r["mean_us"] = mean;
    r["max_us"] = max;
    return r;
  };
  nlohmann::json results =
      nlohmann::json::array({with_stats(result("exclusive", 100.0, 10.0, 0.0), 99.0, 120.0),
                             with_stats(result("sequential", 170.0, 12.0, 8000.0), 130.0, 200.0),
                             with_stats(result("preempt-sm", 106.0, 12.5, 10000.0), 104.0, 150.0),
                             with_stats(result("exclusive-end", 102.0, 10.1, 0.0), 100.5, 125.0)});
  results[0]["undisturbed_p99_us"] = 98.0;
  results[2]["undisturbed_p99_us"] = 103.0;
  reef_ratios(results);
  const nlohmann::json& sm = results[2];
  EXPECT_DOUBLE_EQ(sm["rt_undisturbed_p99_over_exclusive"].get<double>(), 103.0 / 98.0);
  EXPECT_FALSE(results[1].contains("rt_undisturbed_p99_over_exclusive"));  // none of its own
  EXPECT_DOUBLE_EQ(sm["rt_p99_over_exclusive"].get<double>(), 1.06);
  EXPECT_DOUBLE_EQ(sm["rt_mean_over_exclusive"].get<double>(), 104.0 / 99.0);
  EXPECT_DOUBLE_EQ(sm["rt_max_over_exclusive"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(sm["rt_p99_over_exclusive_end"].get<double>(), 106.0 / 102.0);
  EXPECT_DOUBLE_EQ(sm["be_gflops_over_sequential"].get<double>(), 1.25);
  // The baseline measured last, against the first: the drift over the run.
  EXPECT_DOUBLE_EQ(results[3]["rt_p99_over_exclusive"].get<double>(), 1.02);
  // No exclusive-end in the run: no such ratio.
  nlohmann::json without = nlohmann::json::array({results[0], results[2]});
  without[1].erase("rt_p99_over_exclusive_end");
  reef_ratios(without);
  EXPECT_FALSE(without[1].contains("rt_p99_over_exclusive_end"));
  EXPECT_DOUBLE_EQ(without[1]["rt_p99_over_exclusive"].get<double>(), 1.06);
}

TEST(reef_targets, compare_preemption_with_exclusive_and_sequential) {
  const nlohmann::json results = nlohmann::json::array(
      {result("exclusive", 100, 10, 0), result("sequential", 180, 25, 1000),
       result("preempt", 104, 19, 900), result("preempt-pad", 110, 21, 1600)});
  // Each judged target by name: its value and whether it was met.
  const auto judged = [](const nlohmann::json& r) {
    std::map<std::string, std::pair<double, bool>> m;
    for (const auto& t : reef_targets(r)) {
      m[t["name"].get<std::string>()] = {t["value"].get<double>(), t["met"].get<bool>()};
    }
    return m;
  };
  const auto got = judged(results);
  EXPECT_TRUE(got.at("preempt: preemption latency p99 (us)").second);       // 19 <= 20
  EXPECT_FALSE(got.at("preempt-pad: preemption latency p99 (us)").second);  // 21
  EXPECT_DOUBLE_EQ(got.at("preempt: RT p99 / exclusive p99").first, 1.04);
  EXPECT_TRUE(got.at("preempt: RT p99 / exclusive p99").second);
  EXPECT_FALSE(got.at("preempt-pad: RT p99 / exclusive p99").second);     // 1.1
  EXPECT_FALSE(got.at("preempt: BE throughput / sequential").second);     // 0.9
  EXPECT_TRUE(got.at("preempt-pad: BE throughput / sequential").second);  // 1.6
  // The RT target carries the same ratio without the host's share, when both policies have it,
  // and is still judged on every sample: here the host tail lies on exclusive, so the target is
  // met while the device misses it.
  nlohmann::json noisy = results;
  noisy[0]["p99_us"] = 110.0;  // exclusive's host tail
  noisy[0]["undisturbed_p99_us"] = 100.0;
  noisy[0]["measurement"] = {{"in_loop_us", {{"p99_us", 95.0}}}};
  noisy[2]["undisturbed_p99_us"] = 107.0;
  noisy[2]["measurement"] = {{"in_loop_us", {{"p99_us", 101.65}}}};
  const auto targets = reef_targets(noisy);
  const auto rt = std::find_if(targets.begin(), targets.end(), [](const nlohmann::json& t) {
    return t["name"] == "preempt: RT p99 / exclusive p99";
  });
  ASSERT_NE(rt, targets.end());
  EXPECT_TRUE((*rt)["met"].get<bool>());  // 104 / 110
  EXPECT_DOUBLE_EQ((*rt)["undisturbed"].get<double>(), 1.07);
  EXPECT_DOUBLE_EQ((*rt)["in_loop"].get<double>(), 101.65 / 95.0);
  for (const auto& t : targets) {  // preempt-pad has neither figure of its own
    if (t["name"] == "preempt-pad: RT p99 / exclusive p99") {
      EXPECT_FALSE(t.contains("undisturbed"));
      EXPECT_FALSE(t.contains("in_loop"));
    }
  }
  // preempt-lead: judged from the raise where that came before the sample (the lead counts
  // against it), with the wait after the sample beside it.
  nlohmann::json led = nlohmann::json::array({result("preempt-lead", 100, 12, 100)});
  led[0]["preemption_from_raise"] = {{"p99_us", 21.5}};
  const auto lead_targets = reef_targets(led);
  ASSERT_EQ(lead_targets.size(), 1U);
  EXPECT_EQ(lead_targets[0]["name"], "preempt-lead: preemption latency p99 (us)");
  EXPECT_DOUBLE_EQ(lead_targets[0]["value"].get<double>(), 21.5);
  EXPECT_FALSE(lead_targets[0]["met"].get<bool>());
  EXPECT_DOUBLE_EQ(lead_targets[0]["after_sample"].get<double>(), 12.0);
  // A raise after the sample (--rt-raise after-copy) never shortens it either.
  led[0]["preemption_from_raise"] = {{"p99_us", 9.0}};
  EXPECT_DOUBLE_EQ(reef_targets(led)[0]["value"].get<double>(), 12.0);
  EXPECT_FALSE(reef_targets(led)[0].contains("after_sample"));
  // green-split: RT and BE only, no preemption latency (nothing is preempted).
  nlohmann::json split = results;
  split.push_back(result("green-split", 103, 11, 1550));
  split.back().erase("preemption_latency");  // not needed where nothing is preempted
  const auto split_got = judged(split);
  EXPECT_EQ(split_got.count("green-split: preemption latency p99 (us)"), 0U);
  EXPECT_DOUBLE_EQ(split_got.at("green-split: RT p99 / exclusive p99").first, 1.03);
  EXPECT_TRUE(split_got.at("green-split: RT p99 / exclusive p99").second);
  EXPECT_TRUE(split_got.at("green-split: BE throughput / sequential").second);  // 1.55
  EXPECT_EQ(split_got.size(), got.size() + 2);
  // Without the baselines only the latency targets can be judged.
  const auto alone = reef_targets(nlohmann::json::array({result("preempt", 104, 19, 900)}));
  ASSERT_EQ(alone.size(), 1U);
  EXPECT_EQ(alone[0]["name"], "preempt: preemption latency p99 (us)");
}

// --be-trace's summary on hand-made samples (device clock in ns, latency in us).
TEST(be_overlap, tells_overlapped_bodies_from_turned_away_and_quiet_ones) {
  std::vector<rt_sample_trace> v;
  const auto sample = [](double latency, std::uint64_t t0, std::uint64_t body_ns,
                         std::uint32_t running, std::uint64_t begin, std::uint64_t end,
                         std::uint64_t stop) {
    rt_sample_trace t;
    t.latency_us = latency;
    t.body_start = t0;
    t.compute_end = t0 + body_ns - 2'000;
    t.commit = t0 + body_ns;
    t.be_running = running;
    t.be_last_begin = begin;
    t.be_last_end = end;
    t.be_last_stop = stop;
    return t;
  };
  // 200 quiet samples: body 10 us, the last BE block ended 5 us before the body started and
  // the last one turned away 3 us before it.
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t t0 = 1'000'000 * static_cast<std::uint64_t>(i + 1);
    v.push_back(sample(20.0, t0, 10'000, 0, t0 - 9'000, t0 - 5'000, t0 - 3'000));
  }
  // The three slowest: a BE block ended 12 us into a 30 us body; another began 4 us into a
  // 25 us body and was still running at the compute's end; in a 20 us body, none ran but one
  // reached an SM 2 us in and was turned away.
  const std::uint64_t a = 500'000'000, b = 600'000'000, c = 700'000'000;
  v.push_back(sample(45.0, a, 30'000, 0, a - 50'000, a + 12'000, a - 60'000));
  v.push_back(sample(40.0, b, 25'000, 3, b + 4'000, b - 1'000, b - 2'000));
  v.push_back(sample(35.0, c, 20'000, 0, c - 9'000, c - 5'000, c + 2'000));
  v.push_back(sample(-1.0, 0, 0, 0, 0, 0, 0));  // dropped: no body start
  const nlohmann::json j = be_overlap(v);
  EXPECT_EQ(j["samples"].get<std::int64_t>(), 203);
  EXPECT_EQ(j["overlapped"].get<std::int64_t>(), 2);
  EXPECT_EQ(j["turned_away_in_body"].get<std::int64_t>(), 1);
  EXPECT_EQ(j["began_in_body"].get<std::int64_t>(), 1);
  EXPECT_EQ(j["ended_in_body"].get<std::int64_t>(), 1);
  EXPECT_EQ(j["running_at_compute_end"].get<std::int64_t>(), 1);
  EXPECT_EQ(j["rt_body_quiet"]["n"].get<std::int64_t>(), 200);
  EXPECT_DOUBLE_EQ(j["rt_body_quiet"]["max_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["rt_body_overlapped"]["mean_us"].get<double>(), 27.5);
  EXPECT_DOUBLE_EQ(j["rt_body_turned_away"]["max_us"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["last_be_end_into_body_us"]["max_us"].get<double>(), 12.0);
  EXPECT_EQ(j["last_be_end_into_body_us"]["n"].get<std::int64_t>(), 1);
  // 1% of 203 samples: the two slowest, both overlapped, none turned away.
  EXPECT_EQ(j["slowest_1pct_body"]["n"].get<std::int64_t>(), 2);
  EXPECT_EQ(j["slowest_1pct_body"]["overlapped"].get<std::int64_t>(), 2);
  EXPECT_EQ(j["slowest_1pct_body"]["turned_away"].get<std::int64_t>(), 0);
  EXPECT_DOUBLE_EQ(j["slowest_1pct_body"]["from_us"].get<double>(), 25.0);
  EXPECT_EQ(j["slowest_1pct_latency"]["overlapped"].get<std::int64_t>(), 2);
  EXPECT_EQ(be_overlap({})["slowest_1pct_body"]["n"].get<std::int64_t>(), 0);
  EXPECT_EQ(be_overlap({})["samples"].get<std::int64_t>(), 0);
}

// --be-trace's clock summary: the slowest compute ran at a lower clock for the same cycles.
// What the BE work left before each untouched body: checkpoints stored since the sample before
// and how close before the body the last BE block left, slowest 1% against the rest.
TEST(before_body, compares_checkpoints_and_drain_gap_of_the_slowest_bodies_with_the_rest) {
  std::vector<rt_sample_trace> v;
  std::uint32_t checkpoints = 0;
  std::uint64_t t0 = 0;
  // body_us long; `stored` checkpoints since the sample before; the last BE block ended
  // `gap_us` before the body and the last turn-away 2 us earlier still.
  const auto add = [&](double body_us, std::uint32_t stored, std::uint64_t gap_us) {
    t0 += 250'000;
    checkpoints += stored;
    rt_sample_trace t;
    t.body_start = t0;
    t.commit = t0 + static_cast<std::uint64_t>(body_us * 1000.0);
    t.compute_end = t.commit - 1'000;
    t.be_last_begin = t0 - 100'000;
    t.be_last_end = t0 - gap_us * 1000;
    t.be_last_stop = t0 - gap_us * 1000 - 2'000;
    t.be_checkpoints = checkpoints;
    v.push_back(t);
  };
  add(10.0, 0, 5);  // the first has no sample before it: left out
  for (int i = 0; i < 297; ++i) add(10.0, 100, 5);
  for (int i = 0; i < 3; ++i) add(50.0, 300, 1);
  add(80.0, 900, 1);
  v.back().be_last_end = v.back().body_start + 3'000;  // a BE block ended in this body: left out
  const nlohmann::json j = before_body(v);
  EXPECT_EQ(j["n"].get<std::int64_t>(), 300);
  const auto& slow = j["slowest_1pct_body"];
  EXPECT_EQ(slow["n"].get<std::int64_t>(), 3);
  EXPECT_DOUBLE_EQ(slow["mean_body_us"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(slow["checkpoints"]["mean"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(slow["gap_us"]["mean"].get<double>(), 1.0);
  const auto& rest = j["other_bodies"];
  EXPECT_EQ(rest["n"].get<std::int64_t>(), 297);
  EXPECT_DOUBLE_EQ(rest["mean_body_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(rest["checkpoints"]["p50"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(rest["gap_us"]["min"].get<double>(), 5.0);
  EXPECT_EQ(before_body({})["n"].get<std::int64_t>(), 0);
}

// Where the RT gemm blocks landed: the slowest 1% of bodies against the rest, by their blocks'
// start spread and by crowded launches, each the difference from the sample before.
TEST(rt_placement, compares_start_spread_and_crowding_of_the_slowest_bodies_with_the_rest) {
  std::vector<rt_sample_trace> v;
  std::uint32_t crowded = 0;
  std::uint64_t spread = 0, t0 = 0;
  const auto add = [&](double body_us, std::uint64_t spread_ns, bool crowd) {
    t0 += 250'000;
    spread += spread_ns;
    crowded += crowd ? 1 : 0;
    rt_sample_trace t;
    t.body_start = t0;
    t.commit = t0 + static_cast<std::uint64_t>(body_us * 1000.0);
    t.rt_crowded = crowded;
    t.rt_spread_ns = spread;
    v.push_back(t);
  };
  add(10.0, 90'000, true);  // the first has no sample before it: left out
  for (int i = 0; i < 198; ++i) add(10.0, 500, false);
  add(12.0, 600, true);  // one crowded body among the rest
  add(40.0, 7'000, true);
  add(30.0, 5'000, false);
  rt_sample_trace no_body;  // no body stamp: left out
  no_body.rt_crowded = crowded;
  no_body.rt_spread_ns = spread;
  v.push_back(no_body);
  const nlohmann::json j = rt_placement(v);
  EXPECT_EQ(j["n"].get<std::int64_t>(), 201);
  const auto& slow = j["slowest_1pct_body"];
  EXPECT_EQ(slow["n"].get<std::int64_t>(), 2);
  EXPECT_DOUBLE_EQ(slow["mean_body_us"].get<double>(), 35.0);
  EXPECT_DOUBLE_EQ(slow["spread_us"]["mean"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(slow["spread_us"]["max"].get<double>(), 7.0);
  EXPECT_EQ(slow["crowded"].get<std::int64_t>(), 1);
  const auto& rest = j["other_bodies"];
  EXPECT_EQ(rest["n"].get<std::int64_t>(), 199);
  EXPECT_DOUBLE_EQ(rest["spread_us"]["p50"].get<double>(), 0.5);
  EXPECT_EQ(rest["crowded"].get<std::int64_t>(), 1);
  EXPECT_EQ(rt_placement({})["n"].get<std::int64_t>(), 0);
}

// Where the RT compute's time went: segments between the device stamps, slowest 1% against the
// rest; samples with a missing or out-of-order stamp are left out.
TEST(rt_compute_split, splits_the_slowest_computes_into_gemms_and_the_kernels_between) {
  std::vector<rt_sample_trace> v;
  // gemm1 10 us, 2 us between, gemm2 20 us, 2 us, gemm3 20 us, 6 us to the end (+ slow_us in
  // gemm1 for the slow ones).
  const auto add = [&](std::uint64_t t0, std::uint64_t slow_ns) {
    rt_sample_trace t;
    t.body_start = t0;
    std::uint64_t at = t0;
    const std::uint64_t len[3] = {10'000 + slow_ns, 20'000, 20'000};
    for (std::size_t l = 0; l < 3; ++l) {
      t.gemm_start[l] = at;
      at += len[l];
      t.gemm_end[l] = at;
      at += l < 2 ? 2'000 : 6'000;
    }
    t.compute_end = at;
    v.push_back(t);
  };
  for (int i = 0; i < 198; ++i) add(1'000'000 * static_cast<std::uint64_t>(i + 1), 0);
  add(500'000'000, 7'000);
  add(600'000'000, 9'000);
  rt_sample_trace unordered = v.front();  // gemm2 "started" before gemm1 ended: left out
  unordered.gemm_start[1] = unordered.gemm_end[0] - 1;
  v.push_back(unordered);
  rt_sample_trace unstamped = v.front();  // no gemm stamps: left out
  unstamped.gemm_start = {};
  unstamped.gemm_end = {};
  v.push_back(unstamped);
  const nlohmann::json j = rt_compute_split(v);
  EXPECT_EQ(j["n"].get<std::int64_t>(), 200);
  EXPECT_EQ(j["traced"].get<std::int64_t>(), 202);
  EXPECT_EQ(j["left_out_unordered"].get<std::int64_t>(), 1);
  EXPECT_EQ(j["left_out_unstamped"].get<std::int64_t>(), 1);
  const auto& slow = j["slowest_1pct_compute"];
  EXPECT_EQ(slow["n"].get<std::int64_t>(), 2);
  EXPECT_DOUBLE_EQ(slow["mean_compute_us"].get<double>(), 68.0);
  EXPECT_DOUBLE_EQ(slow["mean_segment_us"]["gemm1"].get<double>(), 18.0);
  EXPECT_DOUBLE_EQ(slow["mean_segment_us"]["gemm2"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(slow["mean_segment_us"]["body_start_to_gemm1"].get<double>(), 0.0);
  const auto& rest = j["other_computes"];
  EXPECT_EQ(rest["n"].get<std::int64_t>(), 198);
  EXPECT_DOUBLE_EQ(rest["mean_segment_us"]["gemm1"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(rest["mean_segment_us"]["gemm1_to_gemm2"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(rest["mean_segment_us"]["gemm3_to_compute_end"].get<double>(), 6.0);
  EXPECT_EQ(rt_compute_split({})["n"].get<std::int64_t>(), 0);
}

TEST(rt_clock, compares_the_slowest_computes_clock_with_the_rest) {
  std::vector<rt_sample_trace> v;
  for (int i = 0; i < 99; ++i) {
    const std::uint64_t t0 = 1'000'000 * static_cast<std::uint64_t>(i + 1);
    rt_sample_trace t;
    t.body_start = t0;
    t.compute_end = t0 + 100'000;  // 100 us at 1980 MHz
    t.sm_khz = 1'980'000;
    v.push_back(t);
  }
  rt_sample_trace slow;
  slow.body_start = 500'000'000;
  slow.compute_end = slow.body_start + 132'000;  // 132 us at 1500 MHz: the same 198k cycles
  slow.sm_khz = 1'500'000;
  v.push_back(slow);
  rt_sample_trace unmeasured;  // no clock: left out
  unmeasured.body_start = 1;
  unmeasured.compute_end = 900'000;
  v.push_back(unmeasured);
  const nlohmann::json j = rt_clock(v);
  EXPECT_EQ(j["n"].get<std::int64_t>(), 100);
  EXPECT_DOUBLE_EQ(j["sm_mhz"]["min"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ(j["sm_mhz"]["max"].get<double>(), 1980.0);
  const auto& s = j["slowest_1pct_compute"];
  EXPECT_EQ(s["n"].get<std::int64_t>(), 1);
  EXPECT_DOUBLE_EQ(s["mean_compute_us"].get<double>(), 132.0);
  EXPECT_DOUBLE_EQ(s["mean_sm_mhz"].get<double>(), 1500.0);
  EXPECT_DOUBLE_EQ(s["mean_kcycles_at_that_clock"].get<double>(), 198.0);
  const auto& o = j["other_computes"];
  EXPECT_EQ(o["n"].get<std::int64_t>(), 99);
  EXPECT_DOUBLE_EQ(o["mean_kcycles_at_that_clock"].get<double>(), 198.0);
  EXPECT_EQ(rt_clock({}).value("n", -1), 0);
}

}  // namespace
}  // namespace resident::bench
