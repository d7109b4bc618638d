// The mailbox's host protocol over plain memory: sample numbering and the host loop's reads,
// commit numbers that never repeat whichever side commits first, reads that never return a torn
// output however the commits and the sensor race them, and reads bounded when a commit never
// completes. A thread stands in for the loop's egress, with the device form's ordering.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "resident/app/error.hpp"
#include "resident/io/mailbox_protocol.hpp"

namespace resident::io::detail {
namespace {

using namespace std::chrono_literals;

// Plain memory for one mailbox, zeroed and 8-byte aligned, as the pinned buffer is.
struct plain_mailbox {
  explicit plain_mailbox(mailbox_layout l)
      : layout(l), words((l.total_bytes() + 7) / 8, 0), protocol(l, memory()) {}
  [[nodiscard]] std::span<std::byte> memory() {
    return {reinterpret_cast<std::byte*>(words.data()), layout.total_bytes()};
  }
  [[nodiscard]] std::uint64_t& word(std::size_t at) {
    return *reinterpret_cast<std::uint64_t*>(memory().data() + at);
  }
  mailbox_layout layout;
  std::vector<std::uint64_t> words;
  mailbox_protocol protocol;
};

// The loop's egress (mailbox_tx_commit in resident/io/mailbox_forms.cuh) on the host, with the same
// order of writes: its own commit count numbered above the view's floor, the begin stamp, a full
// fence, the payload, a fence, the sample, a fence, then the end stamp with release.
class emulated_egress {
 public:
  emulated_egress(plain_mailbox& mb, std::uint64_t floor) : _mb(mb), _floor(floor) {}
  std::uint64_t commit(std::uint64_t seq, std::span<const std::byte> payload) {
    const std::uint64_t commit = next_commit(_commits, _floor);
    _commits = commit;
    store(mailbox_layout::out_begin_at, commit, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    copy_to_shared(_mb.memory().data() + mailbox_layout::out_payload_at, payload);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    store(mailbox_layout::out_seq_at, seq, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    store(mailbox_layout::out_end_at, commit, std::memory_order_release);
    return commit;
  }

 private:
  void store(std::size_t at, std::uint64_t v, std::memory_order order) {
    std::atomic_ref<std::uint64_t>(_mb.word(at)).store(v, order);
  }
  plain_mailbox& _mb;
  std::uint64_t _floor;
  std::uint64_t _commits{0};  // device memory on the GPU: the egress's own count
};

// A payload whose every byte is derived from `stamp`: a copy mixing two writes shows.
std::vector<std::byte> pattern(std::size_t bytes, std::uint64_t stamp) {
  std::vector<std::byte> p(bytes);
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>((stamp * 131 + i) & 0xff);
  return p;
}

TEST(mailbox_protocol, the_layout_keeps_each_part_on_its_own_lines) {
  const mailbox_layout l{.input_bytes = 100, .output_bytes = 8, .depth = 4};
  EXPECT_EQ(mailbox_layout::out_end_at, 72U);
  EXPECT_EQ(l.slots_at(), 192U) << "two lines of words, then one line of output payload";
  EXPECT_EQ(l.slot_stride(), 64U + 128U);
  EXPECT_EQ(l.slot_at(5), l.slots_at() + 1 * l.slot_stride()) << "sample 5 goes to slot 5 % 4";
  EXPECT_EQ(l.total_bytes(), 192U + 4 * 192U);
}

TEST(mailbox_protocol, refuses_memory_smaller_than_its_layout) {
  const mailbox_layout l{.input_bytes = 8, .output_bytes = 8, .depth = 4};
  std::vector<std::uint64_t> small(4);
  EXPECT_THROW(mailbox_protocol(l, std::as_writable_bytes(std::span(small))),
               std::invalid_argument);
}

TEST(mailbox_protocol, numbers_samples_from_one_and_checks_payload_sizes) {
  plain_mailbox mb({.input_bytes = 16, .output_bytes = 8, .depth = 4});
  EXPECT_EQ(mb.protocol.published(), 0U);
  std::vector<std::byte> payload(16);
  EXPECT_EQ(mb.protocol.publish(payload), 1U);
  EXPECT_EQ(mb.protocol.publish(payload), 2U);
  EXPECT_EQ(mb.protocol.published(), 2U);
  std::vector<std::byte> wrong(15);
  EXPECT_THROW(mb.protocol.publish(wrong), std::invalid_argument);
  std::vector<std::byte> out(8);
  EXPECT_TRUE(mb.protocol.read_output(out).empty()) << "nothing committed yet";
  EXPECT_TRUE(mb.protocol.latest_output().empty());
  std::vector<std::byte> small(4);
  EXPECT_THROW((void)mb.protocol.read_output(small), std::invalid_argument);
}

TEST(mailbox_protocol, a_host_loop_reads_the_sample_its_policy_takes) {
  plain_mailbox mb({.input_bytes = 8, .output_bytes = 8, .depth = 4});
  std::vector<std::byte> in(8);
  EXPECT_EQ(mb.protocol.read_input(0, in, sample_policy::skip_duplicate), 0U);
  for (std::uint64_t k = 1; k <= 9; ++k) (void)mb.protocol.publish(pattern(8, k));
  EXPECT_EQ(mb.protocol.read_input(0, in, sample_policy::newest), 9U) << "the newest";
  EXPECT_EQ(in, pattern(8, 9));
  EXPECT_EQ(mb.protocol.read_input(9, in, sample_policy::skip_duplicate), 0U);
  // `every` takes the next one, or the oldest the ring still holds once the sensor lapped it.
  EXPECT_EQ(mb.protocol.read_input(7, in, sample_policy::every), 8U);
  EXPECT_EQ(in, pattern(8, 8));
  EXPECT_EQ(mb.protocol.read_input(1, in, sample_policy::every), 6U);
  EXPECT_EQ(in, pattern(8, 6));
}

TEST(mailbox_protocol, host_commits_carry_the_sample_payload_and_a_new_number_each) {
  plain_mailbox mb({.input_bytes = 8, .output_bytes = 12, .depth = 4});
  std::vector<std::byte> out(12);
  mb.protocol.commit_output_from_host(5, pattern(12, 5));
  EXPECT_EQ(mb.protocol.read_output(out), (output_stamp{5, 1}));
  EXPECT_EQ(out, pattern(12, 5));
  mb.protocol.commit_output_from_host(5, pattern(12, 6));  // the same sample again
  EXPECT_EQ(mb.protocol.latest_output(), (output_stamp{5, 2}));
  EXPECT_EQ(mb.protocol.output_commit(), 2U);
  EXPECT_EQ(mb.protocol.wait_output({5, 1}, out, 1s), (output_stamp{5, 2}));
  EXPECT_EQ(out, pattern(12, 6));
  EXPECT_TRUE(mb.protocol.wait_output({5, 2}, out, 1ms).empty()) << "nothing newer: a timeout";
}

// Host commits, then a loop on the same mailbox (its view taken after them): the loop numbers
// its commits above the host's, and an actuator waiting after the host's last sees every one.
TEST(mailbox_protocol, a_loop_after_host_commits_numbers_its_commits_above_them) {
  plain_mailbox mb({.input_bytes = 8, .output_bytes = 8, .depth = 4});
  for (std::uint64_t s = 1; s <= 3; ++s) mb.protocol.commit_output_from_host(s, pattern(8, s));
  output_stamp after = mb.protocol.latest_output();
  ASSERT_EQ(after, (output_stamp{3, 3}));
  emulated_egress egress(mb, mb.protocol.newest_commit());  // the loop's view is taken now
  std::vector<std::byte> out(8);
  for (std::uint64_t s = 4; s <= 6; ++s) {
    const std::uint64_t commit = egress.commit(s, pattern(8, s));
    const output_stamp got = mb.protocol.wait_output(after, out, 1s);
    ASSERT_FALSE(got.empty()) << "the loop's commit of sample " << s << " was missed";
    EXPECT_EQ(got, (output_stamp{s, commit}));
    EXPECT_GT(got.commit, after.commit);
    EXPECT_EQ(out, pattern(8, s));
    after = got;
  }
  EXPECT_EQ(after.commit, 6U);
}

// A loop, then host commits, then a second loop: numbers go on increasing across all three.
TEST(mailbox_protocol, commit_numbers_increase_across_loops_and_host_commits_in_any_order) {
  plain_mailbox mb({.input_bytes = 8, .output_bytes = 8, .depth = 4});
  emulated_egress first(mb, mb.protocol.newest_commit());
  std::vector<std::uint64_t> numbers;
  for (std::uint64_t s = 1; s <= 2; ++s) numbers.push_back(first.commit(s, pattern(8, s)));
  for (std::uint64_t s = 3; s <= 4; ++s) {
    mb.protocol.commit_output_from_host(s, pattern(8, s));
    numbers.push_back(mb.protocol.output_commit());
  }
  emulated_egress second(mb, mb.protocol.newest_commit());
  for (std::uint64_t s = 5; s <= 6; ++s) numbers.push_back(second.commit(s, pattern(8, s)));
  mb.protocol.commit_output_from_host(7, pattern(8, 7));
  numbers.push_back(mb.protocol.output_commit());
  EXPECT_EQ(numbers, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7}));
  std::vector<std::byte> out(8);
  EXPECT_EQ(mb.protocol.read_output(out), (output_stamp{7, 7}));
}

// The device form's numbering alone: above both its own count and the floor.
TEST(mailbox_protocol, the_next_commit_is_above_the_egress_count_and_the_floor) {
  EXPECT_EQ(next_commit(0, 0), 1U);
  EXPECT_EQ(next_commit(0, 7), 8U) << "host commits before the loop's first";
  EXPECT_EQ(next_commit(9, 7), 10U) << "the loop's own commits since";
}

// A sensor thread publishes while a host loop reads inputs; an egress thread commits while
// actuator threads read the output in each of the three ways. No read may return a payload that
// is not exactly the one its stamp names.
TEST(mailbox_protocol, racing_readers_never_get_a_torn_sample_or_output) {
  constexpr std::size_t in_bytes = 200;  // not a whole number of words: the byte tail too
  constexpr std::size_t out_bytes = 517;
  plain_mailbox mb({.input_bytes = in_bytes, .output_bytes = out_bytes, .depth = 2});
  constexpr std::uint64_t samples = 5000;
  constexpr std::uint64_t commits = 5000;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> torn{0};
  std::atomic<std::uint64_t> reads{0};

  std::thread sensor([&] {
    for (std::uint64_t s = 1; s <= samples; ++s) (void)mb.protocol.publish(pattern(in_bytes, s));
  });
  std::thread host_loop([&] {
    std::vector<std::byte> in(in_bytes);
    std::uint64_t last = 0;
    while (last < samples) {
      const std::uint64_t got = mb.protocol.read_input(last, in, sample_policy::skip_duplicate);
      if (got == 0) continue;
      if (got <= last || in != pattern(in_bytes, got)) torn.fetch_add(1);
      last = got;
      reads.fetch_add(1);
    }
  });
  std::thread egress_thread([&] {
    emulated_egress egress(mb, 0);
    // The payload follows the commit number: commit c carries pattern(c), sample c / 2.
    // A loop commits once per iteration, not back to back: the yield lets the readers in.
    for (std::uint64_t c = 1; c <= commits; ++c) {
      (void)egress.commit(c / 2, pattern(out_bytes, c));
      std::this_thread::yield();
    }
    done.store(true);
  });
  const auto check = [&](const output_stamp& s, const std::vector<std::byte>& out) {
    if (s.empty()) return;
    reads.fetch_add(1);
    if (s.seq != s.commit / 2 || out != pattern(out_bytes, s.commit)) torn.fetch_add(1);
  };
  std::atomic<std::uint64_t> gave_up{0};  // a read past its bound (execution_error)
  const auto guarded = [&](auto body) {
    return [&, body] {
      try {
        body();
      } catch (const execution_error&) {
        gave_up.fetch_add(1);
      }
    };
  };
  std::thread reader(guarded([&] {
    std::vector<std::byte> out(out_bytes);
    while (!done.load()) check(mb.protocol.read_output(out), out);
  }));
  std::thread waiter(guarded([&] {
    std::vector<std::byte> out(out_bytes);
    output_stamp after;
    while (!done.load()) {
      const output_stamp s = mb.protocol.wait_output(after, out, 10ms);
      if (!s.empty() && s.commit <= after.commit) torn.fetch_add(1);  // must be newer
      check(s, out);
      if (!s.empty()) after = s;
    }
  }));
  std::thread stamper(guarded([&] {
    while (!done.load()) {
      const output_stamp s = mb.protocol.latest_output();
      if (!s.empty() && s.seq != s.commit / 2) torn.fetch_add(1);
    }
  }));
  for (std::thread* t : {&sensor, &host_loop, &egress_thread, &reader, &waiter, &stamper}) {
    t->join();
  }
  EXPECT_EQ(torn.load(), 0U);
  EXPECT_EQ(gave_up.load(), 0U);
  EXPECT_GT(reads.load(), 0U);
  std::vector<std::byte> out(out_bytes);
  EXPECT_EQ(mb.protocol.read_output(out), (output_stamp{commits / 2, commits}));
  EXPECT_EQ(out, pattern(out_bytes, commits));
}

// A writer that stopped midway (a loop that failed or was abandoned mid-commit): the begin stamp
// is ahead of the end stamp for good. Reads give up after their bound with an error that names
// both commit numbers; output_commit() does not wait at all.
TEST(mailbox_protocol, a_commit_that_never_completes_is_reported_after_the_bound) {
  plain_mailbox mb({.input_bytes = 8, .output_bytes = 8, .depth = 4});
  mb.protocol.commit_output_from_host(1, pattern(8, 1));
  std::atomic_ref<std::uint64_t>(mb.word(mailbox_layout::out_begin_at)).store(2);  // commit 2 began
  EXPECT_EQ(mb.protocol.output_commit(), 1U);
  EXPECT_EQ(mb.protocol.newest_commit(), 2U) << "the next commit must be numbered above 2";
  std::vector<std::byte> out(8);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)mb.protocol.read_output(out, 20ms);
    FAIL() << "a torn output was returned";
  } catch (const execution_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("read_output"), std::string::npos) << what;
    EXPECT_NE(what.find("commit 1 is being overwritten by commit 2"), std::string::npos) << what;
    EXPECT_NE(what.find("20 ms"), std::string::npos) << what;
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_THROW((void)mb.protocol.latest_output(5ms), execution_error);
  EXPECT_THROW((void)mb.protocol.wait_output({}, out, 1s, 5ms), execution_error)
      << "a new end stamp, but no whole commit behind it";
  // Commits go on above it: the host's next is 3, and then the output reads again.
  mb.protocol.commit_output_from_host(4, pattern(8, 4));
  EXPECT_EQ(mb.protocol.read_output(out, 5ms), (output_stamp{4, 3}));
}

