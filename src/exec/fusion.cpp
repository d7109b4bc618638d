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

bool handler_carries_controller(const std::vector<Operator*>& handler_order,
                                const captured& handler) {
  if (handler_order.size() != 1) return false;
  const Operator* op = handler_order.front();
  return dynamic_cast<const io::mailbox_rx*>(op) != nullptr &&
         is_single_kernel_frontier(op, handler);
}

bool eager_handler_carries_controller(const std::vector<Operator*>& handler_order) {
  return handler_order.size() == 1 &&
         dynamic_cast<const io::mailbox_rx*>(handler_order.front()) != nullptr;
}

bool eager_egress_carries_end_marker(const std::vector<Operator*>& body_order,
                                     const stream_plan& plan) {
  return !body_order.empty() && plan.streams == 1 && plan.join.empty() &&
         dynamic_cast<const io::mailbox_tx*>(body_order.back()) != nullptr;
}

bool egress_carries_end_marker(const std::vector<Operator*>& body_order, const captured& dag) {
  if (body_order.empty()) return false;
  const Operator* op = body_order.back();
  return dynamic_cast<const io::mailbox_tx*>(op) != nullptr && is_single_kernel_frontier(op, dag);
}

}  // namespace resident::detail
