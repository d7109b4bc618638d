#pragma once
// Host-callable launchers for the framework kernels that run every iteration. Each launches one
// single-thread kernel on `s` and checks the launch.

#include <cuda_runtime_api.h>

#include "resident/app/loop.hpp"

namespace resident::detail {

/// WHILE, host-graph and eager modes: reads the tear-down word (resident modes), applies the
/// sample policy to what the handler published, sets the IF (and WHILE) predicates, sleeps δ
/// when nothing was released.
void launch_controller(loop_state* loop, cudaStream_t s);
/// Commits the iteration: counters, last processed sample, host-visible mirror.
void launch_end_marker(loop_state* loop, cudaStream_t s);
/// Tail mode, graph M: the controller's decision, then tail-launches W (release) or M (idle).
void launch_tail_dispatcher(loop_state* loop, cudaStream_t s);
/// Tail mode, graph W: end marker, then tail-launches M.
void launch_tail_end_marker(loop_state* loop, cudaStream_t s);

}  // namespace resident::detail
