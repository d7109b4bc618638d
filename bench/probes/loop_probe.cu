// loop_probe: what one iteration of a GPU-resident loop costs for different graph shapes.
//
// Each shape is a loop of tiny single-thread kernels that stamp %globaltimer into a device
// array; the loop runs `iterations` times and the host prints the per-iteration time and the
// transitions between stages. It is a design probe (which structure should the while and tail
// modes use), not part of the library: bench overhead measures the modes themselves.
//
//   loop_probe [iterations [shape]]     (bench/probes/run_loop_probe.sh runs every shape)

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "probe_check.hpp"

namespace {

constexpr int kStages = 4;

struct probe {
  unsigned long long iter;        // incremented by the head kernel
  unsigned long long limit;       // iterations to run
  unsigned long long exit_every;  // nested shape: the inner WHILE exits every k-th iteration
  cudaGraphConditionalHandle while_h;
  cudaGraphConditionalHandle inner_h;
  cudaGraphConditionalHandle if_h;
  unsigned if_value;
  unsigned mapped_read;   // head reads a host-mapped word (one PCIe round trip)
  unsigned mapped_fence;  // mid does a system-scope release store to host-mapped memory
  volatile unsigned* host_word;
  unsigned* host_out;
  cudaGraphExec_t self_exec;   // tail shapes
  unsigned long long* stamps;  // [limit + 2][kStages]
  unsigned long long sink;
};

__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void head(probe* p) {
  const unsigned long long t = now();
  const unsigned long long i = ++p->iter;
  p->stamps[i * kStages + 0] = t;
  if (p->mapped_read) p->sink += *p->host_word;
  if (p->while_h != 0) cudaGraphSetConditional(p->while_h, i < p->limit ? 1U : 0U);
}

// head + mid fused: also sets the IF predicate.
__global__ void head_sets_if(probe* p) {
  const unsigned long long t = now();
  const unsigned long long i = ++p->iter;
  p->stamps[i * kStages + 0] = t;
  p->stamps[i * kStages + 1] = t;
  if (p->mapped_read) p->sink += *p->host_word;
  if (p->while_h != 0) cudaGraphSetConditional(p->while_h, i < p->limit ? 1U : 0U);
  cudaGraphSetConditional(p->if_h, p->if_value);
}

__global__ void mid(probe* p) {
  p->stamps[p->iter * kStages + 1] = now();
  if (p->if_h != 0) cudaGraphSetConditional(p->if_h, p->if_value);
  if (p->inner_h != 0) {
    const bool stay = (p->iter % p->exit_every) != 0 && p->iter < p->limit;
    cudaGraphSetConditional(p->inner_h, stay ? 1U : 0U);
  }
  if (p->mapped_fence) {
    __threadfence_system();
    *reinterpret_cast<volatile unsigned*>(p->host_out) = static_cast<unsigned>(p->iter);
  }
}

__global__ void body(probe* p) { p->stamps[p->iter * kStages + 2] = now(); }
// A handle's default is assigned when the whole graph is launched, not when a body is
// relaunched: the nested shape re-arms its inner WHILE here.
__global__ void tail(probe* p) {
  p->stamps[p->iter * kStages + 3] = now();
  if (p->inner_h != 0) cudaGraphSetConditional(p->inner_h, 1U);
}

// Programmatic-edge versions: trigger early, wait for the upstream kernel's memory.
__global__ void head_pdl(probe* p) {
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  const unsigned long long t = now();
  const unsigned long long i = ++p->iter;
  p->stamps[i * kStages + 0] = t;
  if (p->while_h != 0) cudaGraphSetConditional(p->while_h, i < p->limit ? 1U : 0U);
}
__global__ void mid_pdl(probe* p) {
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  p->stamps[p->iter * kStages + 1] = now();
  if (p->if_h != 0) cudaGraphSetConditional(p->if_h, p->if_value);
}

// Tail shapes: the last kernel relaunches the graph it belongs to.
__global__ void head_relaunch(probe* p) {
  const unsigned long long t = now();
  const unsigned long long i = ++p->iter;
  p->stamps[i * kStages + 0] = t;
  if (p->mapped_read) p->sink += *p->host_word;
  if (i < p->limit) cudaGraphLaunch(p->self_exec, cudaStreamGraphTailLaunch);
}
__global__ void mid_relaunch(probe* p) {
  p->stamps[p->iter * kStages + 1] = now();
  if (p->iter < p->limit) cudaGraphLaunch(p->self_exec, cudaStreamGraphTailLaunch);
}

// Persistent spin: the same head work in a loop inside one kernel (the floor).
__global__ void spin_loop(probe* p) {
  for (unsigned long long i = 1; i <= p->limit; ++i) {
    p->stamps[i * kStages + 0] = now();
    if (p->mapped_read) p->sink += *p->host_word;
  }
}

cudaGraphNode_t add_kernel(cudaGraph_t g, std::vector<cudaGraphNode_t> deps, void (*fn)(probe*),
                           probe** arg, bool programmatic_in = false) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeKernel;
  params.kernel.func = reinterpret_cast<void*>(fn);
  params.kernel.gridDim = dim3(1);
  params.kernel.blockDim = dim3(1);
  void* args[] = {arg};
  params.kernel.kernelParams = args;
  std::vector<cudaGraphEdgeData> edges(deps.size());
  for (auto& e : edges) {
    e = cudaGraphEdgeData{};
    if (programmatic_in) {
      e.from_port = cudaGraphKernelNodePortProgrammatic;
      e.type = cudaGraphDependencyTypeProgrammatic;
    }
  }
  cudaGraphNode_t node = nullptr;
  CHECK(cudaGraphAddNode(&node, g, deps.data(), programmatic_in ? edges.data() : nullptr,
                         deps.size(), &params));
  return node;
}

