// The live CUDA object counts: each kind counts on its own, and wrappers that own nothing
// (default-constructed, moved from) count nothing.

#include <gtest/gtest.h>

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/live_objects.hpp"

namespace resident {
namespace {

TEST(live_objects, each_kind_counts_on_its_own) {
  using detail::cuda_object;
  const live_cuda_objects before = live_objects();
  detail::note_created(cuda_object::stream);
  detail::note_created(cuda_object::graph_exec);
  detail::note_created(cuda_object::graph_exec);
  live_cuda_objects want = before;
  want.streams += 1;
  want.graph_execs += 2;
  EXPECT_EQ(live_objects(), want);
  detail::note_destroyed(cuda_object::stream);
  detail::note_destroyed(cuda_object::graph_exec);
  detail::note_destroyed(cuda_object::graph_exec);
  EXPECT_EQ(live_objects(), before);
}

TEST(live_objects, wrappers_that_own_nothing_count_nothing) {
  const live_cuda_objects before = live_objects();
  {
    device_buffer empty;
    device_buffer zero_bytes(0);  // allocates nothing, needs no GPU
    device_buffer moved(std::move(zero_bytes));
    empty = std::move(moved);
  }
  EXPECT_EQ(live_objects(), before);
}

}  // namespace
}  // namespace resident
