#include "resident/sched/gated_graph.hpp"

#include <cuda/atomic>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"
#include "resident/sched/stamp_ring.cuh"

namespace resident::sched {

namespace {

/// One thread: through at once while the word is down; while it is up, wait (sleeping between
/// reads) until it falls or `timeout_ns` passes. Counts into `stats` (gate_stats's words).
__global__ void gate_kernel(const std::uint32_t* word, unsigned long long* stats,
                            std::uint64_t timeout_ns, stamp_ring_view holds) {
  cuda::atomic_ref<const std::uint32_t, cuda::thread_scope_system> w(*word);
  atomicAdd(stats + 0, 1ULL);  // passes
  if (w.load(cuda::memory_order_acquire) == 0U) return;
  const std::uint64_t start = device::globaltimer_ns();
  // The start is public while the gate still waits: whoever raised the word can see that a gate
  // holds (and since when) and lower it, instead of learning it only when the wait ends.
  atomicMin(stats + 5, static_cast<unsigned long long>(start));  // first_wait_ns
  if (holds.head != nullptr) push_stamp(holds, start);
  __threadfence_system();
  std::uint64_t now = start;
  bool timed_out = false;
  while (w.load(cuda::memory_order_acquire) != 0U) {
    now = device::globaltimer_ns();
    if (now - start >= timeout_ns) {
      timed_out = true;
      break;
    }
    __nanosleep(256);
  }
  const auto waited = static_cast<unsigned long long>(now - start);
  atomicAdd(stats + 1, 1ULL);  // waits
  atomicAdd(stats + 2, waited);
  atomicMax(stats + 3, waited);
  if (timed_out) atomicAdd(stats + 4, 1ULL);
}

__global__ void raise_kernel(std::uint32_t* word, std::uint64_t* raised_ns) {
  *raised_ns = device::globaltimer_ns();
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system>(*word).store(
      1U, cuda::memory_order_release);
}

constexpr std::size_t stat_words = sizeof(gate_stats) / sizeof(std::uint64_t);
static_assert(stat_words == 6);
constexpr std::size_t first_wait_word = 5;

/// The top-level nodes in a topological order (Kahn's, ties in the graph's own node order).
std::vector<cudaGraphNode_t> topological(cudaGraph_t g) {
  const std::vector<cudaGraphNode_t> nodes = graph_nodes(g);
  std::size_t edges = 0;
  RESIDENT_CUDA_TRY(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
  std::vector<cudaGraphNode_t> from(edges), to(edges);
  if (edges > 0) {
    RESIDENT_CUDA_TRY(cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &edges));
  }
  std::map<cudaGraphNode_t, std::size_t> indegree;
  std::map<cudaGraphNode_t, std::vector<cudaGraphNode_t>> out;
  for (const cudaGraphNode_t n : nodes) indegree[n] = 0;
  for (std::size_t i = 0; i < edges; ++i) {
    ++indegree[to[i]];
    out[from[i]].push_back(to[i]);
  }
  // `order` is also the queue: nodes are appended once ready and taken from the front.
  std::vector<cudaGraphNode_t> order;
  for (const cudaGraphNode_t n : nodes) {
    if (indegree[n] == 0) order.push_back(n);
  }
  for (std::size_t next = 0; next < order.size(); ++next) {
    for (const cudaGraphNode_t m : out[order[next]]) {
      if (--indegree[m] == 0) order.push_back(m);
    }
  }
  return order;
}

/// The in-edges of `node`, and whether any carries edge data (a programmatic edge).
struct in_edges {
  std::vector<cudaGraphNode_t> from;
  bool plain{true};
};

in_edges edges_into(cudaGraphNode_t node) {
  std::size_t n = 0;
  RESIDENT_CUDA_TRY(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n));
  in_edges e;
  e.from.resize(n);
  std::vector<cudaGraphEdgeData> data(n);
  if (n > 0) {
    RESIDENT_CUDA_TRY(cudaGraphNodeGetDependencies(node, e.from.data(), data.data(), &n));
  }
  const cudaGraphEdgeData plain{};
  for (const cudaGraphEdgeData& d : data) {
    if (std::memcmp(&d, &plain, sizeof d) != 0) e.plain = false;
  }
  return e;
}

}  // namespace

