// Best-effort work beside a resident loop that never lets the context go idle: the kernels it
// launches must already be loaded (under lazy module loading a first launch may wait for the
// loop to end), and a launch that cannot finish must be reported by stop(), never hang it.
//
// LazyLoading.* matters most in a process of its own with CUDA_MODULE_LOADING=LAZY, where no
// earlier test has loaded the kernels: scripts/gpu-check runs it so. In the whole suite (eager
// loading, see support.cu) it still checks that the work finishes and is right.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "resident/cuda/device.hpp"
#include "resident/sched/be_models.hpp"
#include "support.hpp"

namespace resident::testing {
namespace {

using namespace std::chrono_literals;

TEST(LazyLoading, BeRunnerMadeBeforeTheLoopRunsBesideIt) {
  RESIDENT_REQUIRE_GPU();
  std::printf("module loading: %s\n", query_device(0).module_loading.c_str());
  // The model and the runner are made before the loop starts; nothing has launched their
  // kernels yet.
  sched::mlp_model model(64, {128, 128, 64}, 11);
  const std::vector<float> x = random_floats(model.input_elements());
  model.set_input(x);
  const auto want = model.reference(x);
  sched::preempt_signal signal;
  stream s(0);
  sched::be_runner_options ro;
  ro.stop_timeout = 10s;  // a launch that never starts fails the test instead of hanging it
  sched::be_runner runner(model.calls(), s.get(), &signal, ro);

  lab_app app(256);
  run_options o;
  o.preempt = signal.hook();
  o.poll_ns = 2'000'000;  // the handler polls inside its kernel: the context is never idle
  auto handle = run_async(app, execution_mode::while_loop, o);
  runner.start();
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 20; ++i) samples.push_back(random_floats(256));
  for (const auto& sample : samples) {
    std::this_thread::sleep_for(2ms);
    const auto one = drive_lockstep(*app.mailbox(), {sample});
    ASSERT_EQ(one.size(), 1U);
    EXPECT_NEAR(as_float(one[0]), lab_reference(sample),
                1e-4 * std::max(1.0, lab_reference(sample)));
  }
  // Let a few whole sequences run while the loop idles in its handler.
  std::this_thread::sleep_for(50ms);
  const sched::be_runner_stats stats = runner.stop();
  s.synchronize();
  const tear_down_report report = handle->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_GT(stats.sequences, 0U);
  EXPECT_EQ(stats.repeated_commits, 0U);
  // The last sequence stop() cut short left the scores half done: run one more to the end.
  (void)runner.run_sequences(1);
  s.synchronize();
  const auto got = model.read_output();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-3 * std::max(1.0, std::abs(want[i]))) << "score " << i;
  }
}

// Spins until *flag is set (or 20 s pass, so a broken test cannot hold the GPU for ever).
__global__ void wait_for_flag(const volatile std::uint32_t* flag) {
  std::uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    if (*flag != 0U) return;
    std::uint64_t now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > 20'000'000'000ULL) return;
    __nanosleep(1000);
  }
}

TEST(LazyLoading, StopReportsALaunchThatCannotFinish) {
  RESIDENT_REQUIRE_GPU();
  sched::mlp_model model(16, {64, 64}, 3);
  stream s(0);
  host_mapped_buffer flag(sizeof(std::uint32_t));
  auto* host_flag = flag.host_as<std::uint32_t>();
  std::atomic_ref<std::uint32_t>(*host_flag).store(0);
  // Everything the runner launches queues behind this kernel until the flag is set.
  wait_for_flag<<<1, 1, 0, s.get()>>>(flag.device_as<const std::uint32_t>());
  RESIDENT_CUDA_CHECK_LAUNCH("wait_for_flag");
  sched::be_runner_options ro;
  ro.name = "blocked";
  ro.preemptible = false;
  ro.stop_timeout = 200ms;
  sched::be_runner runner(model.calls(), s.get(), nullptr, ro);
  runner.start();
  std::this_thread::sleep_for(20ms);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)runner.stop();
    ADD_FAILURE() << "stop() returned although its launch could not finish";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("be_runner 'blocked'"), std::string::npos) << what;
    EXPECT_NE(what.find("mlp.scores.fill"), std::string::npos) << what;  // the first call
    EXPECT_NE(what.find("did not finish within 200 ms"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(s.synchronize_for(50ms));  // still blocked: a bounded wait says so
  // The spinning form (poll 0, as be_runner::retire waits) is bounded the same way.
  const auto spin0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(s.synchronize_for(30ms, 0ns));
  EXPECT_GE(std::chrono::steady_clock::now() - spin0, 30ms);
  EXPECT_FALSE(s.ready());
  std::atomic_ref<std::uint32_t>(*host_flag).store(1);
  // The queued launches run now; nothing is left in flight on the GPU.
  EXPECT_TRUE(s.synchronize_for(10s));
  EXPECT_TRUE(s.ready());
}

}  // namespace
}  // namespace resident::testing