cudaGraph_t add_cond(cudaGraph_t g, std::vector<cudaGraphNode_t> deps, cudaGraphNode_t* out,
                     cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = h;
  params.conditional.type = type;
  params.conditional.size = 1;
  CHECK(cudaGraphAddNode(out, g, deps.data(), nullptr, deps.size(), &params));
  return params.conditional.phGraph_out[0];
}

// `loop_probe N NAME` runs only the shape NAME; `loop_probe N list` prints the names.
const char* g_only = nullptr;
bool g_list = false;
bool selected(const char* name) {
  if (g_list) {
    std::printf("%s\n", name);
    return false;
  }
  return g_only == nullptr || std::string(name) == g_only;
}

struct stats {
  double mean, p50, p99, max;
};

stats summarize(std::vector<double> v) {
  if (v.empty()) return {0, 0, 0, 0};
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  const auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(q * (v.size() - 1)))]; };
  return {sum / v.size(), at(0.5), at(0.99), v.back()};
}

struct harness {
  unsigned long long iterations;
  probe* dev = nullptr;
  unsigned long long* stamps = nullptr;
  unsigned* host_mem = nullptr;
  cudaStream_t stream{};

  explicit harness(unsigned long long n) : iterations(n) {
    CHECK(cudaMalloc(&dev, sizeof(probe)));
    CHECK(cudaMalloc(&stamps, (n + 2) * kStages * sizeof(unsigned long long)));
    CHECK(cudaHostAlloc(&host_mem, 64, cudaHostAllocMapped));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }

  probe fresh() const {
    probe p{};
    p.limit = iterations;
    p.exit_every = 1;
    p.stamps = stamps;
    unsigned* d = nullptr;
    CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), host_mem, 0));
    p.host_word = d;
    p.host_out = d + 16;
    return p;
  }

  void load(const probe& p) {
    CHECK(cudaMemcpy(dev, &p, sizeof p, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(stamps, 0, (iterations + 2) * kStages * sizeof(unsigned long long)));
  }

  // Runs what `go` launches, then prints iteration time and stage transitions.
  void report(const char* name, const char* what) {
    // A shape that never ends must not hang the probe: give it 5 s.
    for (int waited = 0; cudaStreamQuery(stream) == cudaErrorNotReady; ++waited) {
      if (waited > 5000) {
        std::printf("%-22s HUNG (still running after 5 s)   # %s\n", name, what);
        std::fflush(stdout);
        std::_Exit(2);
      }
      usleep(1000);
    }
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaGetLastError());
    std::vector<unsigned long long> s((iterations + 2) * kStages);
    CHECK(cudaMemcpy(s.data(), stamps, s.size() * sizeof(s[0]), cudaMemcpyDeviceToHost));
    probe back{};
    CHECK(cudaMemcpy(&back, dev, sizeof back, cudaMemcpyDeviceToHost));
    std::vector<double> it, d01, d12, d23, d30, d02;
    const auto st = [&](unsigned long long i, int k) { return s[i * kStages + k]; };
    for (unsigned long long i = 16; i + 1 <= iterations; ++i) {
      if (st(i, 0) == 0 || st(i + 1, 0) == 0) continue;
      it.push_back((st(i + 1, 0) - st(i, 0)) / 1e3);
      if (st(i, 1)) d01.push_back((st(i, 1) - st(i, 0)) / 1e3);
      if (st(i, 1) && st(i, 2)) d12.push_back((st(i, 2) - st(i, 1)) / 1e3);
      if (st(i, 2) && st(i, 3)) d23.push_back((st(i, 3) - st(i, 2)) / 1e3);
      if (st(i, 3)) d30.push_back((st(i + 1, 0) - st(i, 3)) / 1e3);
      if (st(i, 2) && !st(i, 1)) d02.push_back((st(i, 2) - st(i, 0)) / 1e3);
    }
    const stats a = summarize(it);
    std::printf("%-22s iter mean %6.2f p50 %6.2f p99 %6.2f max %7.2f us (n=%zu, ran %llu)", name,
                a.mean, a.p50, a.p99, a.max, it.size(), back.iter);
    const auto part = [](const char* label, const std::vector<double>& v) {
      if (!v.empty()) std::printf(" | %s %.2f", label, summarize(v).mean);
    };
    part("h->m", d01);
    part("m->b", d12);
    part("b->t", d23);
    part("t->h'", d30);
    part("h->b", d02);
    std::printf("   # %s\n", what);
  }
};