// ---- the lines format ----------------------------------------------------------------------

TEST(mailbox_lines, chosen_by_size_and_laid_out_one_line_per_slot) {
  EXPECT_TRUE(resolve_format(mailbox_format::automatic, 49, 42));
  EXPECT_FALSE(resolve_format(mailbox_format::automatic, 50, 42));
  EXPECT_FALSE(resolve_format(mailbox_format::automatic, 8, 43));
  EXPECT_FALSE(resolve_format(mailbox_format::sequence_lock, 8, 8));
  EXPECT_TRUE(resolve_format(mailbox_format::lines, 1, 0));
  try {
    (void)resolve_format(mailbox_format::lines, 64, 8);
    FAIL() << "a 64-byte sample was put in a line";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at most 49 bytes"), std::string::npos) << e.what();
  }
  const mailbox_layout l{.input_bytes = 49, .output_bytes = 42, .depth = 5, .lines = true};
  EXPECT_EQ(l.slot_stride(), mailbox_layout::line);
  EXPECT_EQ(l.slots_at(), 2 * mailbox_layout::line) << "the output line holds the output";
  EXPECT_EQ(l.total_bytes(), 7 * mailbox_layout::line);
  EXPECT_EQ(slot_tag(7, 5), 1U);
  EXPECT_EQ(slot_tag(5 * 256 + 3, 5), 0U) << "the lap's low byte";
}

