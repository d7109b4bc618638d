// Over-rate input: the loop's counters account for every sample the sensor released, and what
// the actuator sees is always a consistent (untorn) output of the sample it names.

#include <gmock/gmock.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <numeric>
#include <span>
#include <thread>
#include <vector>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

constexpr std::int64_t elements = 64;       // 256 bytes: the sequence-lock format
constexpr std::int64_t line_elements = 12;  // 48 bytes: one tagged line (mailbox_format::lines)

// rx -> busy_wait(50 us) ; rx -> sum -> tx. The sample's values encode its sequence number, so
// each output can be checked against the sequence number committed with it.
class slow_app final : public Application {
 public:
  explicit slow_app(std::int64_t busy_ns, std::int64_t n = elements)
      : _busy_ns(busy_ns),
        _n(n),
        _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{static_cast<std::size_t>(n) * sizeof(float), sizeof(float), 4})) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto slow = make_operator<busy_wait>("slow", arg("ns", _busy_ns));
    auto sum = make_operator<ops::sum_reduce>("sum", arg("elements", _n));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, sum, {{"sample", "in"}});
    add_flow(sum, tx);
    (void)slow;
  }
  std::int64_t _busy_ns;
  std::int64_t _n;
  std::shared_ptr<io::mailbox> _mailbox;
};

std::vector<float> sample_for(std::uint64_t seq, std::int64_t n = elements) {
  return std::vector<float>(static_cast<std::size_t>(n), static_cast<float>(seq));  // sum: seq * n
}

struct sampling_case {
  execution_mode mode;
  sample_policy policy;
  bool fuse{true};    // run_options::fuse: the same semantics with separate framework kernels
  bool lines{false};  // samples small enough for the mailbox's lines format
};

class over_rate : public ::testing::TestWithParam<sampling_case> {};

