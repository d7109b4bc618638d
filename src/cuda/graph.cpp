#include "resident/cuda/graph.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/cuda/error.hpp"
#include "resident/cuda/live_objects.hpp"

namespace resident {

graph::graph() {
  RESIDENT_CUDA_TRY(cudaGraphCreate(&_graph, 0));
  detail::note_created(detail::cuda_object::graph);
}

graph graph::adopt(cudaGraph_t g) noexcept {
  if (g != nullptr) detail::note_created(detail::cuda_object::graph);
  return graph(adopt_tag{}, g);
}

cudaGraph_t graph::release() noexcept {
  if (_graph != nullptr) detail::note_destroyed(detail::cuda_object::graph);  // no longer ours
  return std::exchange(_graph, nullptr);
}

graph::graph(graph&& other) noexcept : _graph(std::exchange(other._graph, nullptr)) {}

graph& graph::operator=(graph&& other) noexcept {
  if (this != &other) {
    if (_graph != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaGraphDestroy(_graph));
      detail::note_destroyed(detail::cuda_object::graph);
    }
    _graph = std::exchange(other._graph, nullptr);
  }
  return *this;
}

graph::~graph() {
  if (_graph != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaGraphDestroy(_graph));
    detail::note_destroyed(detail::cuda_object::graph);
  }
}

std::vector<cudaGraphNode_t> graph::nodes() const { return graph_nodes(_graph); }

void graph::write_dot(const std::string& path, std::string_view note) const {
  RESIDENT_CUDA_TRY(cudaGraphDebugDotPrint(
      _graph, path.c_str(),
      cudaGraphDebugDotFlagsKernelNodeParams | cudaGraphDebugDotFlagsConditionalNodeParams |
          cudaGraphDebugDotFlagsMemcpyNodeParams | cudaGraphDebugDotFlagsMemsetNodeParams));
  if (note.empty()) return;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string comment;
  std::size_t from = 0;
  while (from <= note.size()) {
    const std::size_t to = std::min(note.find('\n', from), note.size());
    comment += "// " + std::string(note.substr(from, to - from)) + "\n";
    from = to + 1;
  }
  const std::size_t first_line = text.find('\n');
  text.insert(first_line == std::string::npos ? text.size() : first_line + 1, comment);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("graph::write_dot: cannot write the note into " + path);
}

graph capture_graph(stream_view s, const std::function<void(stream_view)>& record,
                    cudaStreamCaptureMode mode) {
  if (s.get() == nullptr || s.get() == cudaStreamLegacy) {
    throw std::invalid_argument(
        "capture_graph: the legacy default stream cannot be captured; capture on an explicit "
        "stream");
  }
  RESIDENT_CUDA_TRY(cudaStreamBeginCapture(s.get(), mode));
  try {
    record(s);
  } catch (...) {
    cudaGraph_t partial = nullptr;
    // Ending the capture is what takes the stream out of capture mode; the partial graph (if
    // CUDA still returns one) is discarded.
    if (cudaStreamEndCapture(s.get(), &partial) == cudaSuccess && partial != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaGraphDestroy(partial));
    }
    (void)cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  RESIDENT_CUDA_TRY(cudaStreamEndCapture(s.get(), &g));
  return graph::adopt(g);
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

bool graph_kind_allows(graph_kind kind, cudaGraphNodeType type) noexcept {
  switch (kind) {
    case graph_kind::host_launched:
      return true;
    case graph_kind::conditional_body:
      return type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeMemcpy ||
             type == cudaGraphNodeTypeMemset || type == cudaGraphNodeTypeEmpty ||
             type == cudaGraphNodeTypeGraph || type == cudaGraphNodeTypeConditional;
    case graph_kind::device_launched:
      return type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeMemcpy ||
             type == cudaGraphNodeTypeMemset || type == cudaGraphNodeTypeGraph;
  }
  return false;
}

const char* allowed_node_types_text(graph_kind kind) noexcept {
  switch (kind) {
    case graph_kind::host_launched:
      return "a graph the host launches may hold any node type";
    case graph_kind::conditional_body:
      return "a conditional node's body may hold only kernel, memcpy, memset, empty, child-graph "
             "and conditional nodes";
    case graph_kind::device_launched:
      return "a device-launchable graph may hold only kernel, memcpy, memset and child-graph nodes";
  }
  return "unknown graph kind";
}

graph_exec::graph_exec(cudaGraph_t g, unsigned long long flags) {
  RESIDENT_CUDA_TRY(cudaGraphInstantiate(&_exec, g, flags));
  detail::note_created(detail::cuda_object::graph_exec);
}

graph_exec::graph_exec(graph_exec&& other) noexcept : _exec(std::exchange(other._exec, nullptr)) {}

graph_exec& graph_exec::operator=(graph_exec&& other) noexcept {
  if (this != &other) {
    if (_exec != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaGraphExecDestroy(_exec));
      detail::note_destroyed(detail::cuda_object::graph_exec);
    }
    _exec = std::exchange(other._exec, nullptr);
  }
  return *this;
}

