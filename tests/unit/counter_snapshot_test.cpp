// The host's snapshot of a running loop's counters: it never returns a mix of two commits,
// however long the device's release of last_seq takes to arrive.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "resident/detail/counter_snapshot.hpp"

namespace resident::detail {
namespace {

using namespace std::chrono_literals;

void store_release(std::uint64_t& word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(word).store(value, std::memory_order_release);
}

TEST(counter_snapshot, a_settled_commit_is_read_at_once) {
  loop_control control{};
  control.last_seq = 15;
  control.processed = 7;
  control.dropped = 3;
  control.repeated = 2;
  control.heartbeat = 40;
  const loop_counters c = snapshot_counters(control, 5, 10s);
  EXPECT_EQ(c.last_seq, 15U);
  EXPECT_EQ(c.processed, 7U);
  EXPECT_EQ(c.dropped, 3U);
  EXPECT_EQ(c.repeated, 2U);
  EXPECT_EQ(c.iterations, 40U);
  EXPECT_EQ(c.start_seq, 5U);
}

TEST(counter_snapshot, carries_the_response_times_and_deadline_misses) {
  loop_control control{};
  control.last_seq = 4;
  control.processed = 4;
  control.responses.max_response_ns = 9'000;
  control.responses.deadline_misses = 2;
  control.responses.worst_overrun_ns = 4'000;
  control.responses.max_arrival_response_ns = 12'000;
  control.responses.arrival_deadline_misses = 3;
  control.responses.worst_arrival_overrun_ns = 7'000;
  const loop_counters c = snapshot_counters(control, 0, 10s);
  EXPECT_EQ(c.max_response_ns, 9'000U);
  EXPECT_EQ(c.deadline_misses, 2U);
  EXPECT_EQ(c.worst_overrun_ns, 4'000U);
  EXPECT_EQ(c.max_arrival_response_ns, 12'000U);
  EXPECT_EQ(c.arrival_deadline_misses, 3U);
  EXPECT_EQ(c.worst_arrival_overrun_ns, 7'000U);
}

// The writer has stored the next commit's processed and dropped but holds back last_seq for
// 20 ms, far longer than any number of cached re-reads takes: the snapshot waits for it.
TEST(counter_snapshot, a_commit_whose_release_is_late_is_waited_for) {
  loop_control control{};
  control.last_seq = 10;
  control.processed = 7;
  control.dropped = 3;
  std::atomic<bool> torn{false};
  std::thread writer([&] {
    store_release(control.processed, 8);
    store_release(control.dropped, 5);  // the next commit: sample 13, two dropped
    torn.store(true);
    const auto until = std::chrono::steady_clock::now() + 20ms;
    while (std::chrono::steady_clock::now() < until) {
    }
    store_release(control.last_seq, 13);
  });
  while (!torn.load()) {
  }
  const loop_counters c = snapshot_counters(control, 0, 10s);
  writer.join();
  EXPECT_EQ(c.last_seq, 13U);
  EXPECT_EQ(c.processed, 8U);
  EXPECT_EQ(c.dropped, 5U);
  EXPECT_EQ(c.processed + c.dropped, c.last_seq - c.start_seq);
}

TEST(counter_snapshot, a_writer_that_never_finishes_ends_the_snapshot_at_the_bound) {
  loop_control control{};
  control.last_seq = 10;
  control.processed = 8;
  control.dropped = 5;  // never consistent with last_seq
  const loop_counters c = snapshot_counters(control, 0, 1ms);
  EXPECT_EQ(c.last_seq, 10U);
  EXPECT_EQ(c.processed, 8U);
  EXPECT_EQ(c.dropped, 5U);
}

}  // namespace
}  // namespace resident::detail
