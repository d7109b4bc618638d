// The partition planner: the response bound R(m) = max(O_pass + δ, O_busy + B(m)) + O_busy + B(m),
// the step lookup of B(m), the smallest feasible partition per loop, whether a taskset fits, why
// not, overheads from a `resident bench overhead` receipt, and the YAML reader. Every expected
// number is worked out by hand in the comment next to it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "resident/partition/planner.hpp"
#include "resident/partition/planner_json.hpp"

// The CLI body lives in resident_bench, which exists only when the apps are built.
#if __has_include("commands/plan_command.hpp")
#include "commands/plan_command.hpp"
#define RESIDENT_PLAN_HAVE_BENCH 1
#endif

namespace resident::partition {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::filesystem::path fixtures = std::filesystem::path(RESIDENT_TEST_FIXTURES);

/// Round overheads that keep the arithmetic in the comments exact.
const overhead_model round_while{10.0, 15.0, "explicit"};  // O_pass = 10, O_busy = 15
const overhead_model round_tail{9.0, 14.0, "explicit"};    // O_pass = 9, O_busy = 14

/// 1000 Hz (T = 1000 us), D = 300 us, B = 180 / 100 / 60 us on 8 / 16 / 32 SMs, spinning.
loop_spec camera() {
  loop_spec loop;
  loop.name = "camera";
  loop.rate_hz = 1000;
  loop.deadline_us = 300;
  loop.wcet_us = {{8, 180.0}, {16, 100.0}, {32, 60.0}};
  return loop;
}

taskset with_loops(std::vector<loop_spec> loops) {
  taskset tasks;
  tasks.overheads = {{execution_mode::while_loop, round_while}, {execution_mode::tail, round_tail}};
  tasks.loops = std::move(loops);
  return tasks;
}

/// The message `f` throws plan_error with; empty when it does not throw.
template <class F>
std::string plan_error_of(F&& f) {
  try {
    f();
  } catch (const plan_error& e) {
    return e.what();
  }
  return {};
}

std::string parse_error(const std::string& yaml) {
  return plan_error_of([&] { (void)parse_taskset(yaml, "test.yaml", fixtures); });
}

/// A valid taskset's text with `loop` as its only loop.
std::string one_loop_yaml(const std::string& loop) {
  return "overheads:\n"
         "  while: {idle_pass_us: 10, busy_fixed_us: 15}\n"
         "loops:\n" +
         loop;
}

// ---- the bound --------------------------------------------------------------------------------

TEST(partition_planner, response_bound_is_the_worst_wait_plus_the_samples_own_iteration) {
  auto loop = camera();
  loop.sleep_ns = 2000;  // δ = 2 us
  // On 16 SMs B = 100: busy iteration = O_busy + B = 15 + 100 = 115; idle wait = O_pass + δ =
  // 10 + 2 = 12. R = max(12, 115) + 115 = 230.
  EXPECT_DOUBLE_EQ(response_bound(loop, round_while, 16), 230.0);
  // On 8 SMs B = 180: R = max(12, 195) + 195 = 390.
  EXPECT_DOUBLE_EQ(response_bound(loop, round_while, 8), 390.0);
}

TEST(partition_planner, a_long_idle_sleep_dominates_the_wait) {
  auto loop = camera();
  loop.wcet_us = {{8, 100.0}};
  loop.deadline_us = 1000;
  loop.sleep_ns = 500'000;  // δ = 500 us
  // Idle wait 10 + 500 = 510 beats the busy iteration 15 + 100 = 115: R = 510 + 115 = 625.
  EXPECT_DOUBLE_EQ(response_bound(loop, round_while, 8), 625.0);
  const auto idle = plan(with_loops({loop}));
  EXPECT_EQ(idle.loops[0].wait, wait_kind::idle_pass);
  EXPECT_DOUBLE_EQ(idle.loops[0].response_us, 625.0);

  loop.sleep_ns = 0;
  // Spinning: idle wait 10, busy 115: R = 115 + 115 = 230, the busy iteration is the wait.
  EXPECT_DOUBLE_EQ(response_bound(loop, round_while, 8), 230.0);
  const auto busy = plan(with_loops({loop}));
  EXPECT_EQ(busy.loops[0].wait, wait_kind::busy_iteration);
  EXPECT_DOUBLE_EQ(busy.loops[0].response_us, 230.0);
}

TEST(partition_planner, wcet_steps_down_at_each_profiled_size_and_is_absent_below_the_first) {
  const auto loop = camera();  // {8: 180, 16: 100, 32: 60}
  EXPECT_EQ(wcet_at(loop, 4), std::nullopt);
  EXPECT_EQ(wcet_at(loop, 7), std::nullopt);
  EXPECT_EQ(wcet_at(loop, 8), 180.0);
  EXPECT_EQ(wcet_at(loop, 12), 180.0) << "12 SMs is assumed no faster than the 8 profiled";
  EXPECT_EQ(wcet_at(loop, 16), 100.0);
  EXPECT_EQ(wcet_at(loop, 31), 100.0);
  EXPECT_EQ(wcet_at(loop, 32), 60.0);
  EXPECT_EQ(wcet_at(loop, 128), 60.0) << "more SMs are assumed never slower";
  EXPECT_EQ(plan_error_of([&] { (void)response_bound(loop, round_while, 4); }),
            "loop 'camera' has no WCET at or below 4 SMs: its table starts at 8");
}

TEST(partition_planner, candidate_sizes_are_multiples_of_the_granularity_within_the_device) {
  EXPECT_EQ(candidate_sizes({132, 8, 8}).size(), 16U);  // 8, 16, ..., 128
  EXPECT_EQ(candidate_sizes({132, 8, 8}).back(), 128);
  EXPECT_EQ(candidate_sizes({40, 8, 20}), (std::vector<int>{24, 32, 40}));
  EXPECT_EQ(candidate_sizes({132, 4, 2}).front(), 4);
  EXPECT_TRUE(candidate_sizes({4, 8, 8}).empty());
}

// ---- the search -------------------------------------------------------------------------------

TEST(partition_planner, picks_the_smallest_partition_that_meets_the_deadline) {
  const auto result = plan(with_loops({camera()}));
  ASSERT_TRUE(result.feasible);
  const auto& p = result.loops[0];
  // 8 SMs: R = (15 + 180) * 2 = 390 > 300. 16 SMs: R = (15 + 100) * 2 = 230 <= 300.
  EXPECT_EQ(p.sm, 16);
  EXPECT_DOUBLE_EQ(p.wcet_us, 100.0);
  EXPECT_DOUBLE_EQ(p.response_us, 230.0);
  EXPECT_DOUBLE_EQ(p.slack_us, 70.0);      // 300 - 230
  EXPECT_DOUBLE_EQ(p.utilization, 0.115);  // 115 / 1000
  ASSERT_EQ(p.sizes.size(), 16U);          // 8 .. 128, all at or above the first profiled size
  EXPECT_FALSE(p.sizes[0].meets_deadline);
  EXPECT_DOUBLE_EQ(p.sizes[0].response_us, 390.0);
}

TEST(partition_planner, a_response_equal_to_the_deadline_meets_it) {
  auto loop = camera();
  loop.deadline_us = 230;  // exactly R on 16 SMs
  EXPECT_EQ(plan(with_loops({loop})).loops[0].sm, 16);
  loop.deadline_us = 229.9;  // now only 32 SMs: R = (15 + 60) * 2 = 150
  EXPECT_EQ(plan(with_loops({loop})).loops[0].sm, 32);
}

TEST(partition_planner, a_taskset_fits_when_the_smallest_partitions_add_up_to_the_device) {
  const auto result = plan(load_taskset(fixtures / "taskset_fits.yaml"));
  ASSERT_TRUE(result.feasible) << render_text(result);
  ASSERT_EQ(result.loops.size(), 3U);
  // camera: 16 SMs, as above.
  EXPECT_EQ(result.loops[0].sm, 16);
  // lidar (tail, O_pass 9, O_busy 14, δ = 2 us): 8 SMs gives R = (14 + 1200) * 2 = 2428 > 2000;
  // 16 SMs gives (14 + 700) * 2 = 1428.
  EXPECT_EQ(result.loops[1].sm, 16);
  EXPECT_DOUBLE_EQ(result.loops[1].response_us, 1428.0);
  // imu: 4000 Hz, T = 250; 8 SMs: busy 15 + 30 = 45, R = 90 <= 100; utilization 45 / 250.
  EXPECT_EQ(result.loops[2].sm, 8);
  EXPECT_DOUBLE_EQ(result.loops[2].slack_us, 10.0);
  EXPECT_DOUBLE_EQ(result.loops[2].utilization, 0.18);
  EXPECT_EQ(result.sm_needed, 40);  // 16 + 16 + 8
  EXPECT_EQ(result.sm_left, 92);    // 132 - 40
  EXPECT_TRUE(result.reasons.empty());
}

TEST(partition_planner, a_taskset_short_of_sms_says_by_how_many) {
  auto tasks = load_taskset(fixtures / "taskset_fits.yaml");
  tasks.device.sm_count = 32;
  const auto result = plan(tasks);
  EXPECT_FALSE(result.feasible);
  EXPECT_EQ(result.sm_needed, 40);
  EXPECT_EQ(result.sm_left, -8);
  ASSERT_EQ(result.reasons.size(), 1U);
  EXPECT_EQ(result.reasons[0],
            "the loops' smallest partitions need 40 SMs (camera 16 + lidar 16 + imu 8), the "
            "device has 32: short by 8 SMs");
}

// Several identical devices: the smallest partitions are placed largest first, each on the
// first device with room; SMs used per device and each loop's device are reported.
TEST(partition_planner, loops_spread_over_several_devices_largest_first) {
  auto tasks = load_taskset(fixtures / "taskset_fits.yaml");  // camera 16, lidar 16, imu 8
  tasks.device.sm_count = 24;
  tasks.device.count = 2;
  const auto result = plan(tasks);
  ASSERT_TRUE(result.feasible) << render_text(result);
  EXPECT_EQ(result.loops[0].device, 0);  // camera 16 on GPU 0
  EXPECT_EQ(result.loops[1].device, 1);  // lidar 16: GPU 0 has 8 left, so GPU 1
  EXPECT_EQ(result.loops[2].device, 0);  // imu 8 fills GPU 0
  EXPECT_EQ(result.sm_used_by_device, (std::vector<int>{24, 16}));
  EXPECT_EQ(result.sm_left, 8);  // 2 x 24 - 40
  const std::string text = render_text(result);
  EXPECT_THAT(text, HasSubstr("device: 2 x 24 SMs"));
  EXPECT_THAT(text, HasSubstr("SMs used per GPU: 0: 24, 1: 16"));
  EXPECT_THAT(text, HasSubstr("GPU"));
}

TEST(partition_planner, loops_that_fit_in_sum_but_not_device_by_device_are_refused_by_name) {
  auto tasks = load_taskset(fixtures / "taskset_fits.yaml");  // camera 16, lidar 16, imu 8
  tasks.device.sm_count = 20;  // 2 x 20 = 40 SMs, as many as the loops need in all
  tasks.device.count = 2;
  const auto result = plan(tasks);
  EXPECT_FALSE(result.feasible);
  EXPECT_EQ(result.sm_left, 0);
  ASSERT_EQ(result.reasons.size(), 1U);
  EXPECT_THAT(result.reasons[0], HasSubstr("do not fit on 2 devices of 20 SMs"));
  EXPECT_THAT(result.reasons[0], HasSubstr("no room left for imu (8 SMs)"));
  EXPECT_EQ(result.loops[2].device, -1);
}

TEST(partition_planner, a_device_count_out_of_range_is_refused) {
  auto tasks = load_taskset(fixtures / "taskset_fits.yaml");
  tasks.device.count = 0;
  EXPECT_THAT(plan_error_of([&] { (void)plan(tasks); }), HasSubstr("device count is 0"));
  const std::string yaml = "device: {count: 2}\n" + one_loop_yaml(
                                                        "  - {name: a, rate_hz: 100, "
                                                        "deadline_us: 5000, wcet_us: {8: 100}}\n");
  EXPECT_EQ(parse_taskset(yaml, "test.yaml", fixtures).device.count, 2);
}

TEST(partition_planner, a_loop_that_misses_its_deadline_at_every_size_says_by_how_much) {
  auto loop = camera();
  loop.deadline_us = 100;
  const auto result = plan(with_loops({loop}));
  EXPECT_FALSE(result.feasible);
  EXPECT_EQ(result.loops[0].verdict, loop_verdict::misses_deadline);
  EXPECT_EQ(result.loops[0].sm, 0);
  // Best from 32 SMs up: R = (15 + 60) * 2 = 150, 50 over. R <= 100 needs both
  // 10 + 15 + B <= 100 (B <= 75) and 2 (15 + B) <= 100 (B <= 35): B <= 35.
  ASSERT_EQ(result.reasons.size(), 1U);
  EXPECT_EQ(
      result.reasons[0],
      "loop 'camera' misses its 100 us deadline at every size up to 128 SMs: at best, from 32 "
      "SMs up, R = 150 us, 50 us over; it needs B <= 35 us (has 60), or a deadline of at "
      "least 150 us");
}

TEST(partition_planner, a_deadline_miss_names_the_size_where_the_table_is_fastest) {
  auto loop = camera();
  loop.wcet_us[128] = 50.0;  // one more step, at the largest partition
  loop.deadline_us = 100;
  // On 128 SMs: R = (15 + 50) * 2 = 130, 30 over; smaller sizes are worse, so "on", not "from".
  EXPECT_THAT(plan(with_loops({loop})).reasons.at(0),
              HasSubstr("at best, on 128 SMs, R = 130 us, 30 us over; it needs B <= 35 us (has "
                        "50)"));
}

TEST(partition_planner, a_deadline_below_the_fixed_overheads_cannot_be_met_by_any_body) {
  auto loop = camera();
  loop.deadline_us = 20;
  // With B = 0: R = max(10, 15) + 15 = 30 > 20.
  EXPECT_THAT(plan(with_loops({loop})).reasons.at(0),
              HasSubstr("no body can meet it: the fixed overheads alone give R = 30 us"));
}

TEST(partition_planner, a_loop_that_cannot_keep_up_at_any_size_is_overloaded) {
  auto loop = camera();
  loop.rate_hz = 20'000;  // T = 50 us
  loop.deadline_us = 1000;
  const auto result = plan(with_loops({loop}));
  EXPECT_FALSE(result.feasible);
  EXPECT_EQ(result.loops[0].verdict, loop_verdict::overloaded);
  // Fastest busy iteration: 15 + 60 = 75 us > 50; it needs B <= 50 - 15 = 35, or 1e6 / 75 Hz.
  EXPECT_EQ(result.reasons.at(0),
            "loop 'camera' cannot keep up with 20000 Hz (period 50 us) at any size up to 128 SMs: "
            "its fastest busy iteration, at 32 SMs, takes O_busy + B = 15 + 60 = 75 us "
            "(utilization 150.0%); it needs B <= 35 us, or a rate of at most 13333.3 Hz");
}

TEST(partition_planner, a_loop_profiled_only_above_the_largest_partition_has_no_wcet) {
  auto loop = camera();
  loop.wcet_us = {{256, 10.0}};
  const auto result = plan(with_loops({loop}));
  EXPECT_EQ(result.loops[0].verdict, loop_verdict::no_wcet);
  EXPECT_EQ(result.reasons.at(0),
            "loop 'camera' has no WCET at or below any partition size: its wcet_us table starts "
            "at 256 SMs, and the largest partition is 128 SMs");
}

TEST(partition_planner, a_device_without_a_partition_size_is_one_reason) {
  auto tasks = with_loops({camera()});
  tasks.device.sm_count = 4;
  const auto result = plan(tasks);
  EXPECT_FALSE(result.feasible);
  EXPECT_EQ(result.reasons, (std::vector<std::string>{
                                "no partition size fits the device: partitions are multiples of "
                                "8 SMs, at least 8, and the device has 4 SMs"}));
  EXPECT_EQ(result.loops[0].verdict, loop_verdict::no_partition);
}

TEST(partition_planner, plan_rejects_a_loop_whose_mode_has_no_overheads) {
  auto tasks = with_loops({camera()});
  tasks.overheads.erase(execution_mode::while_loop);
  EXPECT_EQ(plan_error_of([&] { (void)plan(tasks); }),
            "loop 'camera' runs in mode while, but the overheads give none for while (they cover: "
            "tail)");
}

// ---- overheads --------------------------------------------------------------------------------

TEST(partition_planner, margin_scales_both_overheads) {
  const auto tasks = parse_taskset(
      "overheads:\n"
      "  while: {idle_pass_us: 10, busy_fixed_us: 15}\n"
      "  margin: 1.2\n"
      "loops:\n"
      "  - {name: camera, rate_hz: 1000, deadline_us: 300, wcet_us: {16: 100}}\n",
      "test.yaml");
  const auto& o = tasks.overheads.at(execution_mode::while_loop);
  EXPECT_DOUBLE_EQ(o.idle_pass_us, 12.0);   // 10 * 1.2
  EXPECT_DOUBLE_EQ(o.busy_fixed_us, 18.0);  // 15 * 1.2
  EXPECT_EQ(o.source, "explicit, x1.2 margin");
  // R = (18 + 100) * 2 = 236.
  EXPECT_DOUBLE_EQ(plan(tasks).loops[0].response_us, 236.0);
}

TEST(partition_planner, receipt_overheads_are_the_idle_mean_and_the_busy_max_less_the_least_body) {
  std::ifstream file(fixtures / "overhead_h200.json");
  const auto receipt = nlohmann::json::parse(file);
  const auto o = overheads_from_receipt(receipt, 1.0, "overhead_h200.json");
  ASSERT_EQ(o.size(), 2U);
  const auto& w = o.at(execution_mode::while_loop);
  const auto& t = o.at(execution_mode::tail);
  // while: idle_iteration mean_us 10.63452206273259; busy_iteration max_us 20.544 minus
  // body_to_end_marker min_us 0.704 = 19.84 (max - min: the extremes may be different iterations).
  EXPECT_DOUBLE_EQ(w.idle_pass_us, 10.63452206273259);
  EXPECT_NEAR(w.busy_fixed_us, 19.84, 1e-9);
  // tail: idle 9.368215956988443; 18.72 - 0.672 = 18.048.
  EXPECT_DOUBLE_EQ(t.idle_pass_us, 9.368215956988443);
  EXPECT_NEAR(t.busy_fixed_us, 18.048, 1e-9);
  EXPECT_EQ(w.source,
            "overhead_h200.json: idle pass = idle_iteration mean_us; busy fixed = busy_iteration "
            "max_us - body_to_end_marker min_us");

  const auto scaled = overheads_from_receipt(receipt, 1.5, "overhead_h200.json");
  EXPECT_NEAR(scaled.at(execution_mode::while_loop).busy_fixed_us, 29.76, 1e-9);  // 19.84 * 1.5
  EXPECT_THAT(scaled.at(execution_mode::while_loop).source, HasSubstr(", x1.5 margin"));
}

TEST(partition_planner, receipt_results_without_a_max_fall_back_to_the_mean_and_say_so) {
  const nlohmann::json receipt = {
      {"benchmark", "overhead"},
      {"results",
       {{{"name", "idle_iteration"}, {"mode", "while"}, {"mean_us", 10.0}},
        {{"name", "busy_iteration"}, {"mode", "while"}, {"mean_us", 16.0}, {"max_us", nullptr}},
        {{"name", "body_to_end_marker"}, {"mode", "while"}, {"mean_us", 1.0}}}}};
  const auto o = overheads_from_receipt(receipt, 1.0, "r.json");
  ASSERT_EQ(o.size(), 1U) << "no tail results: tail is left out";
  EXPECT_DOUBLE_EQ(o.at(execution_mode::while_loop).busy_fixed_us, 15.0);  // 16 - 1
  EXPECT_THAT(o.at(execution_mode::while_loop).source,
              HasSubstr("busy_iteration mean_us - body_to_end_marker mean_us"));
}

TEST(partition_planner, receipt_of_another_benchmark_or_with_a_mode_half_measured_is_refused) {
  std::ifstream file(fixtures / "io_receipt.json");
  const auto io = nlohmann::json::parse(file);
  EXPECT_EQ(plan_error_of([&] { (void)overheads_from_receipt(io, 1.0, "io.json"); }),
            "io.json: a 'io' receipt, not an 'overhead' one (resident bench overhead writes "
            "those)");
  const nlohmann::json half = {
      {"benchmark", "overhead"},
      {"results", {{{"name", "busy_iteration"}, {"mode", "tail"}, {"mean_us", 16.0}}}}};
  EXPECT_THAT(plan_error_of([&] { (void)overheads_from_receipt(half, 1.0, "r.json"); }),
              StartsWith("r.json: the receipt has tail results but no idle_iteration for tail"));
}

TEST(partition_planner, a_taskset_plans_with_the_h200_receipt) {
  const auto tasks = load_taskset(fixtures / "taskset_h200.yaml");
  const auto result = plan(tasks);
  ASSERT_TRUE(result.feasible) << render_text(result);
  // camera (while, O_busy 19.84): 8 SMs: (19.84 + 180) * 2 = 399.68 > 300;
  // 16 SMs: (19.84 + 100) * 2 = 239.68, slack 60.32.
  EXPECT_EQ(result.loops[0].sm, 16);
  EXPECT_NEAR(result.loops[0].response_us, 239.68, 1e-9);
  EXPECT_NEAR(result.loops[0].slack_us, 60.32, 1e-9);
  // lidar (tail, O_busy 18.048): 8 SMs: (18.048 + 1200) * 2 = 2436.096 > 2000;
  // 16 SMs: (18.048 + 700) * 2 = 1436.096.
  EXPECT_EQ(result.loops[1].sm, 16);
  EXPECT_NEAR(result.loops[1].response_us, 1436.096, 1e-9);
  EXPECT_EQ(result.sm_left, 100);  // 132 - 32
}

TEST(partition_planner, explicit_mode_overheads_override_the_receipts) {
  const auto tasks = parse_taskset(
      "overheads:\n"
      "  receipt: overhead_h200.json\n"
      "  tail: {idle_pass_us: 9, busy_fixed_us: 14}\n"
      "loops:\n"
      "  - {name: lidar, rate_hz: 100, deadline_us: 2000, mode: tail, wcet_us: {8: 1}}\n",
      "test.yaml", fixtures);
  EXPECT_EQ(tasks.overheads.at(execution_mode::tail).busy_fixed_us, 14.0);
  EXPECT_EQ(tasks.overheads.at(execution_mode::tail).source, "explicit");
  EXPECT_NEAR(tasks.overheads.at(execution_mode::while_loop).busy_fixed_us, 19.84, 1e-9);
}

// ---- YAML -------------------------------------------------------------------------------------

TEST(partition_planner, yaml_reads_every_field_and_defaults) {
  const auto tasks = load_taskset(fixtures / "taskset_fits.yaml");
  EXPECT_EQ(tasks.device.sm_count, 132);
  EXPECT_EQ(tasks.device.granularity, 8);
  EXPECT_EQ(tasks.device.min_partition, 8);
  ASSERT_EQ(tasks.loops.size(), 3U);
  const auto& lidar = tasks.loops[1];
  EXPECT_EQ(lidar.name, "lidar");
  EXPECT_EQ(lidar.rate_hz, 100.0);
  EXPECT_EQ(lidar.deadline_us, 2000.0);
  EXPECT_EQ(lidar.mode, execution_mode::tail);
  EXPECT_EQ(lidar.sleep_ns, 2000U);
  EXPECT_EQ(lidar.wcet_us, (std::map<int, double>{{8, 1200}, {16, 700}, {32, 400}, {64, 300}}));
  EXPECT_EQ(tasks.loops[0].mode, execution_mode::while_loop) << "mode defaults to while";
  EXPECT_EQ(tasks.loops[0].sleep_ns, 0U) << "sleep defaults to spinning";
}

TEST(partition_planner, yaml_unknown_key_is_named_with_line_and_column) {
  EXPECT_EQ(parse_error(one_loop_yaml("  - name: camera\n"
                                      "    rate_hz: 1000\n"
                                      "    dedline_us: 300\n")),
            "test.yaml:6:5: unknown key 'dedline_us' in loop 'camera'; keys: name, rate_hz, "
            "deadline_us, sleep_ns, mode, wcet_us, workload");
  EXPECT_THAT(parse_error("overheads:\n  whlie: {idle_pass_us: 1, busy_fixed_us: 1}\n"),
              StartsWith("test.yaml:2:3: unknown key 'whlie' in overheads; keys: while, tail, "
                         "receipt, margin"));
  EXPECT_THAT(parse_error("devices: {sm_count: 132}\n"),
              StartsWith("test.yaml:1:1: unknown key 'devices' in the taskset"));
}

TEST(partition_planner, yaml_wrong_types_are_errors_with_location) {
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: fast, deadline_us: 300, wcet_us: {8: 1}}\n")),
            "test.yaml:4:29: 'rate_hz' of loop 'camera' must be a number, got 'fast'");
  EXPECT_THAT(
      parse_error(one_loop_yaml("  - {name: camera, rate_hz: 1, deadline_us: 300, wcet_us: 5}\n")),
      AllOf(StartsWith("test.yaml:4:59: "), HasSubstr("'wcet_us' of loop 'camera' must be a map")));
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: 1, deadline_us: 300, wcet_us: {8.5: 1}}\n")),
            "test.yaml:4:60: wcet_us of loop 'camera': sizes must be positive whole numbers of "
            "SMs, got '8.5'");
  EXPECT_THAT(parse_error(one_loop_yaml("  - {name: camera, rate_hz: 1, deadline_us: 300, "
                                        "sleep_ns: 1.5, wcet_us: {8: 1}}\n")),
              HasSubstr("'sleep_ns' of loop 'camera' must be a whole number, got '1.5'"));
  EXPECT_THAT(parse_error("overheads: {while: 3}\nloops: []\n"),
              AllOf(StartsWith("test.yaml:1:20: "), HasSubstr("'overheads.while' must be a map")));
}

