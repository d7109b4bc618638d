// persistent mode: one kernel launched once runs the operators' device forms. The lab pipeline
// gives the graph modes' very bits; counters account for every sample under over-rate input;
// tear-down, the heartbeat and the DOT dump work; an operator without a device form is refused
// by name.

#include <gmock/gmock.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t elements = 1000;

TEST(persistent_mode, lab_pipeline_gives_the_same_bits_as_while_mode) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 16; ++i) samples.push_back(random_floats(elements));
  std::map<execution_mode, std::vector<float>> results;
  for (const execution_mode mode : {execution_mode::while_loop, execution_mode::persistent}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    const auto outputs = drive_lockstep(*app.mailbox(), samples);
    EXPECT_TRUE(wait_for_passes_beyond(*run, samples.size())) << "no idle pass after the last";
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    ASSERT_EQ(outputs.size(), samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double want = lab_reference(samples[i]);
      EXPECT_LT(std::abs(as_float(outputs[i]) - want), 1e-5 * std::max(1.0, std::abs(want)));
      results[mode].push_back(as_float(outputs[i]));
    }
    EXPECT_EQ(report.counters.processed, samples.size());
    EXPECT_EQ(report.counters.dropped + report.counters.repeated, 0U);
    EXPECT_GT(report.counters.iterations, samples.size()) << "idle passes are counted";
  }
  EXPECT_EQ(results[execution_mode::persistent], results[execution_mode::while_loop]);
}

TEST(persistent_mode, a_cooperative_grid_gives_the_same_bits_as_one_block) {
  RESIDENT_REQUIRE_GPU();
  // 2^16 elements: the element-wise forms spread over every block of the grid.
  lab_app app(1 << 16);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 8; ++i) samples.push_back(random_floats(1 << 16));
  std::map<int, std::vector<float>> results;
  for (const int blocks : {1, 8, 0}) {  // 0: as many as fit at once
    SCOPED_TRACE("persistent_blocks " + std::to_string(blocks));
    run_options options;
    options.persistent_blocks = blocks;
    auto run = run_async(app, execution_mode::persistent, options);
    const auto outputs = drive_lockstep(*app.mailbox(), samples);
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    for (const auto& out : outputs) results[blocks].push_back(as_float(out));
    EXPECT_EQ(report.counters.processed, samples.size());
  }
  EXPECT_EQ(results[8], results[1]);
  EXPECT_EQ(results[0], results[1]);
}

// run_options::phase_times: the timed kernel gives the same bits, and one row of stamps per DAG
// pass, named after the DAG's operators in order and the framework's two steps.
TEST(persistent_mode, phase_times_name_every_phase_of_every_pass_and_change_no_result) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(1 << 14);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 12; ++i) samples.push_back(random_floats(1 << 14));
  std::vector<std::string> want_names;
  for (const Operator* op : app.plan().body_order) want_names.push_back(op->name());
  want_names.insert(want_names.end(), {"(end marker)", "(closing barrier)"});
  for (const int blocks : {1, 8}) {
    SCOPED_TRACE("persistent_blocks " + std::to_string(blocks));
    std::vector<std::vector<float>> results;
    for (const bool timed : {false, true}) {
      run_options options;
      options.persistent_blocks = blocks;
      options.phase_times = timed;
      options.phase_rows = 8;  // fewer rows than passes: the latest 7 are kept
      auto run = run_async(app, execution_mode::persistent, options);
      const auto outputs = drive_lockstep(*app.mailbox(), samples);
      EXPECT_TRUE(wait_for_passes_beyond(*run, samples.size()));
      const tear_down_report report = run->tear_down();
      ASSERT_TRUE(report.stopped) << report.error;
      EXPECT_EQ(report.counters.processed, samples.size());
      results.emplace_back();
      for (const auto& out : outputs) results.back().push_back(as_float(out));
      if (!timed) {
        EXPECT_TRUE(report.phases.empty());
        continue;
      }
      std::vector<std::string> names;
      for (const phase_time& t : report.phases) {
        names.push_back(t.op);
        EXPECT_EQ(t.passes, 7U) << t.op;
        EXPECT_GT(t.mean_ns, 0.0) << t.op;
        EXPECT_LE(t.p50_ns, t.p99_ns) << t.op;
        EXPECT_LE(t.p99_ns, t.max_ns) << t.op;
        EXPECT_LT(t.max_ns, 1e9) << t.op << ": a stamp from another pass";
      }
      EXPECT_EQ(names, want_names);
    }
    EXPECT_EQ(results[1], results[0]) << "timing changed the outputs";
  }
}