TEST(mailbox_lines, samples_and_host_commits_round_trip_with_their_numbers) {
  plain_mailbox mb({.input_bytes = 13, .output_bytes = 42, .depth = 3, .lines = true});
  std::vector<std::byte> in(13);
  EXPECT_EQ(mb.protocol.read_input(0, in, sample_policy::every), 0U);
  for (std::uint64_t s = 1; s <= 7; ++s) EXPECT_EQ(mb.protocol.publish(pattern(13, s)), s);
  EXPECT_EQ(mb.protocol.published(), 7U);
  // every: the ring holds 5, 6, 7 (5 is the oldest left after 0); newest: 7.
  EXPECT_EQ(mb.protocol.read_input(0, in, sample_policy::every), 5U);
  EXPECT_EQ(in, pattern(13, 5));
  EXPECT_EQ(mb.protocol.read_input(5, in, sample_policy::every), 6U);
  EXPECT_EQ(in, pattern(13, 6));
  EXPECT_EQ(mb.protocol.read_input(0, in, sample_policy::newest), 7U);
  EXPECT_EQ(in, pattern(13, 7));
  std::vector<std::byte> out(42);
  EXPECT_TRUE(mb.protocol.latest_output().empty());
  mb.protocol.commit_output_from_host(6, pattern(42, 60));
  mb.protocol.commit_output_from_host(7, pattern(42, 70));
  EXPECT_EQ(mb.protocol.output_commit(), 2U);
  EXPECT_EQ(mb.protocol.latest_output(), (output_stamp{7, 2}));
  EXPECT_EQ(mb.protocol.read_output(out), (output_stamp{7, 2}));
  EXPECT_EQ(out, pattern(42, 70));
  EXPECT_EQ(mb.protocol.wait_output({7, 1}, out, 10ms), (output_stamp{7, 2}));
  EXPECT_TRUE(mb.protocol.wait_output({7, 2}, out, 1ms).empty()) << "nothing newer: a timeout";
}

