#include <gmock/gmock.h>

#include <map>

#include "gpu/support.hpp"

namespace resident::testing {
namespace {

TEST(mailbox, numbers_samples_from_one_and_checks_payload_sizes) {
  RESIDENT_REQUIRE_GPU();
  io::mailbox mb({16, 8, 4});
  EXPECT_EQ(mb.published(), 0U);
  std::vector<std::byte> payload(16);
  EXPECT_EQ(mb.publish(payload), 1U);
  EXPECT_EQ(mb.publish(payload), 2U);
  EXPECT_EQ(mb.published(), 2U);
  std::vector<std::byte> wrong(15);
  EXPECT_THROW(mb.publish(wrong), std::invalid_argument);
  std::vector<std::byte> out(8);
  EXPECT_TRUE(mb.read_output(out).empty()) << "nothing committed yet";
  std::vector<std::byte> small(4);
  EXPECT_THROW((void)mb.read_output(small), std::invalid_argument);
}

TEST(mailbox, refuses_a_ring_too_small_to_read_while_the_sensor_writes) {
  RESIDENT_REQUIRE_GPU();
  EXPECT_THROW(io::mailbox({8, 8, 1}), composition_error);
  EXPECT_THROW(io::mailbox({0, 8, 4}), composition_error);
}

TEST(mailbox, host_gate_follows_the_policy) {
  RESIDENT_REQUIRE_GPU();
  io::mailbox mb({8, 8, 4});
  const auto gate = mb.host_gate();
  EXPECT_FALSE(gate(0, sample_policy::newest));
  std::vector<std::byte> payload(8);
  mb.publish(payload);
  EXPECT_TRUE(gate(0, sample_policy::skip_duplicate));
  EXPECT_FALSE(gate(1, sample_policy::skip_duplicate));
  EXPECT_FALSE(gate(1, sample_policy::every));
  EXPECT_TRUE(gate(1, sample_policy::newest));
}

TEST(mailbox, a_host_loop_reads_the_newest_input_and_commits_outputs_with_new_numbers) {
  RESIDENT_REQUIRE_GPU();
  io::mailbox mb({8, 8, 4});
  std::vector<std::byte> in(8);
  EXPECT_EQ(mb.read_input(0, in), 0U) << "nothing published yet";
  std::vector<std::byte> payload(8);
  for (std::uint8_t k = 1; k <= 3; ++k) {
    payload[0] = std::byte{k};
    (void)mb.publish(payload);
  }
  EXPECT_EQ(mb.read_input(0, in), 3U) << "the newest, not the oldest";
  EXPECT_EQ(in[0], std::byte{3});
  EXPECT_EQ(mb.read_input(3, in), 0U);
  // `every` takes the next sample, and the oldest the ring holds once the sensor lapped it.
  EXPECT_EQ(mb.read_input(1, in, sample_policy::every), 2U);
  EXPECT_EQ(in[0], std::byte{2});
  for (std::uint8_t k = 4; k <= 9; ++k) {
    payload[0] = std::byte{k};
    (void)mb.publish(payload);
  }
  EXPECT_EQ(mb.read_input(2, in, sample_policy::every), 6U) << "9 - depth 4 + 1";
  EXPECT_EQ(in[0], std::byte{6});
  EXPECT_EQ(mb.read_input(7, in, sample_policy::every), 8U);
  EXPECT_EQ(mb.read_input(9, in, sample_policy::every), 0U);

  std::vector<std::byte> result(8, std::byte{0x5A});
  EXPECT_EQ(mb.output_commit(), 0U) << "no output yet";
  mb.commit_output_from_host(3, result);
  EXPECT_EQ(mb.output_commit(), 1U) << "the commit word moves with each whole output";
  std::vector<std::byte> seen(8);
  const io::output_stamp first = mb.wait_output({}, seen, std::chrono::milliseconds(100));
  EXPECT_EQ(first.seq, 3U);
  EXPECT_EQ(first.commit, 1U);
  EXPECT_EQ(seen, result);
  mb.commit_output_from_host(3, result);  // the same sample again: a new commit number
  const io::output_stamp again = mb.wait_output(first, seen, std::chrono::milliseconds(100));
  EXPECT_EQ(again.seq, 3U);
  EXPECT_EQ(again.commit, 2U);
  EXPECT_EQ(mb.output_commit(), again.commit);

  std::vector<std::byte> wrong(7);
  EXPECT_THROW((void)mb.read_input(0, wrong), std::invalid_argument);
  EXPECT_THROW(mb.commit_output_from_host(4, wrong), std::invalid_argument);
}

// Host commits (a CPU peer's, Python's commit_output), then a loop on the same mailbox, in every
// mode, one loop after another: each loop numbers its commits above everything committed before
// it, so an actuator waiting after the latest output sees every new one, in increasing order.
TEST(mailbox, loops_after_host_commits_number_their_commits_above_them) {
  RESIDENT_REQUIRE_GPU();
  lab_app app(64);
  io::mailbox& mb = *app.mailbox();
  const std::vector<std::byte> host_output(mb.settings().output_bytes, std::byte{0x11});
  for (std::uint64_t s = 1; s <= 3; ++s) mb.commit_output_from_host(s, host_output);
  ASSERT_EQ(mb.latest_output().commit, 3U);
  std::uint64_t newest = 3;
  std::vector<execution_mode> modes(all_execution_modes.begin(), all_execution_modes.end());
  modes.push_back(execution_mode::persistent);
  for (const execution_mode mode : modes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    auto run = run_async(app, mode);
    for (int i = 0; i < 4; ++i) {
      const io::output_stamp before = mb.latest_output();
      const std::uint64_t seq = mb.publish(as_bytes(random_floats(64)));
      std::vector<std::byte> out(mb.settings().output_bytes);
      const io::output_stamp got = mb.wait_output(before, out, 5000ms);
      ASSERT_EQ(got.seq, seq) << "the loop's output for sample " << seq << " was missed";
      EXPECT_GT(got.commit, newest) << "a commit number repeated";
      newest = got.commit;
    }
    const tear_down_report report = run->tear_down();
    EXPECT_TRUE(report.stopped) << report.error;
    // And host commits after the loop go on above its numbers.
    mb.commit_output_from_host(mb.published(), host_output);
    EXPECT_EQ(mb.latest_output().commit, newest + 1);
    newest = mb.latest_output().commit;
  }
}

// Samples and outputs that fit a line take the lines format by themselves (one tagged line per
// slot and for the output: one PCIe round trip per read); the loop gives the same outputs as
// the CPU reference in every mode, persistent included, with the same bits in each.
TEST(mailbox, small_samples_take_the_lines_format_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  EXPECT_EQ(io::mailbox({52, 4, 4}).format(), io::mailbox_format::sequence_lock);
  EXPECT_EQ(io::mailbox({8, 43, 4}).format(), io::mailbox_format::sequence_lock);
  EXPECT_EQ(io::mailbox({49, 42, 4}).format(), io::mailbox_format::lines);
  EXPECT_EQ(io::mailbox({8, 8, 4, io::mailbox_format::sequence_lock}).format(),
            io::mailbox_format::sequence_lock);
  EXPECT_THROW(io::mailbox({50, 4, 4, io::mailbox_format::lines}), composition_error);
  lab_app app(12);  // 48 bytes in, 4 out
  ASSERT_EQ(app.mailbox()->format(), io::mailbox_format::lines);
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 40; ++i) samples.push_back(random_floats(12));
  expect_every_mode_gives_eagers_outputs(
      app, *app.mailbox(), samples, [&](std::size_t i, const std::vector<std::byte>& out) {
        const double want = lab_reference(samples[i]);
        EXPECT_LT(std::abs(as_float(out) - want), 1e-5 * std::max(1.0, std::abs(want))) << i;
      });
}

}  // namespace
}  // namespace resident::testing
