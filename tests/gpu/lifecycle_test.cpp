// Launch, tear-down, stalls and failures: a loop always stops or is reported, never hangs.

#include <gmock/gmock.h>

#include <atomic>
#include <thread>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t elements = 256;

class resident_modes : public ::testing::TestWithParam<execution_mode> {};
INSTANTIATE_TEST_SUITE_P(all, resident_modes, ::testing::ValuesIn(all_execution_modes),
                         [](const auto& info) {
                           std::string name(to_string(info.param));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(resident_modes, tears_down_within_one_iteration) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.idle_sleep_ns = 2'000'000;  // 2 ms idle iterations: each one is easy to count
  auto run = run_async(app, GetParam(), options);
  std::this_thread::sleep_for(20ms);
  const std::uint64_t before = run->counters().iterations;
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_TRUE(report.error.empty()) << report.error;
  if (is_resident(GetParam())) {
    // The iteration in flight when the request landed, plus at most the one that read it.
    EXPECT_LE(report.counters.iterations, before + 2);
    EXPECT_GT(before, 0U) << "the idle loop should have iterated";
  }
  EXPECT_LT(report.elapsed, 100ms);
  EXPECT_FALSE(run->is_launched());
}

TEST_P(resident_modes, idle_loop_without_samples_processes_nothing) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  auto run = run_async(app, GetParam());
  std::this_thread::sleep_for(20ms);
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_EQ(report.counters.processed, 0U);
  EXPECT_EQ(report.counters.dropped, 0U);
  EXPECT_EQ(report.counters.repeated, 0U);
}

TEST_P(resident_modes, starts_after_samples_published_before_launch) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  for (int i = 0; i < 3; ++i) app.mailbox()->publish(as_bytes(random_floats(elements)));
  auto run = run_async(app, GetParam());
  std::this_thread::sleep_for(5ms);
  const auto outputs = drive_lockstep(*app.mailbox(), {random_floats(elements)});
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_EQ(outputs.size(), 1U);
  EXPECT_EQ(report.counters.start_seq, 3U);
  EXPECT_EQ(report.counters.last_seq, 4U);
  EXPECT_EQ(report.counters.processed, 1U);
  EXPECT_EQ(report.counters.dropped, 0U);
}

TEST_P(resident_modes, frozen_heartbeat_is_reported_then_clears) {
  RESIDENT_REQUIRE_GPU();
  host_mapped_buffer hold(sizeof(std::uint32_t));
  auto* hold_word = hold.host_as<std::uint32_t>();
  std::atomic_ref<std::uint32_t>(*hold_word).store(1);

  class stuck_app final : public Application {
   public:
    explicit stuck_app(const std::uint32_t* word)
        : _word(word), _mailbox(std::make_shared<io::mailbox>(io::mailbox::config{8, 8, 4})) {}
    void compose() override {
      auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
      auto hold = make_operator<hold_while_set>("hold", _word);
      auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
      register_data_ready_handler(_mailbox->make_handler(rx));
      add_flow(rx, tx, {{"sample", "in"}});
      (void)hold;
    }
    const std::uint32_t* _word;
    std::shared_ptr<io::mailbox> _mailbox;
  } app(hold.device_as<std::uint32_t>());

  std::atomic<int> stall_calls{0};
  run_options options;
  options.stall_timeout = 100ms;
  options.on_stall = [&](const std::string& message) {
    EXPECT_THAT(message, HasSubstr("stall"));
    EXPECT_THAT(message, HasSubstr(std::string(to_string(GetParam()))));
    ++stall_calls;
  };
  auto run = run_async(app, GetParam(), options);
  const std::uint64_t one = 1;
  app._mailbox->publish(std::as_bytes(std::span(&one, 1)));  // releases the DAG: hold spins
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!run->health().stalled && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(run->health().stalled);
  EXPECT_EQ(stall_calls.load(), 1);
  EXPECT_EQ(run->health().stall_events, 1U);

  std::atomic_ref<std::uint32_t>(*hold_word).store(0);  // let the loop go on
  const auto resumed_by = std::chrono::steady_clock::now() + 3s;
  while (run->health().stalled && std::chrono::steady_clock::now() < resumed_by) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(run->health().stalled);
  const tear_down_report report = run->tear_down();
  EXPECT_TRUE(report.stopped) << report.error;
  EXPECT_EQ(report.counters.processed, 1U);
}

