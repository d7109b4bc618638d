#pragma once
// The capture step every mode shares: operators' compute() recorded into a graph in
// topological order (one capture per operator, so each node is attributed to its operator), as
// one chain or as forked branches (stream_plan), single framework kernels, conditional nodes,
// and the device-launch node check.

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>
#include <vector>

#include "resident/app/error.hpp"
#include "resident/app/loop.hpp"
#include "resident/app/stream_plan.hpp"
#include "resident/cuda/graph.hpp"

namespace resident {
class Operator;
namespace partition {
class green_context;
}
}  // namespace resident

namespace resident::detail {

/// An operator's compute() failed during capture. When the failure invalidated the capture,
/// CUDA frees the graph that was being captured into (a body graph included), so the graph
/// tree holding it must be released, not destroyed: graph_lost() says so.
class capture_failure : public execution_error {
 public:
  capture_failure(const std::string& what, bool graph_lost)
      : execution_error(what), _graph_lost(graph_lost) {}
  [[nodiscard]] bool graph_lost() const noexcept { return _graph_lost; }

 private:
  bool _graph_lost;
};

/// How the operator DAG was captured, for DOT dumps (a comment in the graph's file).
[[nodiscard]] const char* capture_order_note(capture_order order) noexcept;

/// Runs `build`; on a capture failure that lost a graph, releases `root` (leaking the tree
/// rather than destroying freed memory) before rethrowing.
template <class Build>
void build_or_release(graph& root, Build&& build) {
  try {
    build();
  } catch (const capture_failure& e) {
    if (e.graph_lost()) (void)root.release();
    throw;
  }
}

struct node_owner {
  cudaGraphNode_t node;
  const Operator* op;
};

struct captured {
  std::vector<cudaGraphNode_t> frontier;  // what the next node must depend on
  std::vector<node_owner> owners;
  /// The frontier joins several streams of a forked capture (the end marker then waits for
  /// every branch with full edges; see capture_kernel).
  bool joined{false};
};

/// Records `ops` (in order, serialized on `s`) into `g` after `deps`. `target`: what kind of
/// graph `g` is (operators see it as CaptureContext::capture_target()). A composition_error that
/// a compute() throws without breaking the capture (the operator refusing the mode) stays one.
[[nodiscard]] captured capture_operators(cudaGraph_t g, std::vector<cudaGraphNode_t> deps,
                                         const std::vector<Operator*>& ops, cudaStream_t s,
                                         loop_state* loop, std::string_view mode,
                                         graph_kind target);

/// Records the operator DAG `ops` (body order) into `g` after `deps`, each operator captured on
/// `streams[plan.steps[i].stream]` after the previous operator of its stream and the operators
/// it waits for: the graph has the edges that an event fork/join between those streams would
/// give. The frontier is stream 0's last node and the nodes of plan.join.
[[nodiscard]] captured capture_operators(cudaGraph_t g, std::vector<cudaGraphNode_t> deps,
                                         const std::vector<Operator*>& ops, const stream_plan& plan,
                                         const std::vector<cudaStream_t>& streams, loop_state* loop,
                                         std::string_view mode, graph_kind target);

using kernel_launcher = void (*)(loop_state*, cudaStream_t);
/// Records one framework kernel (controller, end marker, ...) into `g` after `deps`. When
/// every node of `deps` is a kernel and `programmatic` allows it, the edges are programmatic
/// (the kernel waits for them on the device: device::wait_for_previous_kernels).
[[nodiscard]] std::vector<cudaGraphNode_t> capture_kernel(cudaGraph_t g,
                                                          const std::vector<cudaGraphNode_t>& deps,
                                                          cudaStream_t s, kernel_launcher launch,
                                                          loop_state* loop,
                                                          bool programmatic = true);
/// The end marker after a captured DAG: programmatic edges unless it joins forked branches.
/// A kernel joined to several branches by programmatic edges is not something the loop relies
/// on; the join keeps full edges (costing the ~0.45 us a programmatic edge saves).
[[nodiscard]] inline std::vector<cudaGraphNode_t> capture_end_marker(
    cudaGraph_t g, const captured& dag, cudaStream_t s, kernel_launcher launch, loop_state* loop) {
  return capture_kernel(g, dag.frontier, s, launch, loop, !dag.joined);
}

/// Adds a conditional node (IF or WHILE) controlled by `handle` after `deps`; returns its body.
[[nodiscard]] cudaGraph_t add_conditional(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps,
                                          cudaGraphConditionalHandle handle,
                                          cudaGraphConditionalNodeType type,
                                          const partition::green_context* partition = nullptr);

/// Eager mode: runs each operator's compute() directly on `s` (no capture).
void compute_eager(const std::vector<Operator*>& ops, cudaStream_t s, loop_state* loop);
/// Eager mode, the operator DAG: each operator's compute() on `streams[plan.steps[i].stream]`,
/// after waiting for the events of the operators it waits for; `events[i]` (non-null where
/// plan.steps[i].signals) is recorded after operator i. Stream 0 then waits for plan.join, so
/// work enqueued on it afterwards follows every branch. Every stream must already be ordered
/// after the iteration's controller (the caller synchronized with it). Allocates nothing.
void compute_eager(const std::vector<Operator*>& ops, const stream_plan& plan,
                   const std::vector<cudaStream_t>& streams, const std::vector<cudaEvent_t>& events,
                   loop_state* loop);

/// Which node types a mode's graphs may hold, and what to tell a user whose DAG needs more.
struct node_rules {
  graph_kind kind;          // the node types: graph_kind_allows(kind, type)
  std::string_view advice;  // which mode can run such work instead
};
/// Device-launchable graphs (tail mode): kernel, memcpy, memset and child-graph nodes.
[[nodiscard]] const node_rules& device_launch_rules();
/// Conditional-node bodies (while and host-graph modes): kernel, memcpy, memset, empty,
/// child-graph and conditional nodes.
[[nodiscard]] const node_rules& conditional_body_rules();

/// Throws composition_error naming the operator when `g` (or a child graph in it) holds a
/// node type the rules do not allow. `where` names the graph in the message.
void require_node_types(cudaGraph_t g, const std::vector<node_owner>& owners, std::string_view mode,
                        std::string_view where, const node_rules& rules);

}  // namespace resident::detail
