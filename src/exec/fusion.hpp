#pragma once
// Fused iteration (run_options::fuse): the data-ready handler's kernel may carry the controller
// step and the egress kernel the end marker's, so that an iteration needs no controller or
// end-marker kernel of its own. Only the runtime's own kernels carry a step (the mailbox's: they
// read loop_state::fuse_controller / fuse_end_marker and run it at their end); any other handler
// or egress keeps the separate kernels.

#include <vector>

#include "exec/capture.hpp"
#include "exec/loop_executor.hpp"
#include "resident/app/stream_plan.hpp"

namespace resident::detail {

/// The handler is the mailbox's one operator, whose kernel can carry the controller step, and
/// no other mailbox_rx is in the loop (every mailbox_rx kernel reads the one flag, so a second
/// would run the step twice).
[[nodiscard]] bool handler_can_carry_controller(const std::vector<Operator*>& handler_order,
                                                const std::vector<Operator*>& body_order);

/// The DAG ends with the mailbox's egress, whose kernel can carry the end-marker step, and it is
/// the loop's only mailbox_tx (a DAG with two egresses keeps the separate end marker: both would
/// read the one flag and count the iteration twice).
[[nodiscard]] bool egress_can_carry_end_marker(const std::vector<Operator*>& handler_order,
                                               const std::vector<Operator*>& body_order);

/// Host-driven modes (eager, host-graph): the host's gate decides exactly when the controller
/// releases, so the DAG needs no device-side condition. True when `fuse` and the handler is the
/// mailbox's (handler_can_carry_controller): its host gate and the device's sample choice are the
/// one select_sample rule, and the host launches an iteration only after the one before it
/// completed, so a gate that passed means a sample the controller releases. host-graph then
/// captures handler -> DAG -> egress without the IF node (whose transition is most of what it
/// costs over one launch, docs/findings.md), and eager launches the whole iteration before its
/// one wait. The mailbox's egress and the end marker commit and count only a released iteration,
/// so even a pass that released nothing would leave no output and no count.
[[nodiscard]] bool host_gate_decides(const dag_plan& plan, bool fuse);

/// Graph modes: the controller step after the captured handler. When `fuse` and the handler is
/// the mailbox's single kernel node (its whole frontier), that kernel runs it: nothing is
/// captured and res.config.fuse_controller is set. Otherwise `launch` (the mode's controller
/// kernel) is captured after the handler. Returns what the next node must depend on.
[[nodiscard]] std::vector<cudaGraphNode_t> controller_after(cudaGraph_t g, const captured& handler,
                                                            const dag_plan& plan, bool fuse,
                                                            loop_resources& res,
                                                            kernel_launcher launch);

/// Graph modes: the end-marker step after the captured DAG, the same way: carried by the
/// mailbox's egress kernel when it is the DAG's only sink (res.config.fuse_end_marker), else
/// `launch` captured after the DAG.
void end_marker_after(cudaGraph_t g, const captured& dag, const dag_plan& plan, bool fuse,
                      loop_resources& res, kernel_launcher launch);

}  // namespace resident::detail