TEST(partition_planner, yaml_invalid_values_point_at_the_value) {
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: 1000, deadline_us: -5, wcet_us: {8: 1}}\n")),
            "test.yaml:4:48: loop 'camera' has deadline_us -5; it must be positive and at most 1e9 "
            "us");
  EXPECT_EQ(
      parse_error(one_loop_yaml(
          "  - {name: camera, rate_hz: 1000, deadline_us: 5, sleep_ns: -1, wcet_us: {8: 1}}\n")),
      "test.yaml:4:61: 'sleep_ns' of loop 'camera' must be >= 0 (0 spins), got -1");
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: 1000, deadline_us: 5, wcet_us: {8: 0}}\n")),
            "test.yaml:4:64: wcet_us of loop 'camera' at 8 SMs must be positive, got 0");
  EXPECT_THAT(parse_error("overheads:\n"
                          "  while: {idle_pass_us: 10, busy_fixed_us: 15}\n"
                          "  margin: 0.8\n"
                          "loops: []\n"),
              StartsWith("test.yaml:3:11: 'margin' of overheads is 0.8; it must be >= 1"));
  EXPECT_EQ(parse_error("device: {sm_count: 0}\n"),
            "test.yaml:1:20: 'sm_count' of device must be a positive number of SMs, got 0");
}