TEST(persistent_mode, a_grid_larger_than_fits_at_once_is_refused_with_the_numbers) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.persistent_blocks = 1'000'000;
  EXPECT_THAT([&] { (void)run_async(app, execution_mode::persistent, options); },
              ::testing::ThrowsMessage<execution_error>(
                  AllOf(HasSubstr("persistent_blocks is 1000000, but only"),
                        HasSubstr("fit at once; every block must be resident"))));
  options.persistent_blocks = -1;
  EXPECT_THROW((void)run_async(app, execution_mode::persistent, options), std::invalid_argument);
}

class persistent_policy : public ::testing::TestWithParam<sample_policy> {};

INSTANTIATE_TEST_SUITE_P(policies, persistent_policy,
                         ::testing::Values(sample_policy::skip_duplicate, sample_policy::every),
                         [](const auto& info) {
                           std::string n(to_string(info.param));
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST_P(persistent_policy, counters_account_for_every_sample_released_faster_than_it_runs) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.policy = GetParam();
  auto run = run_async(app, execution_mode::persistent, options);
  constexpr std::uint64_t total = 3000;
  int bad_snapshots = 0;
  for (std::uint64_t i = 1; i <= total; ++i) {
    const auto s = std::vector<float>(elements, static_cast<float>(i % 7));
    ASSERT_EQ(app.mailbox()->publish(as_bytes(s)), i);
    const loop_counters c = run->counters();
    if (c.processed + c.dropped != c.last_seq - c.start_seq) ++bad_snapshots;
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (run->counters().last_seq != total && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100us);
  }
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_EQ(report.counters.last_seq, total);
  EXPECT_EQ(report.counters.processed + report.counters.dropped, total);
  EXPECT_GT(report.counters.processed, 0U);
  EXPECT_EQ(report.counters.repeated, 0U);
  EXPECT_EQ(bad_snapshots, 0);
  // The last output is the last sample's: sum over elements of (2x+1)^2 for x = total % 7.
  std::vector<std::byte> out(sizeof(float));
  const io::output_stamp got = app.mailbox()->read_output(out);
  EXPECT_EQ(got.seq, total);
  const double x = static_cast<double>(total % 7);
  EXPECT_NEAR(as_float(out), static_cast<double>(elements) * (2 * x + 1) * (2 * x + 1), 1e-2);
}

TEST(persistent_mode, idles_with_a_live_heartbeat_and_tears_down_within_a_pass) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.poll_ns = 200'000;  // each pass polls the sensor word for up to 0.2 ms
  auto run = run_async(app, execution_mode::persistent, options);
  const std::uint64_t before = run->counters().iterations;
  std::this_thread::sleep_for(50ms);
  EXPECT_GT(run->counters().iterations, before) << "the controller step ran while idle";
  EXPECT_FALSE(run->health().stalled);
  const auto t0 = std::chrono::steady_clock::now();
  const tear_down_report report = run->tear_down(2s);
  EXPECT_TRUE(report.stopped) << report.error;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms) << "one pass is at most 0.2 ms";
  run.reset();  // the handle holds the application until it is destroyed
  // Nothing was left behind: the same mailbox serves a while loop next.
  auto next = run_async(app, execution_mode::while_loop);
  EXPECT_EQ(drive_lockstep(*app.mailbox(), {random_floats(elements)}).size(), 1U);
  EXPECT_TRUE(next->tear_down().stopped);
}

