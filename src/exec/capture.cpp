#include "exec/capture.hpp"

#include "resident/partition/green_context.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "resident/app/error.hpp"
#include "resident/app/operator.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/graph.hpp"

namespace resident::detail {

namespace {

// Ends a capture that an exception interrupted, so the stream is usable again, and says whether
// the capture had been invalidated (CUDA then frees the graph it was capturing into).
bool abandon_capture(cudaStream_t s) noexcept {
  cudaStreamCaptureStatus status{};
  const bool invalidated = cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, nullptr, nullptr,
                                                    nullptr) != cudaSuccess ||
                           status == cudaStreamCaptureStatusInvalidated;
  cudaGraph_t same = nullptr;
  (void)cudaStreamEndCapture(s, &same);
  (void)cudaGetLastError();
  return invalidated;
}

// Carries whether the interrupted capture lost its graph along with the original error.
struct interrupted_capture {
  std::exception_ptr error;
  bool graph_lost;
};

bool is_composition_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const composition_error&) {
    return true;
  } catch (...) {
    return false;
  }
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

template <class Enqueue>
std::vector<cudaGraphNode_t> capture_into(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps,
                                          cudaStream_t s, Enqueue&& enqueue) {
  // Thread-local mode: CUDA calls made meanwhile by other threads (a supervisor, another loop)
  // neither break this capture nor get captured.
  RESIDENT_CUDA_TRY(cudaStreamBeginCaptureToGraph(s, g, deps.data(), nullptr, deps.size(),
                                                  cudaStreamCaptureModeThreadLocal));
  std::vector<cudaGraphNode_t> frontier;
  try {
    enqueue();
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* sinks = nullptr;
    size_t count = 0;
    RESIDENT_CUDA_TRY(
        cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &sinks, nullptr, &count));
    if (status != cudaStreamCaptureStatusActive) {
      // enqueue() returned normally, but something it did broke the capture (CUDA then frees
      // the graph it was capturing into): say so rather than report EndCapture's error.
      throw std::runtime_error(
          "the stream capture was invalidated: a call not allowed while capturing (e.g. a "
          "synchronizing call, cudaMalloc, or work on another stream joined to this one "
          "without an event) was made in compute()");
    }
    frontier.assign(sinks, sinks + count);
  } catch (...) {
    const bool lost = abandon_capture(s);
    throw interrupted_capture{std::current_exception(), lost};
  }
  cudaGraph_t same = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &same);
  if (ended != cudaSuccess) {
    (void)cudaGetLastError();
    const bool lost = ended == cudaErrorStreamCaptureInvalidated;
    throw interrupted_capture{
        std::make_exception_ptr(std::runtime_error(
            std::string("cudaStreamEndCapture failed: ") + cudaGetErrorName(ended) + " (" +
            cudaGetErrorString(ended) + ")")),
        lost};
  }
  return frontier;
}

}  // namespace

captured capture_operators(cudaGraph_t g, std::vector<cudaGraphNode_t> deps,
                           const std::vector<Operator*>& ops, cudaStream_t s, loop_state* loop,
                           std::string_view mode, graph_kind target) {
  captured result;
  result.frontier = std::move(deps);
  for (const Operator* op : ops) {
    const auto before = graph_nodes(g);
    try {
      result.frontier = capture_into(g, result.frontier, s, [&] {
        CaptureContext ctx(*op, s, loop, true, false, target);
        const_cast<Operator*>(op)->compute(ctx);
      });
    } catch (const interrupted_capture& c) {
      const std::string what = "operator '" + op->name() +
                               "' compute() failed while capturing for " + std::string(mode) +
                               " mode: " + message_of(c.error);
      // An operator that refuses this mode (e.g. ops::captured_graph holding a node the graph
      // cannot) says so as a composition_error, as the node check below would.
      if (!c.graph_lost && is_composition_error(c.error)) throw composition_error(what);
      throw capture_failure(what, c.graph_lost);
    }
    for (cudaGraphNode_t n : graph_nodes(g)) {
      if (std::find(before.begin(), before.end(), n) == before.end()) {
        result.owners.push_back({n, op});
      }
    }
  }
  return result;
}