TEST_P(resident_modes, loop_that_cannot_stop_is_reported_not_waited_on) {
  RESIDENT_REQUIRE_GPU();
  host_mapped_buffer hold(sizeof(std::uint32_t));
  auto* hold_word = hold.host_as<std::uint32_t>();
  std::atomic_ref<std::uint32_t>(*hold_word).store(1);
  class stuck_app final : public Application {
   public:
    explicit stuck_app(const std::uint32_t* word) : _word(word) {}
    void compose() override {
      auto hold = make_operator<hold_while_set>("hold", _word);
      // The handler itself hangs, so the loop never reaches its controller again.
      register_data_ready_handler({{hold}, {}, {}});
    }
    const std::uint32_t* _word;
  } app(hold.device_as<std::uint32_t>());
  auto run = run_async(app, GetParam());
  std::this_thread::sleep_for(20ms);  // host modes: let the loop thread reach the hung kernel
  const tear_down_report report = run->tear_down(50ms);
  EXPECT_FALSE(report.stopped);
  EXPECT_THAT(report.error, HasSubstr("did not stop within 50 ms"));
  // Release the GPU so the abandoned loop can see its tear-down request and finish.
  std::atomic_ref<std::uint32_t>(*hold_word).store(0);
  std::this_thread::sleep_for(100ms);
}

TEST(run_handle, second_tear_down_reports_instead_of_failing) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  auto run = run_async(app, execution_mode::while_loop);
  EXPECT_TRUE(run->tear_down().stopped);
  const tear_down_report again = run->tear_down();
  EXPECT_FALSE(again.stopped);
  EXPECT_THAT(again.error, HasSubstr("already torn down"));
}

TEST(run_handle, destruction_tears_the_loop_down_and_frees_the_app_for_another_run) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  { auto run = run_async(app, execution_mode::while_loop); }
  auto next = run_async(app, execution_mode::tail);
  EXPECT_TRUE(next->tear_down().stopped);
}

TEST(run_handle, refuses_a_second_concurrent_run_of_one_application) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  auto run = run_async(app, execution_mode::while_loop);
  try {
    auto second = run_async(app, execution_mode::host_graph);
    FAIL() << "expected composition_error";
  } catch (const composition_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("already running (mode while)"));
  }
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST(run_handle, resident_mode_without_handler_is_refused_host_modes_free_run) {
  RESIDENT_REQUIRE_GPU();
  class no_handler final : public Application {
    void compose() override { make_operator<busy_wait>("body", arg("ns", 1000)); }
  } app;
  for (const auto mode : {execution_mode::while_loop, execution_mode::tail}) {
    try {
      auto run = run_async(app, mode);
      FAIL() << "expected composition_error for " << to_string(mode);
    } catch (const composition_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("needs a data-ready handler"));
    }
  }
  for (const auto mode : {execution_mode::eager, execution_mode::host_graph}) {
    auto run = run_async(app, mode);
    std::this_thread::sleep_for(20ms);
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_GT(report.counters.processed, 0U) << to_string(mode);
    EXPECT_EQ(report.counters.processed, report.counters.last_seq);
  }
}

TEST(run_handle, bad_options_are_refused_before_anything_runs) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.idle_sleep_ns = 1'000'000'000;  // 1 s idle sleep against a 2 s stall timeout
  EXPECT_THROW((void)run_async(app, execution_mode::while_loop, options), std::invalid_argument);
  auto run = run_async(app, execution_mode::while_loop);  // the app is not left "running"
  EXPECT_TRUE(run->tear_down().stopped);
}

}  // namespace
}  // namespace resident::testing
