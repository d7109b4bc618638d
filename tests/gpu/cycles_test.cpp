// A loop started and torn down a thousand times, with the host loaded, leaves nothing behind:
// the same free device memory, the same CUDA objects owned by resident's wrappers, the same
// host threads, and every cycle's counters exact.

#include <gmock/gmock.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "gpu/support.hpp"
#include "resident/cuda/live_objects.hpp"

namespace resident::testing {
namespace {

std::size_t host_threads() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

std::size_t free_device_bytes() {
  std::size_t free = 0;
  std::size_t total = 0;
  RESIDENT_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return free;
}

// Every mode in turn, one sample through each cycle, two host threads spinning meanwhile.
TEST(start_tear_down_cycles, a_thousand_cycles_under_load_leave_nothing_behind) {
  RESIDENT_REQUIRE_GPU();
  const std::vector<execution_mode> modes{execution_mode::while_loop, execution_mode::tail,
                                          execution_mode::host_graph, execution_mode::eager,
                                          execution_mode::persistent};
  auto cycle = [&](lab_app& app, execution_mode mode, int i) {
    auto run = run_async(app, mode);
    const auto sample = std::vector<float>(256, static_cast<float>(i % 5));
    const auto outputs = drive_lockstep(*app.mailbox(), {sample});
    const tear_down_report report = run->tear_down();
    EXPECT_TRUE(report.stopped) << to_string(mode) << ", cycle " << i << ": " << report.error;
    EXPECT_EQ(report.counters.processed + report.counters.dropped,
              report.counters.last_seq - report.counters.start_seq);
    EXPECT_EQ(outputs.size(), 1U) << to_string(mode) << ", cycle " << i;
  };
  lab_app warm(256);
  for (const auto mode : modes) cycle(warm, mode, 0);  // modules, pools, first-run state
  const std::size_t free_before = free_device_bytes();
  const live_cuda_objects objects_before = live_objects();
  const std::size_t threads_before = host_threads();

  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (int t = 0; t < 2; ++t) {
    load.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  for (int i = 1; i <= 1000; ++i) {
    lab_app app(256);
    cycle(app, modes[static_cast<std::size_t>(i) % modes.size()], i);
    if (::testing::Test::HasFailure()) break;
  }
  stop = true;
  for (auto& t : load) t.join();

  const live_cuda_objects after = live_objects();
  EXPECT_EQ(after.device_buffers, objects_before.device_buffers);
  EXPECT_EQ(after.host_mapped_buffers, objects_before.host_mapped_buffers);
  EXPECT_EQ(after.pinned_buffers, objects_before.pinned_buffers);
  EXPECT_EQ(after.streams, objects_before.streams);
  EXPECT_EQ(after.events, objects_before.events);
  EXPECT_EQ(after.graphs, objects_before.graphs);
  EXPECT_EQ(after.graph_execs, objects_before.graph_execs);
  EXPECT_EQ(host_threads(), threads_before);
  const auto free_after = free_device_bytes();
  const auto moved = free_after > free_before ? free_after - free_before : free_before - free_after;
  EXPECT_LE(moved, std::size_t{2} << 20) << "free device memory moved by " << moved << " bytes";
}

}  // namespace
}  // namespace resident::testing