// Builds `shape` into a WHILE body (or a whole graph for tail shapes), runs it, reports.
void run_while(harness& h, const char* name, const char* what, probe p,
               const std::function<void(cudaGraph_t root, cudaGraph_t body, probe& p)>& shape) {
  if (!selected(name)) return;
  cudaGraph_t root = nullptr;
  CHECK(cudaGraphCreate(&root, 0));
  CHECK(cudaGraphConditionalHandleCreate(&p.while_h, root, 1, cudaGraphCondAssignDefault));
  cudaGraphNode_t wnode = nullptr;
  cudaGraph_t body = add_cond(root, {}, &wnode, p.while_h, cudaGraphCondTypeWhile);
  shape(root, body, p);
  h.load(p);
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, root, 0));
  CHECK(cudaGraphUpload(exec, h.stream));
  CHECK(cudaGraphLaunch(exec, h.stream));
  h.report(name, what);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(root));
}

void run_tail(harness& h, const char* name, const char* what, probe p, bool two_kernels) {
  if (!selected(name)) return;
  cudaGraph_t g = nullptr;
  CHECK(cudaGraphCreate(&g, 0));
  if (two_kernels) {
    cudaGraphNode_t a = add_kernel(g, {}, head, &h.dev);
    (void)add_kernel(g, {a}, mid_relaunch, &h.dev);
  } else {
    (void)add_kernel(g, {}, head_relaunch, &h.dev);
  }
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, g, cudaGraphInstantiateFlagDeviceLaunch));
  CHECK(cudaGraphUpload(exec, h.stream));
  p.self_exec = exec;
  h.load(p);
  CHECK(cudaGraphLaunch(exec, h.stream));
  h.report(name, what);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
}

// Spinning kernels and WHILE graphs of one to three kernels.
void run_plain_shapes(harness& h, probe** arg) {
  if (selected("spin")) {
    probe p = h.fresh();
    h.load(p);
    spin_loop<<<1, 1, 0, h.stream>>>(h.dev);
    h.report("spin", "persistent kernel, same work per pass");
  }
  if (selected("spin+pcie")) {
    probe p = h.fresh();
    p.mapped_read = 1;
    h.load(p);
    spin_loop<<<1, 1, 0, h.stream>>>(h.dev);
    h.report("spin+pcie", "persistent kernel, one host-mapped read per pass");
  }
  run_while(h, "W{h}", "WHILE, one kernel", h.fresh(),
            [&](cudaGraph_t, cudaGraph_t b, probe&) { add_kernel(b, {}, head, arg); });
  {
    probe p = h.fresh();
    p.mapped_read = 1;
    run_while(h, "W{h+pcie}", "WHILE, one kernel with a host-mapped read", p,
              [&](cudaGraph_t, cudaGraph_t b, probe&) { add_kernel(b, {}, head, arg); });
  }
  run_while(h, "W{h->m}", "WHILE, two kernels", h.fresh(), [&](cudaGraph_t, cudaGraph_t b, probe&) {
    auto a = add_kernel(b, {}, head, arg);
    add_kernel(b, {a}, mid, arg);
  });
  {
    probe p = h.fresh();
    p.mapped_fence = 1;
    run_while(h, "W{h->m+fence}", "WHILE, two kernels, mid fences + stores to host", p,
              [&](cudaGraph_t, cudaGraph_t b, probe&) {
                auto a = add_kernel(b, {}, head, arg);
                add_kernel(b, {a}, mid, arg);
              });
  }
  run_while(h, "W{h=>m} pdl", "WHILE, two kernels, programmatic edge", h.fresh(),
            [&](cudaGraph_t, cudaGraph_t b, probe&) {
              auto a = add_kernel(b, {}, head_pdl, arg);
              add_kernel(b, {a}, mid_pdl, arg, true);
            });
  run_while(h, "W{h->m->m}", "WHILE, three kernels", h.fresh(),
            [&](cudaGraph_t, cudaGraph_t b, probe&) {
              auto a = add_kernel(b, {}, head, arg);
              auto c = add_kernel(b, {a}, tail, arg);
              add_kernel(b, {c}, mid, arg);
            });
}

