// sched::stamp_ring without a GPU: its capacity is checked before anything is allocated.

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "resident/sched/stamp_ring.hpp"

TEST(stamp_ring, refuses_a_capacity_that_is_not_a_power_of_two_in_range) {
  for (const std::size_t bad : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000},
                                (std::size_t{1} << 26U) * 2U}) {
    SCOPED_TRACE(bad);
    try {
      const resident::sched::stamp_ring ring(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos) << e.what();
    }
  }
}
