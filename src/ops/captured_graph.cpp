#include "resident/ops/captured_graph.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/stream.hpp"

namespace resident::ops {

namespace {

std::string who(const std::string& op) { return "operator '" + op + "' (captured_graph): "; }

std::string address(const void* p) {
  std::ostringstream out;
  out << p;
  return out.str();
}

// Runs `step`, turning a failed CUDA call into an execution_error that names the operator.
template <class Step>
void naming_operator(const std::string& op, const char* what, Step&& step) {
  try {
    step();
  } catch (const cuda_error& e) {
    throw execution_error(who(op) + what + ": " + e.what());
  }
}

// Every node of `g`, child graphs walked: the distinct types (first seen first) and the count.
void collect_nodes(cudaGraph_t g, std::vector<cudaGraphNodeType>& types, std::size_t& count) {
  for (cudaGraphNode_t n : graph_nodes(g)) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(n, &type));
    ++count;
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      RESIDENT_CUDA_TRY(cudaGraphChildGraphNodeGetGraph(n, &child));
      collect_nodes(child, types, count);
    }
  }
}

// Node types no mode can run: a child-graph node cannot hold them and cudaGraphClone cannot copy
// them; allocation and free nodes would also allocate while the loop runs.
bool never_runs(cudaGraphNodeType type) noexcept {
  return type == cudaGraphNodeTypeMemAlloc || type == cudaGraphNodeTypeMemFree ||
         type == cudaGraphNodeTypeConditional;
}

// Two inputs that share bytes would have two producers writing them.
void check_inputs_apart(const std::string& op, const std::vector<graph_port>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const auto a = reinterpret_cast<std::uintptr_t>(inputs[i].memory);
      const auto b = reinterpret_cast<std::uintptr_t>(inputs[j].memory);
      if (a < b + inputs[j].bytes && b < a + inputs[i].bytes) {
        throw composition_error(who(op) + "inputs '" + inputs[j].name + "' and '" + inputs[i].name +
                                "' overlap in memory, so their producers would write the same "
                                "bytes; give each input its own buffer");
      }
    }
  }
}

}  // namespace

captured_graph::captured_graph(graph g, graph_ports ports)
    : _graph(std::move(g)), _ports(std::move(ports)) {}

captured_graph::captured_graph(cudaGraph_t g, graph_ports ports)
    : _graph(graph::adopt(nullptr)), _borrowed(g), _ports(std::move(ports)) {}

captured_graph::~captured_graph() = default;

void captured_graph::setup(OperatorSpec& spec) {
  const std::string& op = spec.operator_name();
  // The ports first: they need no GPU, so their mistakes are found (and tested) without one.
  for (const graph_port& p : _ports.inputs) {
    if (p.memory == nullptr) {
      throw composition_error(who(op) + "input '" + p.name +
                              "' has no memory; give the device pointer the graph reads");
    }
    spec.device_input(p.name, p.bytes, p.memory);
  }
  for (const graph_port& p : _ports.outputs) {
    if (p.memory == nullptr) {
      throw composition_error(who(op) + "output '" + p.name +
                              "' has no memory; give the device pointer the graph writes");
    }
    spec.device_output(p.name, p.bytes, p.memory);
  }
  check_inputs_apart(op, _ports.inputs);
  if (_graph.get() == nullptr && _borrowed == nullptr) {
    throw composition_error(who(op) +
                            "the graph is null; capture one first (e.g. "
                            "captured_graph::capture or cudaStreamEndCapture)");
  }
  check_nodes();
  if (_borrowed != nullptr) {
    naming_operator(op, "cloning its graph", [&] {
      cudaGraph_t clone = nullptr;
      RESIDENT_CUDA_TRY(cudaGraphClone(&clone, _borrowed));
      _graph = graph::adopt(clone);
    });
    _borrowed = nullptr;  // the caller's graph is never touched again
  }
}

