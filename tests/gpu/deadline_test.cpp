// Deadline accounting (run_options::deadline): the device measures each processed sample's
// release -> commit and counts the misses exactly, in every mode. A body that overruns on cue
// (every k-th sample) gives a known number of misses; one that never does gives none.

#include <gmock/gmock.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

constexpr std::int64_t elements = 256;

// rx -> slow_every -> tx: every `every`-th sample spins `slow_ns` before its copy.
class overrun_app final : public Application {
 public:
  overrun_app(std::int64_t slow_ns, std::int64_t every) : _slow_ns(slow_ns), _every(every) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto slow = make_operator<slow_every>("slow", arg("elements", elements), arg("ns", _slow_ns),
                                          arg("every", _every));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, slow, {{"sample", "in"}});
    add_flow(slow, tx, {{"out", "in"}});
  }
  std::shared_ptr<io::mailbox> _mailbox = std::make_shared<io::mailbox>(
      io::mailbox::config{elements * sizeof(float), elements * sizeof(float), 4});

 private:
  std::int64_t _slow_ns;
  std::int64_t _every;
};

class deadline_modes : public ::testing::TestWithParam<execution_mode> {};

// persistent mode runs slow_every through its own device form (a user's operator's form).
INSTANTIATE_TEST_SUITE_P(modes, deadline_modes,
                         ::testing::Values(execution_mode::eager, execution_mode::host_graph,
                                           execution_mode::while_loop, execution_mode::tail,
                                           execution_mode::persistent),
                         mode_test_name);

TEST_P(deadline_modes, every_kth_sample_slowed_past_the_deadline_is_counted_exactly) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::int64_t every = 4;
  // 30 ms on every 4th sample against a 10 ms deadline: wide enough that a sample the body does
  // not slow stays far inside it under compute-sanitizer too (a tool's launch overhead put a
  // host-graph sample past a 1 ms deadline under memcheck).
  overrun_app app(30'000'000, every);
  run_options options;
  options.deadline = std::chrono::milliseconds(10);
  std::uint64_t callback_misses = 0;
  options.on_deadline_miss = [&](const loop_counters& c) { callback_misses = c.deadline_misses; };
  auto run = run_async(app, GetParam(), options);
  const std::uint64_t start = app._mailbox->published();
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 30; ++i) samples.push_back(random_floats(elements));
  const auto outputs = drive_lockstep(*app._mailbox, samples, std::chrono::milliseconds(2000));
  ASSERT_EQ(outputs.size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    ASSERT_EQ(std::memcmp(outputs[i].data(), samples[i].data(), outputs[i].size()), 0)
        << "sample " << i << " came back changed";
  }
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  const loop_counters& c = report.counters;
  EXPECT_EQ(c.processed, samples.size());
  std::uint64_t slowed = 0;
  for (std::uint64_t seq = start + 1; seq <= start + samples.size(); ++seq) {
    slowed += seq % every == 0 ? 1 : 0;
  }
  EXPECT_EQ(c.deadline_misses, slowed) << "each slowed sample misses, no other does";
  EXPECT_GE(c.worst_overrun_ns, 19'000'000U) << "30 ms against a 10 ms deadline";
  EXPECT_LT(c.worst_overrun_ns, 500'000'000U);
  EXPECT_GE(c.max_response_ns, 30'000'000U);
  EXPECT_EQ(c.max_response_ns, c.worst_overrun_ns + 10'000'000U);
  EXPECT_EQ(c.arrival_deadline_misses, 0U) << "the mailbox's handler stamps no arrival";
  EXPECT_EQ(callback_misses, slowed) << "the supervisor reported the misses";
}

TEST_P(deadline_modes, without_a_deadline_nothing_misses_and_the_longest_response_is_kept) {
  RESIDENT_REQUIRE_GPU();
  overrun_app app(2'000'000, 5);
  auto run = run_async(app, GetParam());
  const auto outputs = drive_lockstep(
      *app._mailbox, {random_floats(elements), random_floats(elements), random_floats(elements),
                      random_floats(elements), random_floats(elements)});
  ASSERT_EQ(outputs.size(), 5U);
  const tear_down_report report = run->tear_down();
  ASSERT_TRUE(report.stopped) << report.error;
  EXPECT_EQ(report.counters.deadline_misses, 0U);
  EXPECT_EQ(report.counters.worst_overrun_ns, 0U);
  EXPECT_GE(report.counters.max_response_ns, 2'000'000U) << "one of five samples was slowed";
}

// The library's own forms in persistent mode: a deadline below any response makes every
// processed sample a miss, one far above none.
TEST(deadline_persistent, counts_every_sample_against_a_deadline_below_any_response) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(1000);
  for (const auto deadline :
       {std::chrono::nanoseconds(1), std::chrono::nanoseconds(1'000'000'000)}) {
    SCOPED_TRACE("deadline " + std::to_string(deadline.count()) + " ns");
    run_options options;
    options.deadline = deadline;
    auto run = run_async(app, execution_mode::persistent, options);
    std::vector<std::vector<float>> samples;
    for (int i = 0; i < 20; ++i) samples.push_back(random_floats(1000));
    ASSERT_EQ(drive_lockstep(*app.mailbox(), samples).size(), samples.size());
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_EQ(report.counters.processed, samples.size());
    EXPECT_GT(report.counters.max_response_ns, 0U);
    const bool all_miss = deadline.count() == 1;
    EXPECT_EQ(report.counters.deadline_misses, all_miss ? samples.size() : 0U);
    if (all_miss) {
      EXPECT_EQ(report.counters.worst_overrun_ns, report.counters.max_response_ns - 1);
    }
  }
}

}  // namespace
}  // namespace resident::testing
