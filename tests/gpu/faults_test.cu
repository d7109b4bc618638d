// Faults injected into a running loop, each in a process of its own: a sticky CUDA error (a trap,
// an illegal address) poisons every later CUDA call of the process, so each scenario runs as a
// gtest death test in the "threadsafe" style (the child re-executes this binary for that one
// scenario) and reports through its exit code and its stderr. What each must show: the failure is
// reported with the mode named, tear-down ends within its bound (or says the loop did not stop),
// the counters stay exact, nothing hangs, and the process can still report and exit.

#include <gmock/gmock.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "gpu/support.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/partition/green_context.hpp"

namespace resident::testing {
namespace {

using namespace std::chrono_literals;

enum class fault_kind : int { trap = 0, bad_address = 1 };

__global__ void fault_at_kernel(const loop_state* loop, const float* in, float* out, std::int64_t n,
                                std::uint64_t at, int kind) {
  if (threadIdx.x == 0 && device::current_sample(loop) == at) {
    if (kind == static_cast<int>(fault_kind::trap)) __trap();
    *reinterpret_cast<volatile int*>(static_cast<std::uintptr_t>(0x10)) = 1;  // unmapped
  }
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = in[i];
}

/// out = in, and on sample `at` the kernel traps or stores to an unmapped address.
class fault_at final : public Operator {
 public:
  void setup(OperatorSpec& spec) override {
    _at = spec.param<std::int64_t>("at", 5);
    _kind = spec.param<std::int64_t>("kind", 0);
    spec.device_input("in", 64 * sizeof(float));
    spec.device_output("out", 64 * sizeof(float));
  }
  void compute(CaptureContext& ctx) override {
    fault_at_kernel<<<1, 64, 0, ctx.stream()>>>(
        ctx.loop(), ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"), 64,
        static_cast<std::uint64_t>(_at), static_cast<int>(_kind));
    RESIDENT_CUDA_CHECK_LAUNCH("fault_at_kernel");
  }

 private:
  std::int64_t _at{};
  std::int64_t _kind{};
};

class faulting_app final : public Application {
 public:
  faulting_app(std::uint64_t at, fault_kind kind) : _at(at), _kind(kind) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto bad = make_operator<fault_at>("faulty", arg("at", static_cast<std::int64_t>(_at)),
                                       arg("kind", static_cast<std::int64_t>(_kind)));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, bad, {{"sample", "in"}});
    add_flow(bad, tx, {{"out", "in"}});
  }
  std::shared_ptr<io::mailbox> _mailbox =
      std::make_shared<io::mailbox>(io::mailbox::config{64 * sizeof(float), 64 * sizeof(float), 4});

 private:
  std::uint64_t _at;
  fault_kind _kind;
};

// The child's verdict: prints what it saw and exits 0 when every expectation held.
[[noreturn]] void verdict(bool ok, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", ok ? "fault scenario held" : "fault scenario FAILED",
               what.c_str());
  std::fflush(stderr);
  std::_Exit(ok ? 0 : 1);
}

// Samples go in until the loop stops answering (the fault); then the actuator's wait times out
// instead of hanging, the supervisor reports, and tear-down is bounded.
void run_fault_scenario(execution_mode mode, fault_kind kind) {
  faulting_app app(5, kind);
  run_options options;
  options.stall_timeout = 200ms;
  auto run = run_async(app, mode, options);
  const std::uint64_t start = app._mailbox->published();
  std::vector<std::byte> out(64 * sizeof(float));
  std::uint64_t answered = 0;
  for (int i = 0; i < 10; ++i) {
    const auto sample = random_floats(64);
    const io::output_stamp before = app._mailbox->latest_output();
    (void)app._mailbox->publish(as_bytes(sample));
    const auto t0 = std::chrono::steady_clock::now();
    const io::output_stamp got = app._mailbox->wait_output(before, out, 500ms);
    if (std::chrono::steady_clock::now() - t0 > 2s)
      verdict(false, "wait_output overran its 500 ms");
    if (got.empty()) break;  // the loop died: an actuator waiting on it is told so in time
    ++answered;
  }
  if (answered != 4) verdict(false, "answered " + std::to_string(answered) + " samples, not 4");
  const auto t0 = std::chrono::steady_clock::now();
  const tear_down_report report = run->tear_down(2s);
  const auto took = std::chrono::steady_clock::now() - t0;
  std::fprintf(stderr, "report: stopped=%d error='%s'\n", report.stopped ? 1 : 0,
               report.error.c_str());
  if (took > 5s) verdict(false, "tear_down took longer than 5 s");
  if (report.error.empty()) verdict(false, "the report names no failure");
  if (report.error.find(std::string(to_string(mode))) == std::string::npos) {
    verdict(false, "the report does not name the mode");
  }
  const loop_counters& c = report.counters;
  if (c.processed + c.dropped != c.last_seq - c.start_seq || c.start_seq != start ||
      c.processed < 4 || c.processed > 5) {
    verdict(false, "counters not exact: processed " + std::to_string(c.processed) + ", dropped " +
                       std::to_string(c.dropped) + ", last_seq " + std::to_string(c.last_seq));
  }
  run.reset();  // destroying the handle after a lost context must not hang or throw either
  verdict(true, std::string(to_string(mode)) + ": " + report.error);
}

