// io::device_link on the device: a producer loop publishes each sample it processes into a ring
// in the consumer's memory, and a consumer loop takes it from there, with no host between them.
// One GPU here (producer and consumer on device 0, two loops at once); two GPUs in multi_gpu.

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gpu/support.hpp"
#include "resident/cuda/device.hpp"
#include "resident/exec/executor.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t elements = 300;  // one block's share of a publish
// A payload the producer's blocks share (1 MiB: 32 blocks in the graph modes), not a multiple of
// 16 bytes per block, so the shares' edges and the byte tail are exercised.
constexpr std::int64_t large_elements = (std::int64_t{1} << 18) + 13;

/// host -> mailbox -> link_tx: what the host publishes goes into the link unchanged.
class producer_app final : public Application {
 public:
  explicit producer_app(std::shared_ptr<io::device_link> link)
      : Application("producer"),
        _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{link->settings().bytes, link->settings().bytes, 8})),
        _link(std::move(link)) {}
  void compose() override {
    auto rx = make_operator<io::mailbox_rx>("rx", _mailbox);
    auto tx = make_operator<io::link_tx>("link", _link);
    register_data_ready_handler(_mailbox->make_handler(rx));
    add_flow(rx, tx, {{"sample", "in"}});
  }
  std::shared_ptr<io::mailbox> _mailbox;

 private:
  std::shared_ptr<io::device_link> _link;
};

/// link_rx -> affine (2x + 1) -> mailbox -> host.
class consumer_app final : public Application {
 public:
  explicit consumer_app(std::shared_ptr<io::device_link> link)
      : Application("consumer"),
        _mailbox(std::make_shared<io::mailbox>(
            io::mailbox::config{.input_bytes = link->settings().bytes,
                                .output_bytes = link->settings().bytes,
                                .depth = 8,
                                .device = link->settings().consumer_device})),
        _link(std::move(link)) {}
  void compose() override {
    auto rx = make_operator<io::link_rx>("link", _link);
    const auto n = static_cast<std::int64_t>(_link->settings().bytes / sizeof(float));
    auto aff = make_operator<ops::affine>("affine", arg("elements", n));
    auto tx = make_operator<io::mailbox_tx>("tx", _mailbox);
    register_data_ready_handler(_link->make_handler(rx));
    add_flow(rx, aff, {{"sample", "in"}});
    add_flow(aff, tx);
  }
  std::shared_ptr<io::mailbox> _mailbox;

 private:
  std::shared_ptr<io::device_link> _link;
};

std::shared_ptr<io::device_link> link_on(int producer, int consumer, std::size_t depth = 4,
                                         std::int64_t n = elements) {
  return std::make_shared<io::device_link>(io::device_link::config{
      static_cast<std::size_t>(n) * sizeof(float), depth, producer, consumer});
}

/// Publishes each sample into the producer and waits for its output at the consumer: every
/// output is 2x + 1 of its own sample (the samples differ, so a stale slot shows).
void expect_lockstep_through(producer_app& producer, consumer_app& consumer, int samples,
                             std::int64_t n = elements) {
  const std::size_t size = static_cast<std::size_t>(n) * sizeof(float);
  for (int k = 0; k < samples; ++k) {
    const std::vector<float> in = random_floats(static_cast<std::size_t>(n));
    const io::output_stamp before = consumer._mailbox->latest_output();
    (void)producer._mailbox->publish(std::as_bytes(std::span(in)));
    std::vector<std::byte> out(size);
    const io::output_stamp got = consumer._mailbox->wait_output(before, out, 5000ms);
    ASSERT_TRUE(got.seq != 0 && got.commit != before.commit) << "no output for sample " << k;
    std::vector<float> values(static_cast<std::size_t>(n));
    std::memcpy(values.data(), out.data(), size);
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(values[static_cast<std::size_t>(i)], 2.0F * in[static_cast<std::size_t>(i)] + 1.0F)
          << "sample " << k << ", value " << i;
    }
  }
}

/// A producer and a consumer loop on device 0 joined by a link, with options that let two
/// persistent loops run at once (each leaves room for the other).
struct one_gpu_pair {
  std::shared_ptr<io::device_link> link = link_on(0, 0);
  producer_app producer{link};
  consumer_app consumer{link};
  run_options options = [] {
    run_options o;
    o.persistent_blocks = 1;
    return o;
  }();
};

/// Tears the producer's loop down, then the consumer's: both stop, and each processed every one
/// of the `samples` the link published (so the consumer dropped none).
void expect_both_stop_with(run_handle& producer_run, run_handle& consumer_run,
                           const io::device_link& link, std::uint64_t samples) {
  const tear_down_report p = producer_run.tear_down();
  const tear_down_report c = consumer_run.tear_down();
  ASSERT_TRUE(p.stopped) << p.error;
  ASSERT_TRUE(c.stopped) << c.error;
  EXPECT_EQ(p.counters.processed, samples);
  EXPECT_EQ(link.published(), samples);
  EXPECT_EQ(c.counters.processed + c.counters.dropped, link.published());
  EXPECT_EQ(c.counters.processed, samples);
}