void captured_graph::check_nodes() {
  const cudaGraph_t g = _borrowed != nullptr ? _borrowed : _graph.get();
  _node_types.clear();
  _node_count = 0;
  naming_operator(name(), "reading its graph's nodes",
                  [&] { collect_nodes(g, _node_types, _node_count); });
  if (_node_count == 0) {
    throw composition_error(who(name()) +
                            "the graph has no nodes; was the work enqueued on the stream being "
                            "captured?");
  }
  for (const cudaGraphNodeType type : _node_types) {
    if (!never_runs(type)) continue;
    throw composition_error(
        who(name()) + "the graph holds a " + node_type_name(type) +
        " node, which no mode can run: a child-graph node cannot hold memory allocation, memory "
        "free or conditional nodes, and nothing may allocate once a loop runs; allocate before "
        "capturing (cuBLAS: cublasSetWorkspace after cublasSetStream; cuDNN: pass a workspace)");
  }
}

void captured_graph::initialize() {
  check_bound_memory();
  naming_operator(name(), "instantiating its graph for eager launches", [&] {
    _exec = std::make_unique<graph_exec>(_graph.get());
    // Uploaded now, so the first eager launch does not pay for it.
    const stream upload;
    _exec->upload(upload);
    upload.synchronize();
  });
}

void captured_graph::check_bound_memory() const {
  for (const port_spec& p : spec().ports()) {
    const bool input = p.direction == port_direction::input;
    const std::string port = std::string(input ? "input '" : "output '") + p.name + "'";
    if (p.bound != p.external) {
      // Only an input can lose its memory: to a producer that supplies memory of its own.
      throw composition_error(who(name()) + port + " is the graph's memory at " +
                              address(p.external) + ", but its producer writes its own memory at " +
                              address(p.bound) +
                              "; put an operator that copies between them (ops::copy)");
    }
    cudaPointerAttributes attributes{};
    naming_operator(name(), "checking its port memory",
                    [&] { RESIDENT_CUDA_TRY(cudaPointerGetAttributes(&attributes, p.external)); });
    if (attributes.type == cudaMemoryTypeUnregistered) {
      throw composition_error(who(name()) + port + " memory at " + address(p.external) +
                              " is pageable host memory, which the GPU cannot reach; use device, "
                              "managed or pinned memory");
    }
  }
}

void captured_graph::compute(CaptureContext& ctx) {
  if (!ctx.capturing()) {
    if (_exec == nullptr) {
      throw composition_error(who(name()) + "compute() before initialize()");
    }
    _exec->launch(ctx.stream());
    return;
  }
  check_target(ctx.capture_target());
  add_child_node(ctx.stream());
}

void captured_graph::check_target(graph_kind target) const {
  for (const cudaGraphNodeType type : _node_types) {
    if (graph_kind_allows(target, type)) continue;
    const char* advice = graph_kind_allows(graph_kind::conditional_body, type)
                             ? "run this application in while mode instead"
                             : "run this application in eager mode instead";
    throw composition_error(who(name()) + "its graph holds a " + node_type_name(type) +
                            " node, and " + allowed_node_types_text(target) + "; " + advice);
  }
}

void captured_graph::add_child_node(cudaStream_t s) const {
  cudaStreamCaptureStatus status{};
  cudaGraph_t into = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;  // asked for, or CUDA refuses a lossy query
  size_t count = 0;
  RESIDENT_CUDA_TRY(cudaStreamGetCaptureInfo(s, &status, nullptr, &into, &deps, &edges, &count));
  if (status != cudaStreamCaptureStatusActive) {
    throw execution_error(who(name()) +
                          "compute() was told it is capturing, but its stream is not");
  }
  // Full edges from whatever the stream's work ended with: an edge of any other type (a
  // programmatic one) may join only kernel nodes, and a full edge orders at least as strictly.
  const std::vector<cudaGraphNode_t> after(deps, deps + count);
  cudaGraphNode_t node = nullptr;
  RESIDENT_CUDA_TRY(
      cudaGraphAddChildGraphNode(&node, into, after.data(), after.size(), _graph.get()));
  // The child node becomes what the next work captured on the stream depends on.
  RESIDENT_CUDA_TRY(
      cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1, cudaStreamSetCaptureDependencies));
}

graph captured_graph::capture(const std::function<void(cudaStream_t)>& record,
                              cudaStreamCaptureMode mode) {
  const stream side;
  return capture_graph(
      side, [&](stream_view s) { record(s.get()); }, mode);
}

}  // namespace resident::ops
