#include <gmock/gmock.h>

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

}  // namespace
}  // namespace resident::testing