TEST(device_link, two_loops_on_one_gpu_hand_samples_over_with_no_host_between_them) {
  RESIDENT_REQUIRE_GPU();
  for (const auto mode : {execution_mode::while_loop, execution_mode::tail,
                          execution_mode::persistent, execution_mode::eager}) {
    SCOPED_TRACE(to_string(mode));
    one_gpu_pair t;
    auto consumer_run = run_async(t.consumer, mode, t.options);
    auto producer_run = run_async(t.producer, mode, t.options);
    expect_lockstep_through(t.producer, t.consumer, 20);
    expect_both_stop_with(*producer_run, *consumer_run, *t.link, 20);
  }
}

// run_together: both loops built before either runs, the consumer launched first, so the link
// drops nothing; in every mode the outputs and the accounting are those of run_async's.
TEST(device_link, run_together_builds_both_loops_then_launches_the_consumer_first) {
  RESIDENT_REQUIRE_GPU();
  for (const auto mode : {execution_mode::host_graph, execution_mode::while_loop,
                          execution_mode::tail, execution_mode::persistent}) {
    SCOPED_TRACE(to_string(mode));
    one_gpu_pair t;
    auto runs = run_together({{&t.consumer, mode, t.options}, {&t.producer, mode, t.options}});
    ASSERT_EQ(runs.size(), 2U);
    EXPECT_TRUE(runs[0]->is_launched());
    EXPECT_TRUE(runs[1]->is_launched());
    expect_lockstep_through(t.producer, t.consumer, 20);
    expect_both_stop_with(*runs[1], *runs[0], *t.link, 20);
  }
}