class fault_modes : public ::testing::TestWithParam<execution_mode> {};

INSTANTIATE_TEST_SUITE_P(modes, fault_modes,
                         ::testing::Values(execution_mode::eager, execution_mode::host_graph,
                                           execution_mode::while_loop, execution_mode::tail),
                         mode_test_name);

TEST_P(fault_modes, an_operator_that_traps_mid_run_is_reported_and_torn_down) {
  RESIDENT_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_fault_scenario(GetParam(), fault_kind::trap), ::testing::ExitedWithCode(0),
              "fault scenario held");
}

TEST_P(fault_modes, an_operator_that_faults_on_a_bad_address_is_reported_and_torn_down) {
  RESIDENT_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_fault_scenario(GetParam(), fault_kind::bad_address), ::testing::ExitedWithCode(0),
              "fault scenario held");
}

// Two loops in one process, each on its own SM partition (green contexts), one faults: a sticky
// error belongs to the whole CUDA context, which the partitions share, so the other loop may
// stop working too. What must hold is that both are reported and torn down in bounded time, and
// the healthy one's counters stay exact up to the fault; the child says what the healthy loop
// did.
void run_two_loops_one_faults() {
  const auto parts = partition::partition_set::split({16, 16});
  lab_app healthy(64);
  faulting_app faulty(3, fault_kind::trap);
  run_options on_a;
  on_a.partition = parts->share(0);
  run_options on_b;
  on_b.partition = parts->share(1);
  auto a = run_async(healthy, execution_mode::while_loop, on_a);
  auto b = run_async(faulty, execution_mode::while_loop, on_b);
  const auto good = drive_lockstep(*healthy.mailbox(), {random_floats(64), random_floats(64)});
  if (good.size() != 2) verdict(false, "the healthy loop did not answer before the fault");
  // One sample at a time (the newest policy would skip a sample published behind another): the
  // third traps, and the fourth finds the loop dead.
  std::vector<std::byte> faulty_out(64 * sizeof(float));
  for (int i = 0; i < 4; ++i) {
    const io::output_stamp before = faulty._mailbox->latest_output();
    (void)faulty._mailbox->publish(as_bytes(random_floats(64)));
    (void)faulty._mailbox->wait_output(before, faulty_out, 500ms);
  }
  std::vector<std::byte> out(sizeof(float));
  const io::output_stamp before = healthy.mailbox()->latest_output();
  (void)healthy.mailbox()->publish(as_bytes(random_floats(64)));
  const bool healthy_answers = !healthy.mailbox()->wait_output(before, out, 500ms).empty();
  const auto t0 = std::chrono::steady_clock::now();
  const tear_down_report rb = b->tear_down(2s);
  const tear_down_report ra = a->tear_down(2s);
  if (std::chrono::steady_clock::now() - t0 > 8s) verdict(false, "tear-downs took over 8 s");
  std::fprintf(stderr, "healthy loop after the fault: answers=%d stopped=%d error='%s'\n",
               healthy_answers ? 1 : 0, ra.stopped ? 1 : 0, ra.error.c_str());
  if (rb.error.empty()) verdict(false, "the faulting loop's report names no failure");
  if (!healthy_answers && ra.error.empty()) {
    verdict(false, "the healthy loop stopped answering but its report says nothing");
  }
  const loop_counters& c = ra.counters;
  if (c.processed + c.dropped != c.last_seq - c.start_seq || c.processed < 2) {
    verdict(false, "the healthy loop's counters are not exact");
  }
  a.reset();
  b.reset();
  verdict(true, std::string("healthy loop ") + (healthy_answers ? "kept answering" : "stopped") +
                    "; faulting loop: " + rb.error);
}

TEST(faults, two_loops_on_partitions_where_one_faults_are_both_reported_and_torn_down) {
  RESIDENT_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_two_loops_one_faults(), ::testing::ExitedWithCode(0), "fault scenario held");
}

}  // namespace
}  // namespace resident::testing