TEST(partition_planner, yaml_duplicate_loop_names_are_an_error_at_the_second) {
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: 1000, deadline_us: 300, wcet_us: {8: 1}}\n"
                "  - {name: camera, rate_hz: 500, deadline_us: 300, wcet_us: {8: 1}}\n")),
            "test.yaml:5:12: duplicate loop name 'camera': loops #1 and #2; names must be unique");
}

TEST(partition_planner, yaml_a_mode_without_overheads_names_the_loop) {
  EXPECT_EQ(
      parse_error(one_loop_yaml(
          "  - {name: lidar, rate_hz: 10, deadline_us: 300, mode: tail, wcet_us: {8: 1}}\n")),
      "test.yaml:4:56: loop 'lidar' runs in mode tail, but the overheads give none for tail (they "
      "cover: while)");
  EXPECT_THAT(
      parse_error(one_loop_yaml(
          "  - {name: x, rate_hz: 10, deadline_us: 300, mode: eager, wcet_us: {8: 1}}\n")),
      HasSubstr("'mode' of loop 'x' is 'eager'; the planner models the GPU-resident modes"));
}

TEST(partition_planner, yaml_missing_keys_and_files_are_named) {
  EXPECT_EQ(parse_error(one_loop_yaml("  - {name: camera, rate_hz: 1000, wcet_us: {8: 1}}\n")),
            "test.yaml:4:5: loop 'camera' has no 'deadline_us'");
  EXPECT_EQ(parse_error(one_loop_yaml("  - {name: camera, rate_hz: 1000, deadline_us: 300}\n")),
            "test.yaml:4:5: loop 'camera' needs wcet_us (SMs: us) or a workload for resident plan "
            "--profile to measure");
  // A workload instead of a table parses, and planning without --profile says what to do.
  const auto profiled = parse_taskset(
      one_loop_yaml("  - {name: camera, rate_hz: 1000, deadline_us: 300, workload: matmul256x2}\n"),
      "test.yaml", fixtures);
  EXPECT_EQ(profiled.loops[0].workload, "matmul256x2");
  EXPECT_THAT(plan_error_of([&] { (void)plan(profiled); }),
              HasSubstr("run resident plan --profile to measure its workload 'matmul256x2'"));
  EXPECT_EQ(parse_error("loops: []\n"), "test.yaml:1:1: the taskset has no 'overheads'");
  EXPECT_EQ(parse_error("overheads: {while: {idle_pass_us: 1, busy_fixed_us: 1}}\nloops: []\n"),
            "test.yaml:2:8: no loops to plan");
  EXPECT_THAT(
      parse_error("overheads: {receipt: absent.json}\nloops: []\n"),
      AllOf(StartsWith("test.yaml:1:22: cannot open overhead receipt "), HasSubstr("absent.json")));
  EXPECT_THAT(plan_error_of([] { (void)load_taskset(fixtures / "taskset_absent.yaml"); }),
              HasSubstr("cannot open taskset file"));
}

