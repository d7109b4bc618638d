#include "exec/fusion.hpp"

#include <algorithm>

#include "resident/cuda/error.hpp"

namespace resident::detail {

namespace {

/// `op`'s only node when it is one kernel node and the whole frontier of what was captured.
bool is_single_kernel_frontier(const Operator* op, const captured& c) {
  if (c.joined || c.frontier.size() != 1) return false;
  int nodes = 0;
  cudaGraphNode_t mine = nullptr;
  for (const node_owner& o : c.owners) {
    if (o.op != op) continue;
    ++nodes;
    mine = o.node;
  }
  if (nodes != 1 || mine != c.frontier.front()) return false;
  cudaGraphNodeType type{};
  RESIDENT_CUDA_TRY(cudaGraphNodeGetType(mine, &type));
  return type == cudaGraphNodeTypeKernel;
}

}  // namespace

/// How many of `ops` declared that their kernel can carry `step`.
std::size_t carriers(const std::vector<Operator*>& ops, loop_step step) {
  return static_cast<std::size_t>(std::count_if(
      ops.begin(), ops.end(), [&](const Operator* op) { return op->spec().carries(step); }));
}

// A carrier runs the step whenever the loop state asks for it, so exactly one may be in the
// loop: the handler's only operator for the controller, the DAG's last for the end marker.
bool handler_can_carry_controller(const std::vector<Operator*>& handler_order,
                                  const std::vector<Operator*>& body_order) {
  return handler_order.size() == 1 &&
         handler_order.front()->spec().carries(loop_step::controller) &&
         carriers(body_order, loop_step::controller) == 0;
}

bool egress_can_carry_end_marker(const std::vector<Operator*>& handler_order,
                                 const std::vector<Operator*>& body_order) {
  return !body_order.empty() && body_order.back()->spec().carries(loop_step::end_marker) &&
         carriers(body_order, loop_step::end_marker) == 1 &&
         carriers(handler_order, loop_step::end_marker) == 0;
}

bool host_gate_decides(const dag_plan& plan, bool fuse) {
  return fuse && handler_can_carry_controller(plan.handler_order, plan.body_order);
}

std::vector<cudaGraphNode_t> controller_after(cudaGraph_t g, const captured& handler,
                                              const dag_plan& plan, bool fuse, loop_resources& res,
                                              kernel_launcher launch) {
  const bool fused = fuse && handler_can_carry_controller(plan.handler_order, plan.body_order) &&
                     is_single_kernel_frontier(plan.handler_order.front(), handler);
  res.config.fuse_controller = fused ? 1U : 0U;
  if (fused) return handler.frontier;
  return capture_kernel(g, handler.frontier, res.loop_stream.get(), launch, res.state());
}

void end_marker_after(cudaGraph_t g, const captured& dag, const dag_plan& plan, bool fuse,
                      loop_resources& res, kernel_launcher launch) {
  const bool fused = fuse && egress_can_carry_end_marker(plan.handler_order, plan.body_order) &&
                     is_single_kernel_frontier(plan.body_order.back(), dag);
  res.config.fuse_end_marker = fused ? 1U : 0U;
  if (!fused) (void)capture_end_marker(g, dag, res.loop_stream.get(), launch, res.state());
}

}  // namespace resident::detail
