#pragma once
// Appending to a stamp ring from a kernel (see stamp_ring.hpp).

#include "resident/sched/stamp_ring_view.hpp"

namespace resident::sched {

/// Appends `stamp` (one thread; stamps of racing threads land in the order of their atomics).
__device__ inline void push_stamp(const stamp_ring_view& ring, unsigned long long stamp) {
  const unsigned long long i = atomicAdd(ring.head, 1ULL);
  ring.entries[i & ring.mask] = stamp;
}

}  // namespace resident::sched