graph_exec::~graph_exec() {
  if (_exec != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaGraphExecDestroy(_exec));
    detail::note_destroyed(detail::cuda_object::graph_exec);
  }
}

void graph_exec::upload(stream_view s) const { RESIDENT_CUDA_TRY(cudaGraphUpload(_exec, s.get())); }

void graph_exec::launch(stream_view s) const { RESIDENT_CUDA_TRY(cudaGraphLaunch(_exec, s.get())); }

const char* graph_update_result::reason() const noexcept {
  switch (result) {
    case cudaGraphExecUpdateSuccess:
      return "success";
    case cudaGraphExecUpdateError:
      return "invalid value";
    case cudaGraphExecUpdateErrorTopologyChanged:
      return "topology changed";
    case cudaGraphExecUpdateErrorNodeTypeChanged:
      return "node type changed";
    case cudaGraphExecUpdateErrorFunctionChanged:
      return "kernel function changed";
    case cudaGraphExecUpdateErrorParametersChanged:
      return "parameters changed in an unsupported way";
    case cudaGraphExecUpdateErrorNotSupported:
      return "not supported for this node";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
      return "unsupported kernel function change";
    case cudaGraphExecUpdateErrorAttributesChanged:
      return "node attributes changed";
    default:
      return "unknown update result";
  }
}

graph_update_result graph_exec::try_update(cudaGraph_t g) {
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = cudaGraphExecUpdate(_exec, g, &info);
  graph_update_result out;
  out.result = info.result;
  out.error_node = info.errorNode;
  if (status == cudaSuccess) {
    out.updated = true;
    return out;
  }
  if (status == cudaErrorGraphExecUpdateFailure) {
    (void)cudaGetLastError();  // a refused update is not sticky; keep it out of later checks
    return out;
  }
  detail::throw_cuda_error(status, "cudaGraphExecUpdate(exec, graph, &info)", __FILE__, __LINE__);
}

graph_update_result graph_exec::update_or_reinstantiate(cudaGraph_t g, unsigned long long flags) {
  graph_update_result r = try_update(g);
  if (!r.updated) *this = graph_exec(g, flags);
  return r;
}

void graph_exec::set_kernel_node_params(cudaGraphNode_t node, const cudaKernelNodeParams& params) {
  RESIDENT_CUDA_TRY(cudaGraphExecKernelNodeSetParams(_exec, node, &params));
}

void graph_exec::set_memcpy_node_params_1d(cudaGraphNode_t node, void* dst, const void* src,
                                           std::size_t bytes, cudaMemcpyKind kind) {
  RESIDENT_CUDA_TRY(cudaGraphExecMemcpyNodeSetParams1D(_exec, node, dst, src, bytes, kind));
}

}  // namespace resident
