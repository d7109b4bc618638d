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

bool handler_can_carry_controller(const std::vector<Operator*>& handler_order) {
  return handler_order.size() == 1 &&
         dynamic_cast<const io::mailbox_rx*>(handler_order.front()) != nullptr;
}

bool egress_can_carry_end_marker(const std::vector<Operator*>& body_order) {
  return !body_order.empty() && dynamic_cast<const io::mailbox_tx*>(body_order.back()) != nullptr;
}

std::vector<cudaGraphNode_t> controller_after(cudaGraph_t g, const captured& handler,
                                              const std::vector<Operator*>& handler_order,
                                              bool fuse, loop_resources& res,
                                              kernel_launcher launch) {
  const bool fused = fuse && handler_can_carry_controller(handler_order) &&
                     is_single_kernel_frontier(handler_order.front(), handler);
  res.config.fuse_controller = fused ? 1U : 0U;
  if (fused) return handler.frontier;
  return capture_kernel(g, handler.frontier, res.loop_stream.get(), launch, res.state());
}

void end_marker_after(cudaGraph_t g, const captured& dag, const std::vector<Operator*>& body_order,
                      bool fuse, loop_resources& res, kernel_launcher launch) {
  const bool fused = fuse && egress_can_carry_end_marker(body_order) &&
                     is_single_kernel_frontier(body_order.back(), dag);
  res.config.fuse_end_marker = fused ? 1U : 0U;
  if (!fused) (void)capture_end_marker(g, dag, res.loop_stream.get(), launch, res.state());
}

}  // namespace resident::detail
