#pragma once
// captured_graph: an operator that runs a CUDA graph captured elsewhere (cuBLAS, cuDNN, PyTorch,
// TensorRT). The graph reads and writes fixed device memory; each of those buffers becomes a port
// bound to it as external memory, so the operator upstream writes straight into the graph's input
// and the one downstream reads its output.
//
//   graph mode (host-graph, while, tail)  a child-graph node at the operator's place in the DAG
//   eager (and direct submission)         cudaGraphLaunch of the graph, instantiated in
//                                         initialize(), on the operator's stream
//
// Node rules. In every mode the graph must hold no memory allocation, memory free or conditional
// node (a child-graph node cannot, CUDA cannot clone them, and nothing may allocate once the
// loop runs): setup() refuses them. What else a mode can hold is checked when the operator is
// captured, against CaptureContext::capture_target(): a conditional body (host-graph and while
// modes) takes kernel, memcpy, memset, empty and child-graph nodes; a device-launched graph
// (tail mode) takes kernel, memcpy, memset and child-graph nodes. A refusal is a
// composition_error naming the operator and the node type. Eager mode launches any graph.
//
// Ownership. Given a resident::graph, the operator takes it. Given a cudaGraph_t, it clones it
// in setup(), which runs inside make_operator: the caller's graph need only live until then.
// The port memory stays the caller's: it must outlive every run of the application.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "resident/app/operator.hpp"
#include "resident/cuda/graph.hpp"

namespace resident::ops {

/// One buffer of a captured graph: the device memory it reads (input) or writes (output).
struct graph_port {
  std::string name;
  void* memory{};
  std::size_t bytes{};
};

/// The graph's inputs and outputs, each becoming a port of the operator.
struct graph_ports {
  std::vector<graph_port> inputs;
  std::vector<graph_port> outputs;
};

class captured_graph final : public Operator {
 public:
  /// Takes ownership of `g`.
  captured_graph(graph g, graph_ports ports);
  /// Borrows `g` until setup(), which clones it (the caller keeps and may destroy its own).
  captured_graph(cudaGraph_t g, graph_ports ports);
  ~captured_graph() override;

  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;

  /// The operator's own graph (after setup()).
  [[nodiscard]] cudaGraph_t graph_handle() const noexcept { return _graph.get(); }
  /// Its nodes, child graphs' included (after setup()).
  [[nodiscard]] std::size_t node_count() const noexcept { return _node_count; }

  /// Records what `record` enqueues on the stream it is given (a fresh non-blocking stream,
  /// destroyed afterwards) into a graph, for this operator. Relaxed capture by default: a library
  /// that sets itself up on first use (cudaMalloc, cudaFuncSetAttribute, ...) does not break it,
  /// and such calls are not recorded; run the work once before capturing so that they happen
  /// then. Bind library handles to the stream inside `record`, with their workspaces.
  [[nodiscard]] static graph capture(const std::function<void(cudaStream_t)>& record,
                                     cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed);

 private:
  void check_nodes();
  void check_target(graph_kind target) const;
  void check_bound_memory() const;
  void add_child_node(cudaStream_t s) const;

  graph _graph;
  cudaGraph_t _borrowed{};
  graph_ports _ports;
  std::vector<cudaGraphNodeType> _node_types;  // distinct, child graphs' included
  std::size_t _node_count{};
  std::unique_ptr<graph_exec> _exec;  // eager launches
};

}  // namespace resident::ops