TEST(persistent_mode, a_run_destroyed_without_tear_down_stops_its_kernel) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  { auto run = run_async(app, execution_mode::persistent); }
  auto again = run_async(app, execution_mode::persistent);
  EXPECT_EQ(drive_lockstep(*app.mailbox(), {random_floats(elements)}).size(), 1U);
  EXPECT_TRUE(again->tear_down().stopped);
}

// The data-ready handler is the only operator: every released pass runs an empty body.
class handler_only_app final : public Application {
 public:
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
  }
  std::shared_ptr<io::mailbox> _mailbox =
      std::make_shared<io::mailbox>(io::mailbox::config{64, 0, 4});
};

// A pass with an empty body used to let the leader write the next verdict while other blocks
// were still reading this one; a block that saw it early took fewer grid barriers and the grid
// hung. Thousands of passes on every block that fits make that window show.
TEST(persistent_mode, an_empty_body_on_a_full_grid_runs_every_sample_and_tears_down) {
  RESIDENT_REQUIRE_GPU();
  handler_only_app app;
  for (const int blocks : {1, 0}) {
    SCOPED_TRACE("persistent_blocks " + std::to_string(blocks));
    run_options options;
    options.persistent_blocks = blocks;
    options.policy = sample_policy::skip_duplicate;
    auto run = run_async(app, execution_mode::persistent, options);
    const std::uint64_t start = app._mailbox->published();
    constexpr std::uint64_t total = 20000;
    std::vector<std::byte> sample(64);
    for (std::uint64_t i = 0; i < total; ++i) {
      sample[i % 64] = static_cast<std::byte>(i);
      (void)app._mailbox->publish(sample);
      if (i % 16 == 0) std::this_thread::sleep_for(2us);
    }
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (run->counters().last_seq != start + total &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100us);
    }
    EXPECT_FALSE(run->health().stalled) << "the grid stopped making passes";
    const tear_down_report report = run->tear_down(2s);
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_TRUE(report.error.empty()) << report.error;
    EXPECT_EQ(report.counters.last_seq, start + total);
    EXPECT_EQ(report.counters.start_seq, start);
    EXPECT_EQ(report.counters.processed + report.counters.dropped, total);
    EXPECT_GT(report.counters.processed, total / 100);
  }
}

// rx -> tx, and busy_wait (no device form) in the DAG beside them.
class formless_app final : public Application {
 public:
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    make_operator<busy_wait>("slow", arg("ns", 1000));
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, tx, {{"sample", "in"}});
  }
  std::shared_ptr<io::mailbox> _mailbox =
      std::make_shared<io::mailbox>(io::mailbox::config{8, 8, 4});
};

TEST(persistent_mode, an_operator_without_a_device_form_is_refused_by_name) {
  RESIDENT_REQUIRE_GPU();
  formless_app app;
  EXPECT_THAT([&] { (void)run_async(app, execution_mode::persistent); },
              ::testing::ThrowsMessage<composition_error>(
                  AllOf(HasSubstr("operator 'slow' has no device form"),
                        HasSubstr("run this application in while or tail mode"))));
  // The same application runs in while mode.
  auto run = run_async(app, execution_mode::while_loop);
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST(persistent_mode, the_dot_dump_shows_the_forms_in_order) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.dot_path = (std::filesystem::temp_directory_path() / "resident_persistent.dot").string();
  auto run = run_async(app, execution_mode::persistent, options);
  EXPECT_TRUE(run->tear_down().stopped);
  std::ifstream in(options.dot_path);
  std::stringstream text;
  text << in.rdbuf();
  for (const char* s : {"digraph persistent", "rx (io.mailbox_rx)", "affine (ops.affine)",
                        "sum (ops.sum_reduce)", "tx (io.mailbox_tx)", "controller step"}) {
    EXPECT_THAT(text.str(), HasSubstr(s));
  }
}

}  // namespace
}  // namespace resident::testing