TEST(partition_planner, yaml_receipt_errors_carry_the_yaml_location) {
  EXPECT_EQ(parse_error("overheads:\n  receipt: io_receipt.json\nloops: []\n"),
            "test.yaml:2:12: io_receipt.json: a 'io' receipt, not an 'overhead' one (resident "
            "bench overhead writes those)");
}

TEST(partition_planner, yaml_syntax_error_has_a_location) {
  EXPECT_THAT(parse_error("loops: [\n"),
              AllOf(StartsWith("test.yaml:"), HasSubstr("not valid YAML")));
}

// ---- output -----------------------------------------------------------------------------------

TEST(partition_planner, text_shows_the_device_overheads_table_and_verdict) {
  const auto text = render_text(plan(load_taskset(fixtures / "taskset_fits.yaml")));
  EXPECT_THAT(text, HasSubstr("device: 132 SMs, partitions of 8 to 128 SMs in steps of 8\n"));
  EXPECT_THAT(text, HasSubstr("overheads while: idle pass 10 us, busy fixed 15 us (explicit)\n"));
  EXPECT_THAT(text, HasSubstr("loop    mode   SMs  B us  R us  D us  slack us   util  wait\n"));
  EXPECT_THAT(text, HasSubstr("camera  while   16   100   230   300        70  11.5%  busy "
                              "iteration\n"));
  EXPECT_THAT(text, HasSubstr("fits: 3 loops on 40 of 132 SMs, 92 left over\n"));
}

