#include "resident/cuda/graph.hpp"

#include <utility>

#include "resident/cuda/error.hpp"

namespace resident {

graph::graph() { RESIDENT_CUDA_TRY(cudaGraphCreate(&_graph, 0)); }

graph graph::adopt(cudaGraph_t g) noexcept { return graph(adopt_tag{}, g); }

graph::graph(graph&& other) noexcept : _graph(std::exchange(other._graph, nullptr)) {}

graph& graph::operator=(graph&& other) noexcept {
  if (this != &other) {
    if (_graph != nullptr) RESIDENT_CUDA_ASSERT_OK(cudaGraphDestroy(_graph));
    _graph = std::exchange(other._graph, nullptr);
  }
  return *this;
}

graph::~graph() {
  if (_graph != nullptr) RESIDENT_CUDA_ASSERT_OK(cudaGraphDestroy(_graph));
}

std::vector<cudaGraphNode_t> graph::nodes() const { return graph_nodes(_graph); }

void graph::write_dot(const std::string& path) const {
  RESIDENT_CUDA_TRY(cudaGraphDebugDotPrint(
      _graph, path.c_str(),
      cudaGraphDebugDotFlagsKernelNodeParams | cudaGraphDebugDotFlagsConditionalNodeParams |
          cudaGraphDebugDotFlagsMemcpyNodeParams | cudaGraphDebugDotFlagsMemsetNodeParams));
}

std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t g) {
  size_t count = 0;
  RESIDENT_CUDA_TRY(cudaGraphGetNodes(g, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) RESIDENT_CUDA_TRY(cudaGraphGetNodes(g, nodes.data(), &count));
  nodes.resize(count);
  return nodes;
}

const char* node_type_name(cudaGraphNodeType type) noexcept {
  switch (type) {
    case cudaGraphNodeTypeKernel:
      return "kernel";
    case cudaGraphNodeTypeMemcpy:
      return "memcpy";
    case cudaGraphNodeTypeMemset:
      return "memset";
    case cudaGraphNodeTypeHost:
      return "host";
    case cudaGraphNodeTypeGraph:
      return "child graph";
    case cudaGraphNodeTypeEmpty:
      return "empty";
    case cudaGraphNodeTypeWaitEvent:
      return "event wait";
    case cudaGraphNodeTypeEventRecord:
      return "event record";
    case cudaGraphNodeTypeExtSemaphoreSignal:
      return "external semaphore signal";
    case cudaGraphNodeTypeExtSemaphoreWait:
      return "external semaphore wait";
    case cudaGraphNodeTypeMemAlloc:
      return "memory allocation";
    case cudaGraphNodeTypeMemFree:
      return "memory free";
    case cudaGraphNodeTypeConditional:
      return "conditional";
    default:
      return "unknown";
  }
}

graph_exec::graph_exec(cudaGraph_t g, unsigned long long flags) {
  RESIDENT_CUDA_TRY(cudaGraphInstantiate(&_exec, g, flags));
}

graph_exec::graph_exec(graph_exec&& other) noexcept : _exec(std::exchange(other._exec, nullptr)) {}

graph_exec& graph_exec::operator=(graph_exec&& other) noexcept {
  if (this != &other) {
    if (_exec != nullptr) RESIDENT_CUDA_ASSERT_OK(cudaGraphExecDestroy(_exec));
    _exec = std::exchange(other._exec, nullptr);
  }
  return *this;
}

graph_exec::~graph_exec() {
  if (_exec != nullptr) RESIDENT_CUDA_ASSERT_OK(cudaGraphExecDestroy(_exec));
}

void graph_exec::upload(stream_view s) const { RESIDENT_CUDA_TRY(cudaGraphUpload(_exec, s.get())); }

void graph_exec::launch(stream_view s) const { RESIDENT_CUDA_TRY(cudaGraphLaunch(_exec, s.get())); }

}  // namespace resident
