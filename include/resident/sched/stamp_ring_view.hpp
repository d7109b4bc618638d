#pragma once
// What a kernel needs to append to a stamp ring (plain data; the ring: stamp_ring.hpp).

#include <cstdint>

namespace resident::sched {

/// Passed by value; all null: no ring. `head` counts the stamps ever appended; stamp i lands
/// at entries[i & mask], so the newest mask + 1 stamps are kept.
struct stamp_ring_view {
  unsigned long long* head{nullptr};
  unsigned long long* entries{nullptr};
  std::uint32_t mask{0};
};

}  // namespace resident::sched