TEST(partition_planner, text_lists_every_reason_when_it_does_not_fit) {
  auto loop = camera();
  loop.deadline_us = 100;
  const auto text = render_text(plan(with_loops({loop})));
  EXPECT_THAT(text, HasSubstr("camera  while    -     -     -   100         -     -  "
                              "misses_deadline\n"));
  EXPECT_THAT(text, HasSubstr("does not fit:\n  - loop 'camera' misses its 100 us deadline"));
}

TEST(partition_planner, json_holds_each_loop_its_sizes_and_the_verdict) {
  auto tasks = with_loops({camera()});
  auto bad = camera();
  bad.name = "fast";
  bad.rate_hz = 20'000;
  tasks.loops.push_back(bad);
  const auto json = to_json(plan(tasks));
  EXPECT_EQ(json["feasible"], false);
  EXPECT_EQ(json["device"]["sm_count"], 132);
  EXPECT_EQ(json["overheads"]["while"]["busy_fixed_us"], 15.0);
  EXPECT_EQ(json["loops"][0]["sm"], 16);
  EXPECT_EQ(json["loops"][0]["response_us"], 230.0);
  EXPECT_EQ(json["loops"][0]["wait"], "busy iteration");
  EXPECT_EQ(json["loops"][0]["sizes"][0]["sm"], 8);
  EXPECT_EQ(json["loops"][0]["sizes"][0]["meets_deadline"], false);
  EXPECT_EQ(json["loops"][1]["verdict"], "overloaded");
  EXPECT_TRUE(json["loops"][1]["sm"].is_null());
  EXPECT_EQ(json["reasons"].size(), 1U);
}

