// The tagged line (resident/io/tagged_line.hpp): a small sample and its number in one 64-byte
// line, every word tagged, so a reader of the whole line refuses any mix of two writes.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "resident/io/tagged_line.hpp"

namespace resident::io {
namespace {

namespace tl = tagged_line;
using line_t = std::array<std::uint64_t, tl::words>;

std::vector<unsigned char> payload_of(std::uint64_t number, std::size_t size) {
  std::vector<unsigned char> p(size);
  for (std::size_t i = 0; i < size; ++i) {
    p[i] = static_cast<unsigned char>(number * 131 + i * 29 + (number >> 8));
  }
  return p;
}

line_t encoded(std::uint64_t number, const std::vector<unsigned char>& payload) {
  line_t line{};
  tl::encode(number, payload.data(), payload.size(), line.data());
  return line;
}

TEST(tagged_line, every_size_up_to_the_capacity_round_trips) {
  static_assert(tl::capacity == 49);
  for (const std::uint64_t number : {1ULL, 255ULL, 256ULL, 0x1234'5678'9ABCULL, ~0ULL - 1}) {
    for (std::size_t size = 0; size <= tl::capacity; ++size) {
      const auto payload = payload_of(number, size);
      const line_t line = encoded(number, payload);
      std::vector<unsigned char> out(size, 0xEE);
      ASSERT_EQ(tl::decode(line.data(), out.data(), size), number) << size;
      EXPECT_EQ(out, payload) << "number " << number << ", " << size << " bytes";
    }
  }
}

TEST(tagged_line, bytes_past_the_payload_are_zero_and_the_number_zero_means_none) {
  const line_t line = encoded(7, payload_of(7, 10));
  EXPECT_EQ(line[2] & 0x00FF'FFFF'FFFF'FFFFULL, payload_of(7, 10)[7] | payload_of(7, 10)[8] << 8 |
                                                    std::uint64_t{payload_of(7, 10)[9]} << 16);
  for (std::size_t i = 3; i < tl::words; ++i) EXPECT_EQ(line[i], std::uint64_t{7} << 56);
  const line_t empty{};
  unsigned char out[1]{};
  EXPECT_EQ(tl::decode(empty.data(), out, 0), 0U) << "a line never written reads as none";
}

// A reader that got some words of one write and the rest of another refuses the line, for every
// split, whichever write word 0 came from, while the numbers differ by less than 256.
TEST(tagged_line, any_mix_of_two_writes_is_refused) {
  for (const std::uint64_t gap : {1ULL, 2ULL, 7ULL, 255ULL}) {
    const std::uint64_t n = 1000;
    const line_t a = encoded(n, payload_of(n, tl::capacity));
    const line_t b = encoded(n + gap, payload_of(n + gap, tl::capacity));
    for (unsigned mask = 1; mask < (1U << tl::words) - 1; ++mask) {  // word i from b when bit i
      line_t mixed{};
      for (std::size_t i = 0; i < tl::words; ++i) mixed[i] = ((mask >> i) & 1U) != 0 ? b[i] : a[i];
      std::array<unsigned char, tl::capacity> out{};
      EXPECT_EQ(tl::decode(mixed.data(), out.data(), out.size()), 0U)
          << "gap " << gap << ", mask " << mask;
    }
  }
  // The stated limit: two writes 256 apart carry the same tags, so a read spanning 256 writes
  // of the line could take a mix.
  const line_t a = encoded(1000, payload_of(1000, 8));
  line_t b = encoded(1256, payload_of(1256, 8));
  b[0] = a[0];
  unsigned char out[8]{};
  EXPECT_EQ(tl::decode(b.data(), out, 8), 1000U);
}

// A writer rewrites one line (the words in a shuffled order each time, with relaxed atomic
// stores) while a reader loads it whole (relaxed atomic loads) and decodes: every line the
// reader accepts is exactly one write's payload. Runs under ThreadSanitizer in CI.
TEST(tagged_line, a_reader_racing_a_writer_takes_only_whole_writes) {
  alignas(64) std::array<std::uint64_t, tl::words> shared{};
  constexpr std::uint64_t writes = 200'000;
  constexpr std::size_t size = 30;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::mt19937 rng(7);
    std::array<std::size_t, tl::words> order{0, 1, 2, 3, 4, 5, 6, 7};
    for (std::uint64_t n = 1; n <= writes; ++n) {
      const line_t line = encoded(n, payload_of(n, size));
      std::shuffle(order.begin(), order.end(), rng);
      for (const std::size_t i : order) {
        std::atomic_ref<std::uint64_t>(shared[i]).store(line[i], std::memory_order_relaxed);
      }
    }
    done.store(true, std::memory_order_release);
  });
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
  std::uint64_t wrong = 0;
  std::uint64_t last = 0;
  while (!done.load(std::memory_order_acquire)) {
    line_t seen{};
    for (std::size_t i = 0; i < tl::words; ++i) {
      seen[i] = std::atomic_ref<std::uint64_t>(shared[i]).load(std::memory_order_relaxed);
    }
    std::array<unsigned char, size> out{};
    const std::uint64_t n = tl::decode(seen.data(), out.data(), size);
    if (n == 0) {
      ++refused;
      continue;
    }
    ++accepted;
    const auto want = payload_of(n, size);
    if (!std::equal(want.begin(), want.end(), out.begin())) ++wrong;
    last = n;
  }
  writer.join();
  EXPECT_EQ(wrong, 0U) << accepted << " accepted, " << refused << " refused";
  EXPECT_GT(accepted, 0U);
  line_t final_line{};
  for (std::size_t i = 0; i < tl::words; ++i) final_line[i] = shared[i];
  std::array<unsigned char, size> out{};
  EXPECT_EQ(tl::decode(final_line.data(), out.data(), size), writes) << "the last write is whole";
  EXPECT_LE(last, writes);
}

}  // namespace
}  // namespace resident::io