// A build that fails after another succeeded (the producer asked for on a device the machine
// lacks): nothing runs, the error names the device, and both applications can run afterwards.
TEST(device_link, run_together_whose_second_build_fails_launches_nothing) {
  RESIDENT_REQUIRE_GPU();
  auto link = link_on(0, 0);
  producer_app producer(link);
  consumer_app consumer(link);
  run_options bad;
  bad.device = resident::device_count();  // one past the last device
  try {
    (void)run_together({{&consumer, execution_mode::while_loop, {}},
                        {&producer, execution_mode::while_loop, bad}});
    FAIL() << "expected the missing device to be refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_EQ(link->published(), 0U);
  auto runs = run_together(
      {{&consumer, execution_mode::while_loop, {}}, {&producer, execution_mode::while_loop, {}}});
  expect_lockstep_through(producer, consumer, 5);
  expect_both_stop_with(*runs[1], *runs[0], *link, 5);
}

// A payload the producer's blocks share: every output equals the CPU reference of its own
// sample in every mode (persistent with several blocks, so the last block stamps), and each
// sample's arrival stamp is the producer's egress start: after the producer sighted the sample,
// before the consumer did (one GPU: one clock).
TEST(device_link, a_payload_the_producers_blocks_share_arrives_whole_and_stamped) {
  RESIDENT_REQUIRE_GPU();
  for (const auto mode : {execution_mode::while_loop, execution_mode::tail,
                          execution_mode::persistent, execution_mode::host_graph}) {
    SCOPED_TRACE(to_string(mode));
    auto link = link_on(0, 0, 4, large_elements);
    producer_app producer(link);
    consumer_app consumer(link);
    run_options options;
    options.persistent_blocks = 4;
    options.telemetry_samples = 64;
    auto consumer_run = run_async(consumer, mode, options);
    auto producer_run = run_async(producer, mode, options);
    expect_lockstep_through(producer, consumer, 12, large_elements);
    const tear_down_report p = producer_run->tear_down();
    const tear_down_report c = consumer_run->tear_down();
    ASSERT_TRUE(p.stopped && c.stopped) << p.error << c.error;
    EXPECT_EQ(link->published(), 12U);
    EXPECT_EQ(c.counters.processed, 12U);
    const auto at = [](const telemetry_entry& e, stage s) {
      return e.stamp_ns[static_cast<std::size_t>(s)];
    };
    std::map<std::uint64_t, std::uint64_t> sighted;  // producer: sample -> detect
    for (const telemetry_entry& e : producer_run->telemetry())
      sighted[e.seq] = at(e, stage::detect);
    std::size_t checked = 0;
    for (const telemetry_entry& e : consumer_run->telemetry()) {
      if (e.seq == 0 || e.repeat != 0U) continue;
      const std::uint64_t egress = at(e, stage::arrival);
      ASSERT_NE(egress, 0U) << "sample " << e.seq << " has no egress stamp";
      EXPECT_LE(egress, at(e, stage::detect)) << "sample " << e.seq;
      // The link's k-th sample is the producer's k-th (lockstep, nothing dropped).
      const auto it = sighted.find(e.seq);
      ASSERT_NE(it, sighted.end()) << "sample " << e.seq;
      EXPECT_GE(egress, it->second) << "sample " << e.seq;
      ++checked;
    }
    EXPECT_EQ(checked, 12U);
  }
}

// Samples published back to back: the producer may drop some (its own mailbox laps), the link's
// ring of two slots may lap the consumer, and each side counts exactly: the producer's
// processed + dropped = what the host published, the consumer's = what the producer published.
TEST(device_link, samples_back_to_back_are_accounted_for_exactly_on_both_sides) {
  RESIDENT_REQUIRE_GPU();
  auto link = link_on(0, 0, 2);
  producer_app producer(link);
  consumer_app consumer(link);
  run_options newest;
  newest.policy = sample_policy::newest;
  auto consumer_run = run_async(consumer, execution_mode::while_loop, newest);
  auto producer_run = run_async(producer, execution_mode::while_loop);
  const std::vector<float> in = random_floats(elements);
  for (int k = 0; k < 200; ++k) (void)producer._mailbox->publish(std::as_bytes(std::span(in)));
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (producer_run->counters().processed + producer_run->counters().dropped < 200U &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(20ms);  // the consumer sees the last one
  const tear_down_report p = producer_run->tear_down();
  const tear_down_report c = consumer_run->tear_down();
  ASSERT_TRUE(p.stopped && c.stopped) << p.error << c.error;
  EXPECT_EQ(p.counters.processed + p.counters.dropped, 200U);
  EXPECT_EQ(link->published(), p.counters.processed);
  EXPECT_EQ(c.counters.processed + c.counters.dropped, link->published());
  EXPECT_GT(c.counters.processed, 0U);
}

// A mailbox for a device the machine lacks is refused by name (one GPU suffices).
TEST(device_link, a_mailbox_for_a_device_the_machine_lacks_is_refused_by_name) {
  RESIDENT_REQUIRE_GPU();
  const int missing = device_count();
  try {
    const io::mailbox mb(io::mailbox::config{.input_bytes = 8, .device = missing});
    ADD_FAILURE() << "a mailbox for device " << missing << " was made";
  } catch (const composition_error& e) {
    EXPECT_NE(std::string(e.what()).find("device " + std::to_string(missing) + " does not exist"),
              std::string::npos)
        << e.what();
  }
}

// Needs two GPUs. Each endpoint runs on its own side's device: a consumer run on the
// producer's device is refused by name, before anything runs.
TEST(multi_gpu, a_link_endpoint_on_the_wrong_device_is_refused_by_name) {
  RESIDENT_REQUIRE_GPU();
  if (device_count() < 2) GTEST_SKIP() << "needs two GPUs: this machine has " << device_count();
  auto link = link_on(0, 1);
  consumer_app consumer(link);
  try {
    (void)run_async(consumer, execution_mode::while_loop);  // on device 0
    ADD_FAILURE() << "the consumer ran on the producer's device";
  } catch (const composition_error& e) {
    EXPECT_NE(std::string(e.what()).find("the link's consumer is device 1"), std::string::npos)
        << e.what();
  }
}

TEST(device_link, refuses_devices_the_machine_lacks_by_name) {
  RESIDENT_REQUIRE_GPU();
  const int missing = device_count();
  EXPECT_THROW(
      {
        try {
          (void)link_on(0, missing);
        } catch (const composition_error& e) {
          EXPECT_NE(std::string(e.what()).find("consumer_device " + std::to_string(missing) +
                                               " does not exist"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      composition_error);
}

// Needs two GPUs; the suite multi_gpu may skip on a machine with fewer (tests/gpu/support.cu).
TEST(multi_gpu, a_link_from_gpu_0_to_gpu_1_hands_samples_over_in_every_resident_mode) {
  RESIDENT_REQUIRE_GPU();
  if (device_count() < 2) GTEST_SKIP() << "needs two GPUs: this machine has " << device_count();
  for (const auto mode :
       {execution_mode::while_loop, execution_mode::tail, execution_mode::persistent}) {
    SCOPED_TRACE(to_string(mode));
    auto link = link_on(0, 1);
    producer_app producer(link);
    consumer_app consumer(link);
    run_options on_0;
    on_0.persistent_blocks = 1;
    run_options on_1 = on_0;
    on_1.device = 1;
    auto consumer_run = run_async(consumer, mode, on_1);
    auto producer_run = run_async(producer, mode, on_0);
    expect_lockstep_through(producer, consumer, 20);
    const tear_down_report p = producer_run->tear_down();
    const tear_down_report c = consumer_run->tear_down();
    ASSERT_TRUE(p.stopped && c.stopped) << p.error << c.error;
    EXPECT_EQ(c.counters.processed + c.counters.dropped, link->published());
  }
}

}  // namespace
}  // namespace resident::testing
