// The emulators' host protocols over plain memory, with real threads (these tests also run under
// ThreadSanitizer): the sensor bridge's host-delivery ring never lets a reader accept a frame
// the sensor rewrote while it read it, and the display's event rings lose no event, repeat none
// and keep their order.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "resident/detail/event_ring.hpp"
#include "resident/detail/frame_ring_protocol.hpp"

namespace resident::detail {
namespace {

constexpr std::size_t words_per_frame = 512;
constexpr std::uint32_t depth = 2;

std::uint64_t pattern(std::uint64_t frame, std::size_t i) { return frame * 1'000'003U + i; }

struct ring {
  std::array<std::array<std::uint64_t, words_per_frame>, depth> slots{};
  std::array<io::frame_record, depth> records{};
  std::uint64_t newest{0};
};

// The sensor rewrites a two-slot ring as fast as it can; readers take the newest frame, copy
// it word by word and keep it only when the slot still held it afterwards. Every kept copy must
// be whole: one frame's words, with that frame's record.
TEST(frame_ring_protocol, a_reader_never_keeps_a_frame_rewritten_while_it_read) {
  ring r;
  std::atomic<bool> done{false};
  std::atomic<int> readers_ready{0};
  std::atomic<std::uint64_t> kept{0};
  std::uint64_t frames = 0;
  // At least 20,000 frames, and on until the readers kept 200 (or 1,000,000 frames went by);
  // a pause every 256 frames gives the readers whole frames to keep as well as torn ones.
  std::thread sensor([&] {
    while (readers_ready.load() < 2) std::this_thread::yield();
    for (std::uint64_t f = 1; f <= 1'000'000 && (f <= 20'000 || kept.load() < 200); ++f) {
      frames = f;
      if (f % 256 == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
      auto& slot = r.slots[f % depth];
      frame_record_fields fields{f * 10, f * 10 + 5, words_per_frame * 8, 0};
      publish_host_frame(r.records[f % depth], r.newest, f, fields, [&] {
        for (std::size_t i = 0; i < words_per_frame; ++i)
          ring_store_relaxed(slot[i], pattern(f, i));
      });
    }
    done = true;
  });
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> torn_kept{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      std::array<std::uint64_t, words_per_frame> copy{};
      readers_ready.fetch_add(1);
      while (!done.load()) {
        const std::uint64_t f =
            std::atomic_ref<std::uint64_t>(r.newest).load(std::memory_order_acquire);
        if (f == 0) continue;
        const auto taken = take_host_frame(r.records[f % depth], f);
        if (!taken) {
          refused.fetch_add(1);
          continue;
        }
        for (std::size_t i = 0; i < words_per_frame; ++i) {
          copy[i] = ring_load_relaxed(r.slots[f % depth][i]);
        }
        if (!still_holds(r.records[f % depth], f)) {
          refused.fetch_add(1);
          continue;
        }
        bool whole = taken->frame_start_ns == f * 10 && taken->arrival_ns == f * 10 + 5;
        for (std::size_t i = 0; i < words_per_frame; ++i) whole &= copy[i] == pattern(f, i);
        kept.fetch_add(1);
        if (!whole) torn_kept.fetch_add(1);
      }
    });
  }
  sensor.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn_kept.load(), 0U);
  EXPECT_GT(kept.load(), 0U);
  EXPECT_EQ(r.newest, frames);
  EXPECT_EQ(r.records[frames % depth].frame, frames);
}

TEST(frame_ring_protocol, a_slot_being_rewritten_names_no_frame) {
  ring r;
  publish_host_frame(r.records[1], r.newest, 1, {}, [] {});
  bool seen_during = true;
  publish_host_frame(r.records[1], r.newest, 3, {}, [&] {
    seen_during = take_host_frame(r.records[1], 1).has_value() || r.records[1].frame != 0;
  });
  EXPECT_FALSE(seen_during) << "while the payload is written the record names no frame";
  EXPECT_TRUE(take_host_frame(r.records[1], 3).has_value());
  EXPECT_FALSE(take_host_frame(r.records[1], 1).has_value());
}

struct event {
  std::uint64_t seq;
  std::uint64_t check;
};

// The engine's side pushes 100,000 events into a ring of 64 while the host drains it: every
// event pushed arrives once, in order; the ones refused (ring full) are exactly the ones missing.
TEST(event_ring, the_host_drains_every_event_pushed_once_and_in_order) {
  constexpr std::uint64_t capacity = 64;
  std::vector<event> storage(capacity);
  std::uint64_t written_word = 0;
  std::uint64_t read_word = 0;
  std::atomic<bool> done{false};
  std::atomic<bool> draining{false};
  std::vector<std::uint64_t> pushed;
  std::thread engine([&] {
    while (!draining.load()) std::this_thread::yield();
    std::uint64_t written = 0;
    for (std::uint64_t i = 1; i <= 100'000; ++i) {
      if (push_event(storage.data(), capacity, written, written_word, read_word,
                     event{i, i * 7 + 1})) {
        pushed.push_back(i);
      } else {
        std::this_thread::yield();  // full: this event is dropped, as the engine drops it
      }
    }
    done = true;
  });
  draining = true;
  std::vector<event> got;
  std::uint64_t read = 0;
  for (;;) {
    const bool last = done.load();
    auto batch = drain_events(storage.data(), capacity, written_word, read_word, read);
    got.insert(got.end(), batch.begin(), batch.end());
    if (last) break;
  }
  engine.join();
  auto rest = drain_events(storage.data(), capacity, written_word, read_word, read);
  got.insert(got.end(), rest.begin(), rest.end());
  ASSERT_EQ(got.size(), pushed.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, pushed[i]);
    EXPECT_EQ(got[i].check, pushed[i] * 7 + 1) << "a half-written entry";
  }
  EXPECT_GT(pushed.size(), 10 * capacity) << "the host drained while the engine pushed";
}

}  // namespace
}  // namespace resident::detail