// ---- CLI body ---------------------------------------------------------------------------------

#ifdef RESIDENT_PLAN_HAVE_BENCH

TEST(partition_planner, run_plan_exits_0_when_the_taskset_fits) {
  std::ostringstream out;
  const auto file = (fixtures / "taskset_fits.yaml").string();
  EXPECT_EQ(bench::run_plan({file, -1, ""}, out), 0);
  EXPECT_THAT(out.str(), HasSubstr("fits: 3 loops on 40 of 132 SMs, 92 left over\n"));
  EXPECT_THAT(out.str(), HasSubstr(file + ": fits\n"));
}

TEST(partition_planner, run_plan_exits_3_and_says_why_when_it_does_not_fit) {
  std::ostringstream out;
  const auto file = (fixtures / "taskset_fits.yaml").string();
  const auto path = std::filesystem::temp_directory_path() / "resident_plan_test.json";
  EXPECT_EQ(bench::run_plan({file, 32, path.string()}, out), bench::plan_does_not_fit);
  EXPECT_THAT(out.str(), HasSubstr("device: 32 SMs, partitions of 8 to 32 SMs in steps of 8\n"));
  EXPECT_THAT(out.str(), HasSubstr("the device has 32: short by 8 SMs\n"));
  EXPECT_THAT(out.str(), HasSubstr(file + ": does not fit (exit status 3)\n"));

  std::ifstream written(path);
  const auto json = nlohmann::json::parse(written);
  EXPECT_EQ(json["benchmark"], "plan");
  EXPECT_EQ(json["source"], file);
  EXPECT_EQ(json["sm_count_override"], 32);
  EXPECT_EQ(json["feasible"], false);
  EXPECT_EQ(json["sm_left"], -8);
  std::filesystem::remove(path);
}