// The loop's egress in the lines format (mailbox_tx_commit in resident/io/mailbox_forms.cuh):
// eight lanes store the line's words at once, so they reach the host in any order. Here in a
// random order each time, word 0 included.
std::uint64_t commit_line_words(plain_mailbox& mb, std::uint64_t commit, std::uint64_t seq,
                                std::span<const std::byte> payload, std::mt19937& rng) {
  namespace tl = tagged_line;
  std::uint64_t w[tl::words];
  w[0] = commit;
  w[1] = tl::tag_word(seq, commit);
  tl::pack(reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), w + 2,
           tl::words - 2, commit);
  std::array<std::size_t, tl::words> order{0, 1, 2, 3, 4, 5, 6, 7};
  std::shuffle(order.begin(), order.end(), rng);
  for (const std::size_t i : order) {
    std::atomic_ref<std::uint64_t>(mb.word(mailbox_layout::out_begin_at + 8 * i))
        .store(w[i], std::memory_order_relaxed);
  }
  return commit;
}

TEST(mailbox_lines, racing_readers_never_get_a_torn_sample_or_output) {
  constexpr std::size_t in_bytes = 41;  // not a whole number of 7-byte words
  constexpr std::size_t out_bytes = 42;
  plain_mailbox mb({.input_bytes = in_bytes, .output_bytes = out_bytes, .depth = 3, .lines = true});
  constexpr std::uint64_t samples = 5000;
  constexpr std::uint64_t commits = 5000;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> torn{0};
  std::atomic<std::uint64_t> reads{0};
  std::thread sensor([&] {
    for (std::uint64_t s = 1; s <= samples; ++s) (void)mb.protocol.publish(pattern(in_bytes, s));
  });
  std::thread host_loop([&] {
    std::vector<std::byte> in(in_bytes);
    std::uint64_t last = 0;
    while (last < samples) {
      const std::uint64_t got = mb.protocol.read_input(last, in, sample_policy::skip_duplicate);
      if (got == 0) continue;
      if (got <= last || in != pattern(in_bytes, got)) torn.fetch_add(1);
      last = got;
      reads.fetch_add(1);
    }
  });
  std::thread egress([&] {
    std::mt19937 rng(7);
    for (std::uint64_t c = 1; c <= commits; ++c) {
      (void)commit_line_words(mb, c, c / 2, pattern(out_bytes, c), rng);
      std::this_thread::yield();
    }
    done.store(true);
  });
  std::atomic<std::uint64_t> gave_up{0};
  std::thread reader([&] {
    std::vector<std::byte> out(out_bytes);
    try {
      while (!done.load()) {
        const output_stamp s = mb.protocol.read_output(out);
        if (s.empty()) continue;
        reads.fetch_add(1);
        if (s.seq != s.commit / 2 || out != pattern(out_bytes, s.commit)) torn.fetch_add(1);
      }
    } catch (const execution_error&) {
      gave_up.fetch_add(1);
    }
  });
  for (std::thread* t : {&sensor, &host_loop, &egress, &reader}) t->join();
  EXPECT_EQ(torn.load(), 0U);
  EXPECT_EQ(gave_up.load(), 0U);
  EXPECT_GT(reads.load(), 0U);
  std::vector<std::byte> out(out_bytes);
  EXPECT_EQ(mb.protocol.read_output(out), (output_stamp{commits / 2, commits}));
  EXPECT_EQ(out, pattern(out_bytes, commits));
}

// A line whose writer stopped midway (word 0 of the next commit landed, the rest did not) is
// reported after the bound, not returned torn.
TEST(mailbox_lines, a_commit_that_never_completes_is_reported_after_the_bound) {
  plain_mailbox mb({.input_bytes = 8, .output_bytes = 8, .depth = 4, .lines = true});
  mb.protocol.commit_output_from_host(1, pattern(8, 1));
  std::atomic_ref<std::uint64_t>(mb.word(mailbox_layout::out_begin_at)).store(2);
  EXPECT_EQ(mb.protocol.newest_commit(), 2U) << "the next commit must be numbered above 2";
  std::vector<std::byte> out(8);
  try {
    (void)mb.protocol.read_output(out, 20ms);
    FAIL() << "a torn output was returned";
  } catch (const execution_error& e) {
    EXPECT_NE(std::string(e.what()).find("held words of another commit"), std::string::npos)
        << e.what();
  }
  mb.protocol.commit_output_from_host(4, pattern(8, 4));
  EXPECT_EQ(mb.protocol.read_output(out, 5ms), (output_stamp{4, 3}));
  EXPECT_EQ(out, pattern(8, 4));
}

}  // namespace
}  // namespace resident::io::detail