std::vector<sampling_case> all_cases() {
  std::vector<sampling_case> cases;
  for (const auto mode : all_execution_modes) {
    for (const auto policy : {sample_policy::skip_duplicate, sample_policy::every}) {
      cases.push_back({mode, policy});
      cases.push_back({mode, policy, false});
      cases.push_back({mode, policy, true, true});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(all, over_rate, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  std::string name =
      std::string(to_string(info.param.mode)) + "_" + std::string(to_string(info.param.policy)) +
      (info.param.fuse ? "" : "_separate_kernels") + (info.param.lines ? "_lines" : "");
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

TEST_P(over_rate, counters_account_for_every_sample_and_outputs_are_consistent) {
  RESIDENT_REQUIRE_GPU();
  const std::int64_t n = GetParam().lines ? line_elements : elements;
  slow_app app(50'000, n);
  ASSERT_EQ(app._mailbox->format(),
            GetParam().lines ? io::mailbox_format::lines : io::mailbox_format::sequence_lock);
  run_options options;
  options.policy = GetParam().policy;
  options.fuse = GetParam().fuse;
  auto run = run_async(app, GetParam().mode, options);

  // The actuator checks every output it sees: the payload must belong to the sample it names,
  // and samples only move forward (no policy here repeats or goes back).
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::atomic<int> seen{0};
  std::atomic<int> out_of_order{0};
  std::thread actuator([&] {
    io::output_stamp last = app._mailbox->latest_output();
    std::vector<std::byte> out(sizeof(float));
    while (!stop.load()) {
      const io::output_stamp got = app._mailbox->wait_output(last, out, 10ms);
      if (got.empty()) continue;
      if (as_float(out) != static_cast<float>(got.seq * n)) ++torn;
      if (got.seq <= last.seq || got.commit <= last.commit) ++out_of_order;
      ++seen;
      last = got;
    }
  });

  // The sensor releases samples far faster than the 50 us body can take them. Meanwhile every
  // live snapshot of the counters must satisfy the loop's invariant.
  constexpr std::uint64_t total = 2000;
  int bad_snapshots = 0;
  const auto check_snapshot = [&] {
    const loop_counters c = run->counters();
    if (c.processed + c.dropped != c.last_seq - c.start_seq) ++bad_snapshots;
  };
  for (std::uint64_t i = 1; i <= total; ++i) {
    const auto s = sample_for(i, n);
    // Not ASSERT: returning here would leave the actuator thread joinable (std::terminate).
    if (const std::uint64_t seq = app._mailbox->publish(as_bytes(s)); seq != i) {
      ADD_FAILURE() << "publish " << i << " was numbered " << seq;
      break;
    }
    check_snapshot();
    if (i % 16 == 0) std::this_thread::sleep_for(10us);
  }
  // Every policy here processes the final sample eventually.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (run->counters().last_seq != total && std::chrono::steady_clock::now() < deadline) {
    check_snapshot();
  }
  const tear_down_report report = run->tear_down();
  stop = true;
  actuator.join();

  ASSERT_TRUE(report.stopped) << report.error;
  const loop_counters& c = report.counters;
  EXPECT_EQ(c.last_seq, total);
  EXPECT_EQ(c.processed + c.dropped, total)
      << "processed " << c.processed << " dropped " << c.dropped;
  EXPECT_GT(c.dropped, 0U) << "the sensor should have outpaced a 50 us body";
  EXPECT_GT(c.processed, 0U);
  EXPECT_EQ(c.repeated, 0U);
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(out_of_order.load(), 0);
  EXPECT_EQ(bad_snapshots, 0) << "live counters broke processed + dropped == last - start";
  EXPECT_GT(seen.load(), 0);
}

TEST(sample_policy_newest, repeats_the_latest_sample_while_nothing_new_arrives) {
  RESIDENT_REQUIRE_GPU();
  for (const auto mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    slow_app app(1000);
    run_options options;
    options.policy = sample_policy::newest;
    auto run = run_async(app, mode, options);
    const io::output_stamp before = app._mailbox->latest_output();
    const auto s = sample_for(1);
    app._mailbox->publish(as_bytes(s));
    // The actuator is told of every repeat: each is a new commit of sample 1, in order.
    std::vector<std::byte> out(sizeof(float));
    io::output_stamp last = before;
    int repeats_seen = 0;
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (repeats_seen < 10 && std::chrono::steady_clock::now() < deadline) {
      const io::output_stamp got = app._mailbox->wait_output(last, out, 100ms);
      if (got.empty()) continue;
      EXPECT_EQ(got.seq, 1U);
      EXPECT_GT(got.commit, last.commit);
      EXPECT_EQ(as_float(out), static_cast<float>(elements));
      if (!last.empty()) ++repeats_seen;
      last = got;
    }
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_GE(repeats_seen, 10) << "wait_output must report repeated commits of sample 1";
    EXPECT_EQ(report.counters.processed, 1U);
    EXPECT_EQ(report.counters.dropped, 0U);
    EXPECT_GE(report.counters.repeated, 10U);
    // Commits so far: the first run of sample 1 and every repeat.
    const io::output_stamp final_output = app._mailbox->read_output(out);
    EXPECT_EQ(final_output.seq, 1U);
    EXPECT_EQ(final_output.commit - before.commit, 1U + report.counters.repeated);
    EXPECT_EQ(as_float(out), static_cast<float>(elements));
  }
}

// Bursts of 3 fit in the 4-slot ring: every sample is processed, once, in publishing order.
TEST(sample_policy_every, processes_each_sample_in_order_when_the_loop_keeps_up) {
  RESIDENT_REQUIRE_GPU();
  for (const auto mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    slow_app app(1000);
    run_options options;
    options.policy = sample_policy::every;
    options.telemetry_samples = 64;  // one entry per DAG run, with the sample it processed
    auto run = run_async(app, mode, options);
    for (std::uint64_t i = 1; i <= 30; i += 3) {
      for (std::uint64_t k = i; k < i + 3; ++k) app._mailbox->publish(as_bytes(sample_for(k)));
      const auto deadline = std::chrono::steady_clock::now() + 2s;
      while (run->counters().last_seq < i + 2 && std::chrono::steady_clock::now() < deadline) {
      }
    }
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_EQ(report.counters.processed, 30U);
    EXPECT_EQ(report.counters.dropped, 0U);
    std::vector<std::byte> out(sizeof(float));
    EXPECT_EQ(app._mailbox->read_output(out).seq, 30U);
    EXPECT_EQ(as_float(out), static_cast<float>(30 * elements));
    std::vector<std::uint64_t> order;
    for (const telemetry_entry& e : run->telemetry()) order.push_back(e.seq);
    std::vector<std::uint64_t> want(30);
    std::iota(want.begin(), want.end(), 1U);
    EXPECT_EQ(order, want);
  }
}

// Streaming telemetry: a run five times longer than its device ring hands every entry to the
// consumer, in order, and keeps none itself.
TEST(streaming_telemetry, hands_every_entry_of_a_run_longer_than_its_ring_to_the_consumer) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::uint64_t total = 5 * 1024;
  for (const auto mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    slow_app app(1000);
    std::mutex mutex;
    std::vector<std::uint64_t> order;
    order.reserve(total);
    std::uint64_t batches = 0;
    run_options options;
    options.policy = sample_policy::every;
    options.telemetry_samples = 1024;  // the ring: a fifth of the run
    options.on_telemetry = [&](std::span<const telemetry_entry> batch) {
      const std::lock_guard lock(mutex);
      ++batches;
      for (const telemetry_entry& e : batch) order.push_back(e.seq);
    };
    auto run = run_async(app, mode, options);
    // 4 kHz: the supervisor (every 50 ms) drains the ring long before it wraps. At most three
    // samples in flight, so a host hiccup followed by a catch-up never overruns the 4-slot
    // mailbox (the policy would then drop samples, which is not under test here).
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 1; i <= total; ++i) {
      std::this_thread::sleep_until(start + i * 250us);
      const auto limit = std::chrono::steady_clock::now() + 2s;
      while (i - 1 - run->counters().last_seq >= 3 && std::chrono::steady_clock::now() < limit) {
      }
      app._mailbox->publish(as_bytes(sample_for(i)));
    }
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (run->counters().last_seq < total && std::chrono::steady_clock::now() < deadline) {
    }
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_EQ(report.counters.processed, total);
    EXPECT_TRUE(run->telemetry().empty()) << "a streaming run keeps no telemetry of its own";
    EXPECT_EQ(run->telemetry_lost(), 0U);
    const std::lock_guard lock(mutex);
    EXPECT_GE(batches, 2U) << "the ring was drained while the loop ran, not only at the end";
    std::vector<std::uint64_t> want(total);
    std::iota(want.begin(), want.end(), 1U);
    EXPECT_EQ(order, want);
  }
}

// A slow loop's entries reach a streaming consumer while it runs, not only when its ring is half
// full or the run ends: 20 samples in a ring of 8,192 (a 60 Hz camera takes a minute to fill
// half of it), each seen by the consumer within a second of its processing.
TEST(streaming_telemetry, a_slow_loops_entries_reach_the_consumer_while_it_runs) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::uint64_t total = 20;
  for (const auto mode : all_execution_modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    slow_app app(1000);
    std::mutex mutex;
    std::vector<std::uint64_t> order;
    order.reserve(8192);
    run_options options;
    options.policy = sample_policy::every;
    options.telemetry_samples = 8192;
    options.on_telemetry = [&](std::span<const telemetry_entry> batch) {
      const std::lock_guard lock(mutex);
      for (const telemetry_entry& e : batch) order.push_back(e.seq);
    };
    auto run = run_async(app, mode, options);
    const auto seen = [&] {
      const std::lock_guard lock(mutex);
      return order.size();
    };
    for (std::uint64_t i = 1; i <= total; ++i) {
      app._mailbox->publish(as_bytes(sample_for(i)));
      const auto limit = std::chrono::steady_clock::now() + 2s;
      while (run->counters().last_seq < i && std::chrono::steady_clock::now() < limit) {
      }
      std::this_thread::sleep_for(10ms);  // 100 Hz
    }
    const auto limit = std::chrono::steady_clock::now() + 1s;
    while (seen() < total && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(5ms);
    }
    const std::size_t before_tear_down = seen();
    const tear_down_report report = run->tear_down();
    ASSERT_TRUE(report.stopped) << report.error;
    EXPECT_EQ(report.counters.processed, total);
    EXPECT_EQ(before_tear_down, total) << "the consumer saw the entries while the loop ran";
    const std::lock_guard lock(mutex);
    std::vector<std::uint64_t> want(total);
    std::iota(want.begin(), want.end(), 1U);
    EXPECT_EQ(order, want);
  }
}

}  // namespace
}  // namespace resident::testing