gated_graph::gated_graph(cudaGraph_t source, const std::uint32_t* preempt_word,
                         gate_options options)
    : _stats(stat_words * sizeof(std::uint64_t)),
      _holds(options.hold_stamps > 0 ? std::optional<stamp_ring>(options.hold_stamps)
                                     : std::nullopt),
      _graph(build(source, preempt_word, options)),
      _exec(_graph.get()) {}

graph gated_graph::build(cudaGraph_t source, const std::uint32_t* word,
                         const gate_options& options) {
  if (source == nullptr) throw std::invalid_argument("gated_graph: the source graph is null");
  if (word == nullptr) throw std::invalid_argument("gated_graph: the preempt word is null");
  if (options.every < 1) {
    throw std::invalid_argument("gated_graph: every must be >= 1, got " +
                                std::to_string(options.every));
  }
  if (options.timeout.count() <= 0) {
    throw std::invalid_argument("gated_graph: the timeout must be > 0");
  }
  RESIDENT_CUDA_TRY(cudaMemset(_stats.data(), 0, _stats.size()));
  reset_first_wait();
  cudaGraph_t copy = nullptr;
  RESIDENT_CUDA_TRY(cudaGraphClone(&copy, source));
  graph g = graph::adopt(copy);
  auto* stats = _stats.data_as<unsigned long long>();
  auto timeout_ns = static_cast<std::uint64_t>(options.timeout.count());
  stamp_ring_view holds = _holds ? _holds->view() : stamp_ring_view{};
  void* args[] = {&word, &stats, &timeout_ns, &holds};
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&gate_kernel);
  params.gridDim = dim3(1);
  params.blockDim = dim3(1);
  params.kernelParams = args;
  for (const cudaGraphNode_t node : topological(copy)) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    if (_kernels++ % options.every != 0) continue;
    const in_edges in = edges_into(node);
    if (!in.plain) {
      ++_ungated;
      continue;
    }
    // The gate takes over the kernel's in-edges; the kernel then waits for the gate alone.
    cudaGraphNode_t gate = nullptr;
    RESIDENT_CUDA_TRY(cudaGraphAddKernelNode(&gate, copy, in.from.data(), in.from.size(), &params));
    if (!in.from.empty()) {
      const std::vector<cudaGraphNode_t> to(in.from.size(), node);
      RESIDENT_CUDA_TRY(
          cudaGraphRemoveDependencies(copy, in.from.data(), to.data(), nullptr, in.from.size()));
    }
    RESIDENT_CUDA_TRY(cudaGraphAddDependencies(copy, &gate, &node, nullptr, 1));
    ++_gates;
  }
  return g;
}

gated_graph::~gated_graph() {
  // An error here is the context's (a sticky fault): nothing runs any more, nothing to wait for.
  (void)cudaEventSynchronize(_last.get());
}

void gated_graph::launch(stream_view s) const {
  _exec.launch(s);
  _last.record(s);
}

void gated_graph::reset_first_wait() const {
  const std::uint64_t none = ~std::uint64_t{0};
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_stats.data_as<std::uint64_t>() + first_wait_word, &none,
                                    sizeof none, cudaMemcpyHostToDevice, _reader.get()));
  RESIDENT_CUDA_TRY(cudaStreamSynchronize(_reader.get()));
}

void raise_on_device(std::uint32_t* word, std::uint64_t* raised_ns, stream_view s) {
  if (word == nullptr || raised_ns == nullptr) {
    throw std::invalid_argument("raise_on_device: the word and the stamp must not be null");
  }
  raise_kernel<<<1, 1, 0, s.get()>>>(word, raised_ns);
  RESIDENT_CUDA_CHECK_LAUNCH("raise_on_device");
}

std::vector<std::uint64_t> gated_graph::holds() const {
  return _holds ? _holds->read() : std::vector<std::uint64_t>{};
}

std::uint64_t gated_graph::holds_lost() const { return _holds ? _holds->lost() : 0U; }

gate_stats gated_graph::stats() const {
  gate_stats out;
  RESIDENT_CUDA_TRY(
      cudaMemcpyAsync(&out, _stats.data(), sizeof out, cudaMemcpyDeviceToHost, _reader.get()));
  RESIDENT_CUDA_TRY(cudaStreamSynchronize(_reader.get()));
  return out;
}

}  // namespace resident::sched
