// sched::gated_graph on the device: a captured graph of kernels that cannot be edited, gated so
// that it stops at its next kernel boundary while the preempt word is up and goes on when it
// falls, with the outputs of the ungated graph; a word left up by a dead loop releases every
// gate within its timeout and is reported.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gpu/support.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/graph.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/sched/gated_graph.hpp"
#include "resident/sched/preemption.hpp"

namespace resident::sched {
namespace {

constexpr int chain = 8;  // kernels in the main chain; a side branch of 2 more forks off after 2

/// Spins `ns`, then records that step `i` ran (out[i] = i * 3 + 1) and how many steps ran
/// before it finished (host-mapped, so the test sees progress while the graph runs).
__global__ void step_kernel(int* out, unsigned* progress, int i, long long ns) {
  const std::uint64_t start = device::globaltimer_ns();
  while (device::globaltimer_ns() - start < static_cast<std::uint64_t>(ns)) {
  }
  out[i] = i * 3 + 1;
  atomicAdd(progress, 1U);
  __threadfence_system();
}

struct closed_work {
  device_buffer out{(chain + 2) * sizeof(int)};
  host_mapped_buffer progress{sizeof(unsigned)};
  graph captured;

  explicit closed_work(long long ns) {
    stream s;
    stream side;
    RESIDENT_CUDA_TRY(cudaMemset(out.data(), 0, out.size()));
    cudaEvent_t fork = nullptr;
    cudaEvent_t join = nullptr;
    RESIDENT_CUDA_TRY(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    RESIDENT_CUDA_TRY(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    RESIDENT_CUDA_TRY(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < chain; ++i) {
      step_kernel<<<1, 1, 0, s.get()>>>(out.data_as<int>(), progress.device_as<unsigned>(), i, ns);
      if (i == 1) {
        RESIDENT_CUDA_TRY(cudaEventRecord(fork, s.get()));
        RESIDENT_CUDA_TRY(cudaStreamWaitEvent(side.get(), fork, 0));
        for (int j = chain; j < chain + 2; ++j) {
          step_kernel<<<1, 1, 0, side.get()>>>(out.data_as<int>(), progress.device_as<unsigned>(),
                                               j, ns);
        }
        RESIDENT_CUDA_TRY(cudaEventRecord(join, side.get()));
      }
    }
    RESIDENT_CUDA_TRY(cudaStreamWaitEvent(s.get(), join, 0));
    cudaGraph_t g = nullptr;
    RESIDENT_CUDA_TRY(cudaStreamEndCapture(s.get(), &g));
    captured = graph::adopt(g);
    RESIDENT_CUDA_TRY(cudaEventDestroy(fork));
    RESIDENT_CUDA_TRY(cudaEventDestroy(join));
  }

  [[nodiscard]] unsigned steps() const {
    return std::atomic_ref<unsigned>(*progress.host_as<unsigned>()).load();
  }
  void reset() {
    RESIDENT_CUDA_TRY(cudaMemset(out.data(), 0, out.size()));
    std::atomic_ref<unsigned>(*progress.host_as<unsigned>()).store(0U);
  }
  [[nodiscard]] std::vector<int> outputs() const {
    std::vector<int> v(chain + 2);
    RESIDENT_CUDA_TRY(cudaMemcpy(v.data(), out.data(), out.size(), cudaMemcpyDeviceToHost));
    return v;
  }
};

std::vector<int> every_step() {
  std::vector<int> v;
  for (int i = 0; i < chain + 2; ++i) v.push_back(i * 3 + 1);
  return v;
}

TEST(gated_graph, a_word_never_raised_passes_every_gate_and_changes_no_output) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(10'000);
  preempt_signal signal;
  const gated_graph gated(work.captured.get(), signal.word());
  EXPECT_EQ(gated.kernels(), chain + 2);
  EXPECT_EQ(gated.gates(), chain + 2);
  EXPECT_EQ(gated.ungated_edges(), 0);
  stream s;
  for (int run = 0; run < 3; ++run) {
    work.reset();
    gated.launch(s);
    s.synchronize();
    EXPECT_EQ(work.outputs(), every_step());
    EXPECT_EQ(work.steps(), static_cast<unsigned>(chain + 2));
  }
  const gate_stats st = gated.stats();
  EXPECT_EQ(st.passes, 3U * (chain + 2));
  EXPECT_EQ(st.waits, 0U);
  EXPECT_EQ(st.timeouts, 0U);
  // The source graph is left as it was: its kernel nodes alone.
  EXPECT_EQ(work.captured.nodes().size(), static_cast<std::size_t>(chain + 2));
  EXPECT_EQ(gated.gated().nodes().size(), static_cast<std::size_t>(2 * (chain + 2)));
}

TEST(gated_graph, every_nth_kernel_gets_a_gate) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(1'000);
  preempt_signal signal;
  const gated_graph gated(work.captured.get(), signal.word(), {3});
  EXPECT_EQ(gated.gates(), 4);  // kernels 0, 3, 6, 9 in topological order
  stream s;
  gated.launch(s);
  s.synchronize();
  EXPECT_EQ(work.outputs(), every_step());
}

TEST(gated_graph, a_raised_word_stops_the_graph_at_its_next_kernel_boundary_until_it_falls) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(2'000'000);  // 2 ms a kernel
  preempt_signal signal;
  const gated_graph gated(work.captured.get(), signal.word());
  stream s;
  gated.launch(s);
  // Raise once a few kernels have finished; the kernels in flight then (at most the two
  // branches') finish, and nothing starts after them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (work.steps() < 3U && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  signal.raise();
  const unsigned at_raise = work.steps();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // 15 kernels' worth
  const unsigned held = work.steps();
  EXPECT_LE(held, at_raise + 2U) << "kernels kept starting while the word was up";
  EXPECT_LT(held, static_cast<unsigned>(chain + 2)) << "the graph finished under a raised word";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(work.steps(), held) << "the graph moved on with the word up";
  signal.clear();
  s.synchronize();
  EXPECT_EQ(work.outputs(), every_step());
  const gate_stats st = gated.stats();
  EXPECT_GE(st.waits, 1U);
  EXPECT_GE(st.max_wait_ns, 40'000'000U);  // it held for the 50 ms the word was up, about
  EXPECT_EQ(st.timeouts, 0U);
}

TEST(gated_graph, the_preemption_latency_is_the_kernel_in_flight_reaching_its_next_gate) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(2'000'000);  // 2 ms a kernel
  preempt_signal signal;
  gate_options options;
  options.hold_stamps = 8;
  const gated_graph gated(work.captured.get(), signal.word(), options);
  device_buffer stamp(sizeof(std::uint64_t));
  stream s;
  stream raiser;
  gated.launch(s);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (work.steps() < 3U && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  gated.reset_first_wait();
  raise_on_device(signal.hook().word, stamp.data_as<std::uint64_t>(), raiser);
  raiser.synchronize();
  // first_wait_ns is public while the gate still holds: the word is lowered at once, long
  // before the gate's timeout.
  while (gated.stats().first_wait_ns == ~std::uint64_t{0} &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  const gate_stats holding = gated.stats();
  signal.clear();
  s.synchronize();
  const gate_stats st = gated.stats();
  EXPECT_EQ(st.first_wait_ns, holding.first_wait_ns);
  EXPECT_EQ(st.timeouts, 0U) << "the gate held until its timeout although the word was lowered";
  std::uint64_t raised = 0;
  RESIDENT_CUDA_TRY(cudaMemcpy(&raised, stamp.data(), sizeof raised, cudaMemcpyDeviceToHost));
  ASSERT_GE(st.waits, 1U);
  ASSERT_NE(st.first_wait_ns, ~std::uint64_t{0});
  // The gate after the kernel in flight at the raise began to wait at most one kernel (2 ms)
  // later; 0.5 ms of slack for the gate's own launch.
  EXPECT_GT(st.first_wait_ns, raised);
  EXPECT_LE(st.first_wait_ns - raised, 2'500'000U);
  ::testing::Test::RecordProperty("preemption_latency_ns",
                                  static_cast<int>(st.first_wait_ns - raised));
  EXPECT_EQ(work.outputs(), every_step());
  // The hold ring kept that gate's start: the one hold of the run, the first wait's stamp.
  const std::vector<std::uint64_t> holds = gated.holds();
  ASSERT_EQ(holds.size(), 1U);
  EXPECT_EQ(holds[0], st.first_wait_ns);
  EXPECT_EQ(gated.holds_lost(), 0U);
}

TEST(gated_graph, a_word_left_up_by_a_dead_loop_releases_every_gate_within_its_timeout) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(1'000);
  preempt_signal signal;
  const gated_graph gated(work.captured.get(), signal.word(), {1, std::chrono::milliseconds(5)});
  signal.raise();  // and never cleared
  stream s;
  const auto t0 = std::chrono::steady_clock::now();
  gated.launch(s);
  s.synchronize();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(work.outputs(), every_step());
  const gate_stats st = gated.stats();
  EXPECT_EQ(st.timeouts, static_cast<std::uint64_t>(gated.gates()));
  EXPECT_EQ(st.waits, static_cast<std::uint64_t>(gated.gates()));
  // Ten gates of 5 ms, at most two branches' worth in series: well under a second.
  EXPECT_LT(took, std::chrono::seconds(1));
  signal.clear();
}

TEST(gated_graph, destroyed_while_held_by_a_raised_word_it_waits_for_its_gates_timeout) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(1'000);
  preempt_signal signal;
  stream s;
  signal.raise();  // and never cleared: the graph is held at its first gate
  const auto t0 = std::chrono::steady_clock::now();
  {
    const gated_graph gated(work.captured.get(), signal.word(), {1, std::chrono::milliseconds(5)});
    gated.launch(s);
  }  // the destructor waits for the launch (its gates time out), then frees their counters
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::seconds(1));
  EXPECT_GE(took, std::chrono::milliseconds(20));  // at least the main chain's gates, 5 ms each
  s.synchronize();
  EXPECT_EQ(work.outputs(), every_step());
  signal.clear();
}

TEST(gated_graph, refuses_what_it_cannot_gate) {
  RESIDENT_REQUIRE_GPU();
  closed_work work(1'000);
  preempt_signal signal;
  EXPECT_THROW(gated_graph(nullptr, signal.word()), std::invalid_argument);
  EXPECT_THROW(gated_graph(work.captured.get(), nullptr), std::invalid_argument);
  EXPECT_THROW(gated_graph(work.captured.get(), signal.word(), {0}), std::invalid_argument);
  EXPECT_THROW(gated_graph(work.captured.get(), signal.word(), {1, std::chrono::nanoseconds(0)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace resident::sched