std::vector<cudaGraphNode_t> capture_kernel(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps,
                                            cudaStream_t s, kernel_launcher launch,
                                            loop_state* loop) {
  std::vector<cudaGraphNode_t> nodes;
  try {
    nodes = capture_into(g, deps, s, [&] { launch(loop, s); });
  } catch (const interrupted_capture& c) {
    throw capture_failure("capturing a framework kernel failed: " + message_of(c.error),
                          c.graph_lost);
  }
  // Programmatic in-edges where every predecessor is a kernel (they may join only kernels):
  // the framework kernel is scheduled while its predecessors run and waits on the device
  // (device::wait_for_previous_kernels), which takes most of a node launch off each iteration (0.45 µs of
  // 1.18 µs measured by bench/probes/loop_probe on the H200).
  if (nodes.size() != 1 || deps.empty()) return nodes;
  for (cudaGraphNode_t d : deps) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(d, &type));
    if (type != cudaGraphNodeTypeKernel) return nodes;
  }
  cudaGraphEdgeData programmatic{};
  programmatic.from_port = cudaGraphKernelNodePortProgrammatic;
  programmatic.type = cudaGraphDependencyTypeProgrammatic;
  for (cudaGraphNode_t d : deps) {
    RESIDENT_CUDA_TRY(cudaGraphRemoveDependencies(g, &d, &nodes[0], nullptr, 1));
    RESIDENT_CUDA_TRY(cudaGraphAddDependencies(g, &d, &nodes[0], &programmatic, 1));
  }
  return nodes;
}

cudaGraph_t add_conditional(cudaGraph_t g, const std::vector<cudaGraphNode_t>& deps,
                            cudaGraphConditionalHandle handle, cudaGraphConditionalNodeType type,
                            const partition::green_context* partition) {
  if (partition != nullptr)
    return partition::add_conditional_node(g, deps, handle, type, *partition);
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
  RESIDENT_CUDA_TRY(cudaGraphAddNode(&node, g, deps.data(), nullptr, deps.size(), &params));
  return params.conditional.phGraph_out[0];
}

void compute_eager(const std::vector<Operator*>& ops, cudaStream_t s, loop_state* loop) {
  for (Operator* op : ops) {
    try {
      CaptureContext ctx(*op, s, loop, false);
      op->compute(ctx);
    } catch (const std::exception& e) {
      throw execution_error("operator '" + op->name() +
                            "' compute() failed in eager mode: " + e.what());
    }
  }
}

const node_rules& device_launch_rules() {
  static const node_rules rules{graph_kind::device_launched,
                                "run this application in while mode instead"};
  return rules;
}

const node_rules& conditional_body_rules() {
  static const node_rules rules{graph_kind::conditional_body,
                                "run this application in eager mode instead"};
  return rules;
}

namespace {

void check_nodes(cudaGraph_t g, cudaGraphNode_t top, const std::vector<node_owner>& owners,
                 std::string_view mode, std::string_view where, const node_rules& rules) {
  for (cudaGraphNode_t n : graph_nodes(g)) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(n, &type));
    const cudaGraphNode_t owner_key = top != nullptr ? top : n;
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      RESIDENT_CUDA_TRY(cudaGraphChildGraphNodeGetGraph(n, &child));
      check_nodes(child, owner_key, owners, mode, where, rules);
    }
    if (graph_kind_allows(rules.kind, type)) continue;
    const auto it = std::find_if(owners.begin(), owners.end(),
                                 [&](const node_owner& o) { return o.node == owner_key; });
    const std::string who =
        it != owners.end() ? "operator '" + it->op->name() + "'" : std::string("the framework");
    throw composition_error(std::string(mode) + " mode cannot hold " + who +
                            ": its captured work in " + std::string(where) + " contains a " +
                            node_type_name(type) + " node, and " +
                            allowed_node_types_text(rules.kind) + "; " + std::string(rules.advice));
  }
}

}  // namespace

void require_node_types(cudaGraph_t g, const std::vector<node_owner>& owners, std::string_view mode,
                        std::string_view where, const node_rules& rules) {
  check_nodes(g, nullptr, owners, mode, where, rules);
}

}  // namespace resident::detail
