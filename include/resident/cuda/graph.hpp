#pragma once
// Owning wrappers for CUDA graphs and their executable instances.

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "resident/cuda/stream.hpp"

namespace resident {

/// Owning cudaGraph_t.
class graph {
 public:
  graph();  // creates an empty graph
  /// Takes ownership of a graph returned by e.g. cudaStreamEndCapture.
  static graph adopt(cudaGraph_t g) noexcept;
  graph(graph&& other) noexcept;
  graph& operator=(graph&& other) noexcept;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  ~graph();

  [[nodiscard]] cudaGraph_t get() const noexcept { return _graph; }
  /// Gives up ownership without destroying (for a graph the runtime may already have freed).
  cudaGraph_t release() noexcept { return std::exchange(_graph, nullptr); }
  [[nodiscard]] std::vector<cudaGraphNode_t> nodes() const;
  /// Writes Graphviz DOT through cudaGraphDebugDotPrint (conditional bodies included).
  void write_dot(const std::string& path) const;

 private:
  struct adopt_tag {};
  graph(adopt_tag, cudaGraph_t g) noexcept : _graph(g) {}
  cudaGraph_t _graph{};
};

/// Nodes of any graph, owned or not (e.g. the body graph of a conditional node).
[[nodiscard]] std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t g);
/// Human-readable node type ("kernel", "host", "conditional", ...).
[[nodiscard]] const char* node_type_name(cudaGraphNodeType type) noexcept;

/// Owning cudaGraphExec_t.
class graph_exec {
 public:
  /// Instantiates `g`; flags as for cudaGraphInstantiate (e.g.
  /// cudaGraphInstantiateFlagDeviceLaunch).
  explicit graph_exec(cudaGraph_t g, unsigned long long flags = 0);
  graph_exec(graph_exec&& other) noexcept;
  graph_exec& operator=(graph_exec&& other) noexcept;
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;
  ~graph_exec();

  void upload(stream_view s) const;
  void launch(stream_view s) const;
  [[nodiscard]] cudaGraphExec_t get() const noexcept { return _exec; }

 private:
  cudaGraphExec_t _exec{};
};

}  // namespace resident