TEST(partition_planner, run_plan_rejects_a_non_positive_sm_count) {
  std::ostringstream out;
  const auto file = (fixtures / "taskset_fits.yaml").string();
  EXPECT_THROW((void)bench::run_plan({file, 0, ""}, out), std::invalid_argument);
  EXPECT_THROW((void)bench::run_plan({file, -2, ""}, out), std::invalid_argument);
}

TEST(partition_planner, run_plan_lets_an_invalid_taskset_throw) {
  std::ostringstream out;
  EXPECT_THROW((void)bench::run_plan({(fixtures / "sim_lab.yaml").string(), -1, ""}, out),
               plan_error);
}

#endif

// ---- limits (a plan of absurd numbers is an error, not a page of digits) ---------------------

TEST(partition_planner, a_wcet_at_a_size_the_granularity_cannot_give_names_the_sizes_allowed) {
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: 1000, deadline_us: 300, wcet_us: {8: 90, 12: 80}}\n")),
            "test.yaml:4:62: loop 'camera' has a WCET at 12 SMs, a partition size the device "
            "cannot give: sizes are multiples of 8 SMs, at least 8 (8, 16, 24, 32, ..., 128)");
  auto tasks = with_loops({camera()});
  tasks.loops[0].wcet_us = {{4, 200.0}};  // a multiple of nothing the device gives: below 8
  EXPECT_THAT(plan_error_of([&] { (void)plan(tasks); }),
              HasSubstr("has a WCET at 4 SMs, a partition size the device cannot give"));
}

