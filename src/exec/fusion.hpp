#pragma once
// Fused iteration (run_options::fuse): whether the data-ready handler's kernel can carry the
// controller step and the egress kernel the end marker's, so that a graph-mode iteration needs
// no controller or end-marker kernel of its own. Only the runtime's own kernels carry a step
// (they read loop_state::fuse_controller / fuse_end_marker and run it at their end); any other
// handler or egress keeps the separate kernels.

#include <vector>

#include "exec/capture.hpp"
#include "resident/app/stream_plan.hpp"

namespace resident::detail {

/// The handler carries the controller: it is one operator that can, captured as one kernel
/// node which is the handler's whole frontier.
[[nodiscard]] bool handler_carries_controller(const std::vector<Operator*>& handler_order,
                                              const captured& handler);

/// The egress carries the end marker: the DAG's only sink is the one kernel node of its last
/// operator, which can carry it (so every other node of the DAG comes before it).
[[nodiscard]] bool egress_carries_end_marker(const std::vector<Operator*>& body_order,
                                             const captured& dag);

/// eager: the handler is the mailbox's one kernel, launched by its operator (no capture to
/// inspect; the mailbox's compute() launches exactly one kernel).
[[nodiscard]] bool eager_handler_carries_controller(const std::vector<Operator*>& handler_order);

/// eager: the DAG runs as one chain on the loop stream and ends with the mailbox's egress.
[[nodiscard]] bool eager_egress_carries_end_marker(const std::vector<Operator*>& body_order,
                                                   const stream_plan& plan);

}  // namespace resident::detail
