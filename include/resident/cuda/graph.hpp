#pragma once
// Owning wrappers for CUDA graphs and their executable instances.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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
  cudaGraph_t release() noexcept;
  [[nodiscard]] std::vector<cudaGraphNode_t> nodes() const;
  /// Writes Graphviz DOT through cudaGraphDebugDotPrint (conditional bodies included).
  /// Writes the graph as Graphviz DOT (cudaGraphDebugDotPrint); a non-empty `note` goes in as
  /// comment lines after the first line.
  void write_dot(const std::string& path, std::string_view note = {}) const;

 private:
  struct adopt_tag {};
  graph(adopt_tag, cudaGraph_t g) noexcept : _graph(g) {}
  cudaGraph_t _graph{};
};

/// Nodes of any graph, owned or not (e.g. the body graph of a conditional node).
[[nodiscard]] std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t g);
/// Human-readable node type ("kernel", "host", "conditional", ...).
[[nodiscard]] const char* node_type_name(cudaGraphNodeType type) noexcept;

/// The kind of graph that captured work lands in, which decides the node types it may hold.
enum class graph_kind : std::uint8_t {
  host_launched,     // a graph the host launches: any node type
  conditional_body,  // the body of an IF or WHILE node
  device_launched,   // a graph launched from the device (cudaGraphInstantiateFlagDeviceLaunch)
};
/// Whether a graph of `kind` may hold a node of `type` (directly or in a child graph).
[[nodiscard]] bool graph_kind_allows(graph_kind kind, cudaGraphNodeType type) noexcept;
/// The rule as a sentence, for error messages: "a conditional node's body may hold only ...".
[[nodiscard]] const char* allowed_node_types_text(graph_kind kind) noexcept;

/// Records what `record` enqueues on `s` into a new graph (stream capture) instead of running
/// it. `s` must not be the legacy default stream, which cannot be captured. `mode`: the
/// thread-local default keeps other threads' CUDA calls out of the capture; relaxed also lets
/// this thread make calls that are unsafe while capturing (cudaMalloc, ...), which libraries
/// that set themselves up on first use make. When `record` throws, the capture is ended and its
/// graph destroyed before rethrowing.
[[nodiscard]] graph capture_graph(stream_view s, const std::function<void(stream_view)>& record,
                                  cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal);

/// What cudaGraphExecUpdate made of an attempt to update an executable graph in place.
struct graph_update_result {
  bool updated{false};
  cudaGraphExecUpdateResult result{cudaGraphExecUpdateSuccess};
  cudaGraphNode_t error_node{};  // the node CUDA blamed, when it named one
  /// "success", "topology changed", "node type changed", ... (for messages and receipts).
  [[nodiscard]] const char* reason() const noexcept;
};

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

  /// Whole-graph update: makes this executable run `g` (same topology, new parameters) without
  /// re-instantiating. A refused update (topology or node kind changed, ...) is an answer, not
  /// an error: the result says why and this executable is unchanged. Other failures throw.
  [[nodiscard]] graph_update_result try_update(cudaGraph_t g);
  /// try_update, and on refusal a fresh instantiation of `g` (flags as in the constructor).
  /// Returns what try_update said, so callers can count re-instantiations.
  graph_update_result update_or_reinstantiate(cudaGraph_t g, unsigned long long flags = 0);

  /// Node-level updates of one node of this executable (`node` is the node of the graph it was
  /// instantiated from). Later launches see the new parameters; running work does not.
  void set_kernel_node_params(cudaGraphNode_t node, const cudaKernelNodeParams& params);
  void set_memcpy_node_params_1d(cudaGraphNode_t node, void* dst, const void* src,
                                 std::size_t bytes, cudaMemcpyKind kind);

 private:
  cudaGraphExec_t _exec{};
};

}  // namespace resident
