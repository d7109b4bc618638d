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

// A loop whose DAG spins on a host-mapped word until the test lets it go, then commits the
// sample through its egress (port memory, mailbox): what an abandoned loop still touches.
class hang_app final : public Application {
 public:
  explicit hang_app(const std::uint32_t* word)
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
};

TEST_P(resident_modes, frozen_heartbeat_is_reported_then_clears) {
  RESIDENT_REQUIRE_GPU();
  host_mapped_buffer hold(sizeof(std::uint32_t));
  auto* hold_word = hold.host_as<std::uint32_t>();
  std::atomic_ref<std::uint32_t>(*hold_word).store(1);

  hang_app app(hold.device_as<std::uint32_t>());

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

/// A word the GPU reads until the process ends: an abandoned loop may still poll it, so it is
/// never freed.
std::uint32_t* leaked_hold_word(host_mapped_buffer*& buffer) {
  buffer = new host_mapped_buffer(sizeof(std::uint32_t));
  auto* word = buffer->host_as<std::uint32_t>();
  std::atomic_ref<std::uint32_t>(*word).store(1);
  return word;
}

TEST_P(resident_modes, loop_that_cannot_stop_is_reported_not_waited_on) {
  RESIDENT_REQUIRE_GPU();
  host_mapped_buffer* hold = nullptr;
  std::uint32_t* hold_word = leaked_hold_word(hold);
  hang_app app(hold->device_as<std::uint32_t>());
  auto run = run_async(app, GetParam());
  const std::uint64_t one = 1;
  app._mailbox->publish(std::as_bytes(std::span(&one, 1)));     // releases the DAG: hold spins
  const auto deadline = std::chrono::steady_clock::now() + 2s;  // until the hold kernel runs
  while (run->counters().iterations == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(20ms);
  const tear_down_report report = run->tear_down(50ms);
  EXPECT_FALSE(report.stopped);
  EXPECT_THAT(report.error, HasSubstr("did not stop within 50 ms"));
  // The application stays reserved: a new run would share the abandoned loop's port memory.
  EXPECT_THROW((void)run_async(app, GetParam()), composition_error);
  // Let the abandoned loop go; it commits its sample and sees its tear-down request. The
  // device synchronizes once it has finished: nothing is freed before.
  std::atomic_ref<std::uint32_t>(*hold_word).store(0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(app._mailbox->output_seq(), 1U);
}

TEST_P(resident_modes, abandoned_loop_keeps_what_it_touches_after_the_application_is_gone) {
  RESIDENT_REQUIRE_GPU();
  host_mapped_buffer* hold = nullptr;
  std::uint32_t* hold_word = leaked_hold_word(hold);
  auto app = std::make_unique<hang_app>(hold->device_as<std::uint32_t>());
  std::shared_ptr<io::mailbox> mailbox = app->_mailbox;
  auto run = run_async(*app, GetParam());
  const std::uint64_t one = 1;
  mailbox->publish(std::as_bytes(std::span(&one, 1)));
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(run->tear_down(50ms).stopped);
  mailbox.reset();
  run.reset();
  app.reset();  // operators, mailbox and port memory would be freed here without the executor
  std::atomic_ref<std::uint32_t>(*hold_word).store(0);
  // The loop now reads its port memory and commits into the mailbox: had either been freed,
  // the device would report an illegal address here (or a free would have waited for ever).
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_P(resident_modes, destroying_a_running_executor_stops_its_loop) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  {
    std::unique_ptr<Executor> executor = make_executor(app, GetParam(), run_options{});
    executor->launch();
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (executor->heartbeat() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_GT(executor->heartbeat(), 0U) << "the loop never ran";
  }  // no request_stop, no tear-down: the destructor must stop the loop before freeing it
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // returns: no loop is left running
  auto run = run_async(app, GetParam());
  const auto x = random_floats(elements);
  const auto outputs = drive_lockstep(*app.mailbox(), {x});
  ASSERT_EQ(outputs.size(), 1U);
  EXPECT_NEAR(as_float(outputs[0]), lab_reference(x), 1e-3 * std::max(1.0, lab_reference(x)));
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST_P(resident_modes, a_launch_that_throws_leaves_nothing_running) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  // launch() fails writing it (eager: it has no graph to write), after the executor was built.
  options.dot_path = "/nonexistent-directory/loop.dot";
  EXPECT_ANY_THROW((void)run_async(app, GetParam(), options));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto run = run_async(app, GetParam());  // the application is free again
  EXPECT_EQ(drive_lockstep(*app.mailbox(), {random_floats(elements)}).size(), 1U);
  EXPECT_TRUE(run->tear_down().stopped);
}

TEST(current_device, runs_leave_the_callers_device_as_it_was) {
  RESIDENT_REQUIRE_GPU();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  {
    const current_device_guard guard(0);
    EXPECT_EQ(current_device(), 0);
  }
  EXPECT_EQ(current_device(), 0);
  lab_app app(elements);
  run_options options;
  options.device = 0;
  auto run = run_async(app, execution_mode::while_loop, options);
  EXPECT_EQ(current_device(), 0);
  EXPECT_EQ(app.device(), 0);
  EXPECT_TRUE(run->tear_down().stopped);
}

// Needs two GPUs; the suite multi_gpu may skip on a machine with fewer (tests/gpu/support.cu).
TEST(multi_gpu, a_run_on_device_0_leaves_a_caller_on_device_1_there) {
  RESIDENT_REQUIRE_GPU();
  if (device_count() < 2) GTEST_SKIP() << "needs two GPUs: this machine has " << device_count();
  lab_app app(elements);
  run_options options;
  options.device = 0;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  sched::preempt_signal signal(0);
  EXPECT_EQ(current_device(), 1) << "preempt_signal(0) changed the caller's device";
  auto again = run_async(app, execution_mode::while_loop, options);
  EXPECT_EQ(current_device(), 1) << "run_async on device 0 changed the caller's device";
  EXPECT_TRUE(again->tear_down().stopped);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(current_device, a_device_this_machine_lacks_is_refused_by_name) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  run_options options;
  options.device = device_count();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_THAT([&] { (void)run_async(app, execution_mode::while_loop, options); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::AllOf(
                  HasSubstr("device " + std::to_string(device_count()) + " does not exist"),
                  HasSubstr("usable CUDA device"))));
  EXPECT_EQ(current_device(), 0);
  auto run = run_async(app, execution_mode::while_loop);  // the application is still free
  EXPECT_TRUE(run->tear_down().stopped);
}

// Needs two GPUs. Two loops, one on each GPU, in every resident mode: both give the CPU
// reference's outputs, and tearing one down leaves the other running.
TEST(multi_gpu, a_loop_on_each_gpu_runs_and_one_tears_down_without_the_other) {
  RESIDENT_REQUIRE_GPU();
  if (device_count() < 2) GTEST_SKIP() << "needs two GPUs: this machine has " << device_count();
  for (const auto mode :
       {execution_mode::while_loop, execution_mode::tail, execution_mode::persistent}) {
    SCOPED_TRACE(to_string(mode));
    lab_app on_0(elements, 4, 0);
    lab_app on_1(elements, 4, 1);
    run_options first;
    run_options second;
    second.device = 1;
    auto run_0 = run_async(on_0, mode, first);
    auto run_1 = run_async(on_1, mode, second);
    EXPECT_EQ(current_device(), 0) << "starting a loop on device 1 moved the caller";
    std::vector<std::vector<float>> samples;
    for (int i = 0; i < 5; ++i) samples.push_back(random_floats(elements));
    for (auto* app : {&on_0, &on_1}) {
      const auto outputs = drive_lockstep(*app->mailbox(), samples);
      ASSERT_EQ(outputs.size(), samples.size());
      for (std::size_t k = 0; k < samples.size(); ++k) {
        const double want = lab_reference(samples[k]);
        EXPECT_NEAR(as_float(outputs[k]), want, 1e-3 * std::max(1.0, want));
      }
    }
    EXPECT_TRUE(run_0->tear_down().stopped);
    // The loop on device 1 goes on after the one on device 0 is gone.
    const auto later = drive_lockstep(*on_1.mailbox(), samples);
    EXPECT_EQ(later.size(), samples.size());
    const tear_down_report report = run_1->tear_down();
    EXPECT_TRUE(report.stopped) << report.error;
    EXPECT_EQ(report.counters.processed, 2 * samples.size());
  }
}

TEST(current_device, an_application_cannot_move_to_another_device) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(elements);
  app.materialize(0);
  EXPECT_EQ(app.device(), 0);
  EXPECT_THAT([&] { app.materialize(1); },
              ::testing::ThrowsMessage<composition_error>(HasSubstr("materialized on device 0")));
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
