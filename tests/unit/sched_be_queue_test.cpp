// The host bookkeeping of reset-based preemption for one best-effort stream: a bounded window
// of launches in flight, FIFO submission, preempt and exact resume, and the device's
// completion records proving that no block of a non-idempotent kernel runs twice.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/sched/be_queue.hpp"

namespace resident::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

/// The message `f` throws E with; empty when it does not throw.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

std::vector<std::int64_t> all_blocks(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 0; b < n; ++b) out.push_back(b);
  return out;
}

/// "k3" for 3. Built by appending: GCC 12 warns (-Wrestrict, falsely) on "k" + std::to_string.
std::string kernel_name(std::uint64_t k) { return std::string("k").append(std::to_string(k)); }

/// Submits launch after launch until the queue says no, returning their ids.
std::vector<launch_id> drain_submissions(be_queue& q) {
  std::vector<launch_id> ids;
  while (const auto s = q.next_submission()) ids.push_back(s->id);
  return ids;
}

// ---- window and order -------------------------------------------------------------------------

TEST(be_queue, window_holds_at_most_two_launches) {
  be_queue q;
  for (std::uint64_t k = 0; k < 5; ++k) q.enqueue(kernel_name(k), 4, false);
  EXPECT_THAT(drain_submissions(q), ElementsAre(0U, 1U));
  EXPECT_EQ(q.counters().in_flight, 2U);
  EXPECT_EQ(q.counters().pending, 3U);
  // One leaves the window: exactly one more fits.
  q.complete(0);
  EXPECT_THAT(drain_submissions(q), ElementsAre(2U));
}

TEST(be_queue, window_is_configurable) {
  be_queue q(3);
  for (int k = 0; k < 5; ++k) q.enqueue("k", 1, false);
  EXPECT_EQ(q.window(), 3U);
  EXPECT_THAT(drain_submissions(q), ElementsAre(0U, 1U, 2U));
}

TEST(be_queue, submits_in_fifo_order_by_id) {
  be_queue q(1);
  const auto a = q.enqueue("a", 2, false);
  const auto b = q.enqueue("b", 3, true);
  const auto c = q.enqueue("c", 1, false);
  std::vector<std::string> names;
  std::vector<launch_id> ids;
  while (const auto s = q.next_submission()) {
    names.push_back(s->name);
    ids.push_back(s->id);
    EXPECT_EQ(s->attempt, 1);
    EXPECT_TRUE(s->skip.empty());
    EXPECT_EQ(s->first_block, 0);
    q.report_blocks(s->id, all_blocks(s->blocks));
    q.complete(s->id);
  }
  EXPECT_THAT(ids, ElementsAre(a, b, c));
  EXPECT_THAT(names, ElementsAre("a", "b", "c"));
  EXPECT_EQ(q.counters().completed, 3U);
  EXPECT_EQ(q.counters().blocks_completed, 6U);  // 2 + 3 + 1
}

// ---- preempt and resume ----------------------------------------------------------------------

TEST(be_queue, preempt_stops_submission_and_returns_the_launches_in_flight) {
  be_queue q;
  for (int k = 0; k < 4; ++k) q.enqueue("k", 8, false);
  (void)drain_submissions(q);
  EXPECT_THAT(q.preempt(), ElementsAre(0U, 1U));
  EXPECT_TRUE(q.preempted());
  // Room in the window does not matter while preempted.
  q.report_blocks(0, all_blocks(8));
  q.complete(0);
  EXPECT_EQ(q.next_submission(), std::nullopt);
}

TEST(be_queue, resume_submits_the_first_unfinished_kernel_first_skipping_its_completed_blocks) {
  be_queue q;
  q.enqueue("conv", 6, false);  // 0
  q.enqueue("gemm", 4, false);  // 1
  q.enqueue("relu", 2, false);  // 2, never submitted before the preemption
  (void)drain_submissions(q);
  EXPECT_THAT(q.preempt(), ElementsAre(0U, 1U));
  // conv finished blocks 0, 1 and 4 before its other blocks saw the preempt word; gemm 3.
  q.report_blocks(0, {4, 0, 1});
  q.preempted_exit(0);
  q.report_blocks(1, {3});
  q.preempted_exit(1);
  EXPECT_EQ(q.counters().preempted_launches, 2U);
  EXPECT_EQ(q.next_submission(), std::nullopt);
  q.resume();

  const auto first = q.next_submission();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, 0U);
  EXPECT_EQ(first->attempt, 2);
  EXPECT_THAT(first->skip, ElementsAre(0, 1, 4));  // exactly the completed blocks
  EXPECT_EQ(first->first_block, 2);
  const auto second = q.next_submission();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->id, 1U);  // before relu, which was never submitted
  EXPECT_THAT(second->skip, ElementsAre(3));
  EXPECT_EQ(second->first_block, 0);
  EXPECT_EQ(q.counters().resumed_launches, 2U);
  q.report_blocks(0, {2, 3, 5});
  q.complete(0);
  const auto third = q.next_submission();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->name, "relu");
  EXPECT_EQ(third->attempt, 1);
}

