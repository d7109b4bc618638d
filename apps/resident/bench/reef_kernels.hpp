#pragma once
// Device helpers of bench reef that are not part of the library.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "resident/app/loop.hpp"

namespace resident::bench {

/// When the RT op's last compute kernel finished, for one sample (bench reef --rt-split-body).
struct rt_done_stamp {
  std::uint64_t seq;
  std::uint64_t ns;  // %globaltimer
};

/// One thread stamps ring[seq % capacity] = {seq, now} for the loop's current sample: the end
/// of the RT compute, before the output copy and the mailbox's egress.
void launch_rt_done_stamp(cudaStream_t s, const loop_state* loop, rt_done_stamp* ring,
                          std::uint32_t capacity);

}  // namespace resident::bench