TEST(partition_planner, rates_beyond_a_megahertz_and_times_beyond_1e9_us_are_errors) {
  EXPECT_EQ(parse_error(one_loop_yaml(
                "  - {name: camera, rate_hz: 1e308, deadline_us: 300, wcet_us: {8: 1}}\n")),
            "test.yaml:4:29: loop 'camera' has rate_hz 1e+308; it must be positive and at most "
            "1000000 Hz");
  EXPECT_THAT(parse_error(one_loop_yaml(
                  "  - {name: camera, rate_hz: .inf, deadline_us: 300, wcet_us: {8: 1}}\n")),
              HasSubstr("'rate_hz' of loop 'camera' must be finite"));
  EXPECT_THAT(parse_error(one_loop_yaml(
                  "  - {name: camera, rate_hz: 0, deadline_us: 300, wcet_us: {8: 1}}\n")),
              HasSubstr("has rate_hz 0; it must be positive"));
  EXPECT_THAT(parse_error(one_loop_yaml(
                  "  - {name: camera, rate_hz: 10, deadline_us: 1e300, wcet_us: {8: 1}}\n")),
              HasSubstr("has deadline_us 1e+300; it must be positive and at most 1e9 us"));
  EXPECT_THAT(parse_error(one_loop_yaml(
                  "  - {name: camera, rate_hz: 10, deadline_us: 300, wcet_us: {8: 1e300}}\n")),
              HasSubstr("has WCET 1e+300 us at 8 SMs; it must be positive and at most 1e9 us"));
}

TEST(partition_planner, an_overload_by_orders_of_magnitude_prints_a_short_utilization) {
  auto loop = camera();
  loop.rate_hz = 1e6;         // a 1 us period, the fastest rate allowed
  loop.wcet_us = {{8, 1e9}};  // the longest body allowed
  const auto result = plan(with_loops({loop}));
  ASSERT_EQ(result.loops[0].verdict, loop_verdict::overloaded);
  EXPECT_THAT(result.reasons.at(0), HasSubstr("(utilization 1e+11%)"));
}

}  // namespace
}  // namespace resident::partition