TEST(be_queue, a_launch_that_finished_before_seeing_the_preempt_word_is_complete) {
  be_queue q;
  q.enqueue("k", 3, false);
  (void)q.next_submission();
  (void)q.preempt();
  q.report_blocks(0, {0, 1, 2});
  q.preempted_exit(0);
  EXPECT_TRUE(q.finished(0));
  EXPECT_EQ(q.counters().completed, 1U);
  EXPECT_EQ(q.counters().preempted_launches, 0U);
  EXPECT_EQ(q.counters().pending, 0U);
}

// A fake device: it runs the blocks of each submission, except `skip`, in a random order (blocks
// finish out of grid order on a GPU, which is what leaves gaps behind a preemption), and on a
// preemption lets each launch finish a random number of further blocks before it exits. It
// counts every execution of every block, independently of the queue.
TEST(be_queue, random_preemptions_complete_every_block_of_every_kernel_exactly_once) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };

  be_queue q(static_cast<std::size_t>(uniform(1, 3)));
  const std::uint64_t kernels = 40;
  std::vector<std::vector<int>> runs;  // runs[id][block]: executions seen by the fake device
  for (std::uint64_t k = 0; k < kernels; ++k) {
    const auto blocks = uniform(1, 24);
    q.enqueue(kernel_name(k), blocks, false);
    runs.emplace_back(static_cast<std::size_t>(blocks), 0);
  }

  struct on_device {
    std::vector<std::int64_t> to_run;  // the submission's blocks, in the order they finish
    std::size_t next{};
    std::vector<std::int64_t> ran;  // this attempt's completion record
  };
  std::map<launch_id, on_device> device;
  const auto run_blocks = [&](launch_id id, std::size_t count) {
    auto& d = device.at(id);
    for (; count > 0 && d.next < d.to_run.size(); --count, ++d.next) {
      const auto b = d.to_run[d.next];
      ++runs[id][static_cast<std::size_t>(b)];
      d.ran.push_back(b);
    }
  };

  int preemptions = 0;
  for (int step = 0; step < 100000 && q.counters().completed < kernels; ++step) {
    while (const auto s = q.next_submission()) {
      const std::set<std::int64_t> skip(s->skip.begin(), s->skip.end());
      on_device d;
      for (std::int64_t b = 0; b < s->blocks; ++b) {
        if (!skip.contains(b)) d.to_run.push_back(b);
      }
      std::shuffle(d.to_run.begin(), d.to_run.end(), rng);
      device[s->id] = d;
    }
    if (preemptions < 60 && uniform(0, 3) == 0) {
      ++preemptions;
      const auto in_flight = q.preempt();
      ASSERT_EQ(in_flight.size(), device.size());
      for (const auto id : in_flight) {
        run_blocks(id, static_cast<std::size_t>(uniform(0, 4)));  // blocks already past the word
        const auto& d = device.at(id);
        q.report_blocks(id, d.ran);
        // A launch whose last block ran may end either way: the host may see its completion
        // before it learns of the preemption.
        if (d.next == d.to_run.size() && uniform(0, 1) == 0) {
          q.complete(id);
        } else {
          q.preempted_exit(id);
        }
        device.erase(id);
      }
      q.resume();
      continue;
    }
    if (device.empty()) continue;
    auto it = device.begin();
    std::advance(it, uniform(0, static_cast<std::int64_t>(device.size()) - 1));
    const auto id = it->first;
    run_blocks(id, static_cast<std::size_t>(uniform(1, 6)));
    if (it->second.next == it->second.to_run.size()) {
      q.report_blocks(id, it->second.ran);
      q.complete(id);
      device.erase(it);
    }
  }

  ASSERT_EQ(q.counters().completed, kernels);
  std::uint64_t total = 0;
  for (launch_id id = 0; id < runs.size(); ++id) {
    EXPECT_TRUE(q.finished(id)) << id;
    EXPECT_EQ(q.remaining_blocks(id), 0) << id;
    for (std::size_t b = 0; b < runs[id].size(); ++b) {
      EXPECT_EQ(runs[id][b], 1) << "block " << b << " of launch " << id;
    }
    total += runs[id].size();
  }
  EXPECT_EQ(q.counters().blocks_completed, total);
  EXPECT_EQ(q.counters().blocks_rerun, 0U);
  EXPECT_GT(q.counters().preempted_launches, 0U);  // the run did exercise resume
  EXPECT_EQ(q.counters().resumed_launches, q.counters().preempted_launches);
  EXPECT_EQ(q.counters().in_flight, 0U);
  EXPECT_EQ(q.counters().pending, 0U);
}

TEST(be_queue, an_idempotent_launch_resumes_from_its_first_unfinished_block_and_counts_reruns) {
  be_queue q;
  q.enqueue("softmax", 8, true);
  (void)q.next_submission();
  (void)q.preempt();
  // Blocks 0-2 and 5-6 completed; 3 is the first unfinished block.
  q.report_blocks(0, {0, 1, 2, 5, 6});
  q.preempted_exit(0);
  q.resume();
  const auto s = q.next_submission();
  ASSERT_TRUE(s);
  EXPECT_THAT(s->skip, ElementsAre(0, 1, 2));  // only the contiguous prefix
  EXPECT_EQ(s->first_block, 3);
  // The device runs 3..7: 5 and 6 run a second time, which an idempotent kernel allows.
  q.report_blocks(0, {3, 4, 5, 6, 7});
  q.complete(0);
  EXPECT_EQ(q.counters().blocks_completed, 8U);
  EXPECT_EQ(q.counters().blocks_rerun, 2U);
}

