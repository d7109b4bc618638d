// sched::spatial_share's refusals, which come before any device memory is made (no GPU needed).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <stdexcept>

#include "resident/sched/preemption.hpp"

namespace resident::sched {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(spatial_share, refuses_more_than_64_blocks_an_sm_and_a_mask_of_no_sm) {
  const std::array<std::uint32_t, 8> some{0x3U};
  EXPECT_THAT([&] { (void)spatial_share(some, 65); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("rt_sm_blocks is 65")));
  EXPECT_THAT([&] { (void)spatial_share(std::array<std::uint32_t, 8>{}, 3); },
              ThrowsMessage<std::invalid_argument>(HasSubstr("the SM mask marks no SM")));
}

}  // namespace
}  // namespace resident::sched
