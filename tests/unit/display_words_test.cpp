// The display's host-side pieces: the flip word's fields and the gamma mapping the egress uses.

#include <gtest/gtest.h>

#include "resident/io/display.hpp"

namespace resident::io {
namespace {

TEST(flip_word, packs_and_unpacks_its_three_fields) {
  for (std::uint32_t front = 0; front < 2; ++front) {
    for (std::uint32_t target = 0; target < 2; ++target) {
      for (const bool pending : {false, true}) {
        const std::uint64_t w = detail::flip_word(front, pending, target);
        EXPECT_EQ(detail::flip_front(w), front);
        EXPECT_EQ(detail::flip_pending(w), pending);
        EXPECT_EQ(detail::flip_target(w), target);
      }
    }
  }
  EXPECT_EQ(detail::flip_word(3, false, 3), detail::flip_word(1, false, 1)) << "one bit each";
}

TEST(gamma_encode, maps_black_and_full_scale_to_the_ends_and_is_monotonic) {
  for (const std::uint32_t full : {255U, 65535U}) {
    EXPECT_EQ(gamma_encode(0, full, 2.2), 0);
    EXPECT_EQ(gamma_encode(full, full, 2.2), 255);
    EXPECT_EQ(gamma_encode(full + 100, full, 2.2), 255) << "clamped";
    int previous = 0;
    for (std::uint32_t v = 0; v <= full; v += full / 255) {
      const int e = gamma_encode(v, full, 2.2);
      EXPECT_GE(e, previous);
      previous = e;
    }
  }
  // Mid grey in linear light is brighter once encoded: 255 * 0.5^(1/2.2) = 186.1.
  EXPECT_EQ(gamma_encode(32768, 65535, 2.2), 186);
  EXPECT_EQ(gamma_encode(128, 255, 1.0), 128) << "gamma 1 is the identity";
}

}  // namespace
}  // namespace resident::io