TEST(be_queue, an_idempotent_launch_may_not_rerun_its_skipped_prefix) {
  be_queue q;
  q.enqueue("softmax", 4, true);
  (void)q.next_submission();
  (void)q.preempt();
  q.report_blocks(0, {0, 1});
  q.preempted_exit(0);
  q.resume();
  (void)q.next_submission();  // skip = {0, 1}
  EXPECT_THAT(error_of<std::logic_error>([&] {
                q.report_blocks(0, {1, 2, 3});
              }),
              HasSubstr("block 1 of kernel 'softmax' (launch 0) completed twice"));
}

TEST(be_queue, a_block_reported_twice_for_a_non_idempotent_kernel_throws) {
  be_queue q;
  q.enqueue("gemm", 4, false);
  (void)q.next_submission();
  (void)q.preempt();
  q.report_blocks(0, {0, 2});
  q.preempted_exit(0);
  q.resume();
  (void)q.next_submission();
  EXPECT_THAT(error_of<std::logic_error>([&] {
                q.report_blocks(0, {1, 2, 3});
              }),
              HasSubstr("block 2 of kernel 'gemm' (launch 0) completed twice"));
  // The rejected record changed nothing.
  EXPECT_EQ(q.remaining_blocks(0), 2);
  EXPECT_EQ(q.counters().blocks_completed, 2U);
}

TEST(be_queue, a_block_listed_twice_in_one_record_throws) {
  be_queue q;
  q.enqueue("gemm", 4, true);
  (void)q.next_submission();
  EXPECT_THAT(error_of<std::logic_error>([&] {
                q.report_blocks(0, {3, 1, 3});
              }),
              HasSubstr("block 3 of kernel 'gemm' (launch 0) completed twice"));
}

// ---- misuse ----------------------------------------------------------------------------------

TEST(be_queue, rejects_a_window_of_zero) {
  EXPECT_THAT(error_of<std::invalid_argument>([] { be_queue q(0); }), HasSubstr("window is 0"));
}

TEST(be_queue, rejects_a_launch_without_blocks_naming_the_kernel) {
  be_queue q;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { q.enqueue("gemm", 0, false); }),
              HasSubstr("kernel 'gemm' has 0 blocks"));
  EXPECT_THAT(error_of<std::invalid_argument>([&] { q.enqueue("", 3, false); }),
              HasSubstr("empty kernel name"));
}

TEST(be_queue, rejects_complete_of_an_unknown_or_idle_launch) {
  be_queue q;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { q.complete(7); }),
              HasSubstr("unknown launch 7"));
  q.enqueue("gemm", 2, false);
  EXPECT_THAT(error_of<std::logic_error>([&] { q.complete(0); }),
              HasSubstr("kernel 'gemm' (launch 0) is not in flight"));
}

TEST(be_queue, rejects_resume_when_not_preempted_or_still_draining) {
  be_queue q;
  EXPECT_THAT(error_of<std::logic_error>([&] { q.resume(); }), HasSubstr("not preempted"));
  q.enqueue("gemm", 2, false);
  (void)q.next_submission();
  (void)q.preempt();
  EXPECT_THAT(error_of<std::logic_error>([&] { q.resume(); }),
              HasSubstr("kernel 'gemm' (launch 0) is still in flight"));
  EXPECT_THAT(error_of<std::logic_error>([&] { (void)q.preempt(); }),
              HasSubstr("already preempted"));
}

TEST(be_queue, rejects_preempted_exit_of_a_launch_not_in_flight) {
  be_queue q;
  q.enqueue("gemm", 2, false);
  q.enqueue("conv", 2, false);
  (void)q.next_submission();
  EXPECT_THAT(error_of<std::logic_error>([&] { q.preempted_exit(0); }),
              HasSubstr("the queue is not preempted"));
  (void)q.preempt();
  EXPECT_THAT(error_of<std::logic_error>([&] { q.preempted_exit(1); }),
              HasSubstr("kernel 'conv' (launch 1) is not in flight"));
}

TEST(be_queue, rejects_reports_for_unsubmitted_launches_or_blocks_outside_the_grid) {
  be_queue q;
  q.enqueue("gemm", 2, false);
  EXPECT_THAT(error_of<std::logic_error>([&] { q.report_blocks(0, {0}); }),
              HasSubstr("was never submitted"));
  (void)q.next_submission();
  EXPECT_THAT(error_of<std::invalid_argument>([&] { q.report_blocks(0, {2}); }),
              HasSubstr("block 2 of kernel 'gemm' (launch 0) is outside its grid of 2 blocks"));
}

}  // namespace
}  // namespace resident::sched