// WHILE graphs with an IF inside, and a WHILE nested in a WHILE.
void run_conditional_shapes(harness& h, probe** arg) {
  // WHILE { head [-> mid] -> IF { body -> tail } }, the IF taken (1) or not (0).
  const auto if_shape = [&](bool fused, unsigned handle_flags) {
    return [&, fused, handle_flags](cudaGraph_t, cudaGraph_t b, probe& pp) {
      CHECK(cudaGraphConditionalHandleCreate(&pp.if_h, b, 0, handle_flags));
      cudaGraphNode_t last = add_kernel(b, {}, fused ? head_sets_if : head, arg);
      if (!fused) last = add_kernel(b, {last}, mid, arg);
      cudaGraphNode_t ifn = nullptr;
      cudaGraph_t ib = add_cond(b, {last}, &ifn, pp.if_h, cudaGraphCondTypeIf);
      add_kernel(ib, {add_kernel(ib, {}, body, arg)}, tail, arg);
    };
  };
  struct if_variant {
    const char* name[2];
    const char* what[2];
    bool fused;
    unsigned handle_flags;
  };
  const if_variant if_variants[] = {
      {{"W{h->m->IF0{b->t}}", "W{h->m->IF1{b->t}}"},
       {"current while shape, idle", "current while shape, busy"},
       false,
       cudaGraphCondAssignDefault},
      {{"W{hm->IF0{b->t}}", "W{hm->IF1{b->t}}"},
       {"handler+controller fused, idle", "handler+controller fused, busy"},
       true,
       cudaGraphCondAssignDefault},
      // IF handle without a default: the predicate keeps what the controller set.
      {{"W{h->m->IF0} nodef", "W{h->m->IF1} nodef"},
       {"as current, IF handle without default assign",
        "as current, IF handle without default assign"},
       false,
       0},
  };
  for (const if_variant& iv : if_variants) {
    for (unsigned v : {0U, 1U}) {
      probe p = h.fresh();
      p.if_value = v;
      run_while(h, iv.name[v], iv.what[v], p, if_shape(iv.fused, iv.handle_flags));
    }
  }
  for (unsigned long long every : {1000000ULL, 4ULL, 1ULL}) {
    // Nested: outer WHILE { inner WHILE { h -> m } -> b -> t }; m ends the inner loop every
    // k-th iteration (k = 1: every iteration goes through b and t).
    probe p = h.fresh();
    p.exit_every = every;
    char name[64];
    std::snprintf(name, sizeof name, "W{W{h->m}->b->t} k=%llu", every);
    run_while(
        h, name, "idle loop inside, DAG after it", p, [&](cudaGraph_t, cudaGraph_t b, probe& pp) {
          CHECK(cudaGraphConditionalHandleCreate(&pp.inner_h, b, 1, cudaGraphCondAssignDefault));
          cudaGraphNode_t wn = nullptr;
          cudaGraph_t inner = add_cond(b, {}, &wn, pp.inner_h, cudaGraphCondTypeWhile);
          auto a = add_kernel(inner, {}, head, arg);
          add_kernel(inner, {a}, mid, arg);
          auto x = add_kernel(b, {wn}, body, arg);
          add_kernel(b, {x}, tail, arg);
        });
  }
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned long long n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000;
  if (argc > 2) {
    g_list = std::string(argv[2]) == "list";
    g_only = argv[2];
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  probe_check::require_gpu("resident_loop_probe");
  harness h(n);
  probe** arg = &h.dev;

  // Warm the clocks.
  if (!g_list) {
    probe p = h.fresh();
    h.load(p);
    spin_loop<<<1, 1, 0, h.stream>>>(h.dev);
    h.report("spin (warm-up)", "one persistent kernel");
  }
  for (int rep = 0; rep < (g_only != nullptr ? 1 : 2); ++rep) {
    if (g_only == nullptr) std::printf("--- round %d\n", rep + 1);
    run_plain_shapes(h, arg);
    run_conditional_shapes(h, arg);
    run_tail(h, "T{h} self", "tail launch, one kernel relaunches its graph", h.fresh(), false);
    run_tail(h, "T{h->m} self", "tail launch, two kernels", h.fresh(), true);
    {
      probe p = h.fresh();
      p.mapped_read = 1;
      run_tail(h, "T{h+pcie} self", "tail launch, one kernel with a host-mapped read", p, false);
    }
  }
  return 0;
}
