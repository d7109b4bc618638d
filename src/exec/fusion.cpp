#include "exec/fusion.hpp"

#include "resident/cuda/error.hpp"
#include "resident/io/mailbox.hpp"

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

template <typename T>
std::size_t count_of(const std::vector<Operator*>& ops) {
  std::size_t n = 0;
  for (const Operator* op : ops) n += dynamic_cast<const T*>(op) != nullptr ? 1U : 0U;
  return n;
}

bool handler_can_carry_controller(const std::vector<Operator*>& handler_order,
                                  const std::vector<Operator*>& body_order) {
  return handler_order.size() == 1 &&
         dynamic_cast<const io::mailbox_rx*>(handler_order.front()) != nullptr &&
         count_of<io::mailbox_rx>(body_order) == 0;
}

bool egress_can_carry_end_marker(const std::vector<Operator*>& handler_order,
                                 const std::vector<Operator*>& body_order) {
  return !body_order.empty() && dynamic_cast<const io::mailbox_tx*>(body_order.back()) != nullptr &&
         count_of<io::mailbox_tx>(body_order) == 1 && count_of<io::mailbox_tx>(handler_order) == 0;
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
