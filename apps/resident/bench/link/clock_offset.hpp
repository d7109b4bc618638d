#pragma once
// The offset between two GPUs' device clocks (%globaltimer), calibrated by ping-pong over peer
// memory: device A stamps t0 and writes a token into B's memory; B, polling, stamps tb and
// writes it back into A's memory; A sees it and stamps t1. B's clock minus A's is then
// tb - (t0 + t1) / 2, within half the round trip; the round with the shortest round trip bounds
// it best. Stamps from the two clocks are compared through it (bench link).

#include <cstdint>
#include <span>
#include <vector>

namespace resident::bench {

/// One ping-pong round, each stamp on its own device's clock (ns).
struct ping_pong_round {
  std::uint64_t a_sent{};  // t0: A, before writing the token into B's memory
  std::uint64_t b_seen{};  // tb: B, when it saw the token
  std::uint64_t a_back{};  // t1: A, when it saw B's answer
};

struct clock_offset {
  double b_minus_a_ns{0};   // add to an A stamp to put it on B's clock
  double error_ns{0};       // |true offset - estimate| is at most this (half the round trip)
  double round_trip_ns{0};  // the shortest round trip (the round the estimate comes from)
  double spread_ns{0};      // max - min of the rounds' own estimates (how the clocks wander)
  std::size_t rounds{0};
};

/// The estimate from measured rounds (no GPU): the shortest round's midpoint. Throws
/// std::invalid_argument with no rounds or a round whose stamps go backwards on A.
[[nodiscard]] clock_offset estimate_clock_offset(std::span<const ping_pong_round> rounds);

/// Runs `rounds` ping-pong rounds between devices `a` and `b` (the same ordinal: the offset is
/// 0 within the round trip) with peer access enabled both ways, one thread on each device.
/// Throws std::runtime_error, naming the devices, when a side waits more than a second (the two
/// kernels did not run at once).
[[nodiscard]] std::vector<ping_pong_round> ping_pong(int a, int b, std::size_t rounds);

}  // namespace resident::bench
