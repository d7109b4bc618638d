// What compute-sanitizer's synccheck and racecheck report for correct block barriers, by where
// the kernel runs. One case per process:   resident_sanitizer_probe KERNEL BARRIER PLACE
//   KERNEL   post: thread 0 writes a shared word, barrier, every thread reads it
//            even: every thread writes its own shared slot, barrier, reads its neighbour's
//                  (no branch depends on the thread)
//            busy: `even` 100,000 times in one launch (a long kernel with heavy shared-memory
//                  traffic, as a resident loop's handler makes)
//   BARRIER  sync: __syncthreads() (bar.sync, aligned)   bar: barrier.sync 0 (not aligned)
//   PLACE    stream: three launches on a stream    graph: a captured graph, three replays
//            if: the body of a conditional if node, three replays
//            while: the body of a conditional while node, five iterations
//            spin: on a stream after a kernel that spins 0.2 s on the device clock
//            mapped: on a stream after a kernel that polls a host-mapped word until the host
//                    sets it (as a resident loop polls its mailbox), then acknowledges in another
// Each kernel is correct in every place; the program checks its output and exits 0 when the
// values are right. Run it under `compute-sanitizer --tool synccheck` (or racecheck) to see what
// the tool reports (bench/probes/run_sanitizer_probe.sh runs every case).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "probe_check.hpp"

namespace {

constexpr int threads = 64;

template <bool Aligned>
__device__ __forceinline__ void block_barrier() {
  if constexpr (Aligned) {
    __syncthreads();
  } else {
    __barrier_sync(0);
  }
}

template <bool Aligned>
__global__ void post_kernel(int* out) {
  __shared__ int word;
  if (threadIdx.x == 0) word = out[threads] + 1;  // out[threads] counts the launches
  block_barrier<Aligned>();
  const int seen = word;
  block_barrier<Aligned>();
  out[threadIdx.x] = seen;
  if (threadIdx.x == 0) out[threads] = seen;
}

template <bool Aligned>
__global__ void even_kernel(int* out) {
  __shared__ int slot[threads];
  slot[threadIdx.x] = static_cast<int>(threadIdx.x) + out[threads];
  block_barrier<Aligned>();
  out[threadIdx.x] = slot[(threadIdx.x + 1) % threads];
}

template <bool Aligned>
__global__ void busy_kernel(int* out) {
  __shared__ int slot[threads];
  int seen = 0;
  for (int round = 0; round < 100'000; ++round) {
    slot[threadIdx.x] = static_cast<int>(threadIdx.x) + out[threads];
    block_barrier<Aligned>();
    seen = slot[(threadIdx.x + 1) % threads];
    block_barrier<Aligned>();
  }
  out[threadIdx.x] = seen;
}

// The while body's last kernel: counts the iterations down, ends the loop at zero.
__global__ void count_down(cudaGraphConditionalHandle handle, int* left) {
  const int n = --*left;
  cudaGraphSetConditional(handle, n > 0 ? 1U : 0U);
}

// Spins on the device clock for `cycles` (a long-running kernel that touches no memory).
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// Polls a host-mapped word until the host writes 1, then writes 1 to a second one.
__global__ void mapped_kernel(const volatile int* go, volatile int* ack) {
  while (*go == 0) {
  }
  *ack = 1;
  __threadfence_system();
}

using kernel_fn = void (*)(int*);

kernel_fn pick_kernel(const std::string& kernel, const std::string& barrier) {
  const bool aligned = barrier == "sync";
  if (kernel == "post") return aligned ? post_kernel<true> : post_kernel<false>;
  if (kernel == "even") return aligned ? even_kernel<true> : even_kernel<false>;
  if (kernel == "busy") return aligned ? busy_kernel<true> : busy_kernel<false>;
  return nullptr;
}

/// A graph whose root is one conditional node of `type`; the body is captured from `body`.
template <class Body>
cudaGraphExec_t conditional_graph(cudaGraphConditionalNodeType type, unsigned initial, Body body,
                                  cudaGraph_t* graph) {
  CHECK(cudaGraphCreate(graph, 0));
  cudaGraphConditionalHandle handle{};
  CHECK(cudaGraphConditionalHandleCreate(&handle, *graph, initial, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = 1;
  cudaGraphNode_t node{};
  CHECK(cudaGraphAddNode(&node, *graph, nullptr, nullptr, 0, &params));
  cudaStream_t capture{};
  CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  CHECK(cudaStreamBeginCaptureToGraph(capture, params.conditional.phGraph_out[0], nullptr, nullptr,
                                      0, cudaStreamCaptureModeThreadLocal));
  body(capture, handle);
  cudaGraph_t captured{};
  CHECK(cudaStreamEndCapture(capture, &captured));
  CHECK(cudaStreamDestroy(capture));
  cudaGraphExec_t exec{};
  CHECK(cudaGraphInstantiate(&exec, *graph, 0));
  return exec;
}

/// The `mapped` place: a kernel polls a host-mapped word the host sets 20 ms later; the host
/// waits for its acknowledgement, then `launch` runs three times behind it.
template <class Launch>
int run_after_mapped_poll(Launch launch, cudaStream_t s) {
  int* words = nullptr;
  CHECK(cudaHostAlloc(&words, 2 * sizeof(int), cudaHostAllocMapped));
  words[0] = 0;
  words[1] = 0;
  int* device_words = nullptr;
  CHECK(cudaHostGetDevicePointer(&device_words, words, 0));
  mapped_kernel<<<1, 1, 0, s>>>(device_words, device_words + 1);
  CHECK(cudaGetLastError());
  for (int i = 0; i < 3; ++i) launch(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  reinterpret_cast<volatile int*>(words)[0] = 1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (reinterpret_cast<volatile int*>(words)[1] == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      std::fprintf(stderr, "mapped: no acknowledgement within 10 s\n");
      std::exit(1);
    }
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(words));
  return 3;
}

/// Runs `kernel` in `place`; returns how many launches of it ran.
int run_in(const std::string& place, kernel_fn kernel, int* out, cudaStream_t s) {
  const auto launch = [&](cudaStream_t on) {
    kernel<<<1, threads, 0, on>>>(out);
    CHECK(cudaGetLastError());
  };
  cudaGraph_t graph{};
  cudaGraphExec_t exec{};
  int launches = 0;
  if (place == "stream") {
    for (int i = 0; i < 3; ++i) launch(s);
    launches = 3;
  } else if (place == "graph") {
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    launch(s);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
    launches = 3;
  } else if (place == "if") {
    exec = conditional_graph(
        cudaGraphCondTypeIf, 1U, [&](cudaStream_t c, cudaGraphConditionalHandle) { launch(c); },
        &graph);
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
    launches = 3;
  } else if (place == "while") {
    int* left = nullptr;
    CHECK(cudaMalloc(&left, sizeof(int)));
    const int five = 5;
    CHECK(cudaMemcpy(left, &five, sizeof five, cudaMemcpyHostToDevice));
    exec = conditional_graph(
        cudaGraphCondTypeWhile, 1U,
        [&](cudaStream_t c, cudaGraphConditionalHandle h) {
          launch(c);
          count_down<<<1, 1, 0, c>>>(h, left);
          CHECK(cudaGetLastError());
        },
        &graph);
    CHECK(cudaGraphLaunch(exec, s));
    launches = 5;
  } else if (place == "spin") {
    spin_kernel<<<1, 1, 0, s>>>(400'000'000LL);
    CHECK(cudaGetLastError());
    for (int i = 0; i < 3; ++i) launch(s);
    launches = 3;
  } else if (place == "mapped") {
    launches = run_after_mapped_poll(launch, s);
  } else {
    return -1;
  }
  CHECK(cudaStreamSynchronize(s));
  if (exec != nullptr) CHECK(cudaGraphExecDestroy(exec));
  if (graph != nullptr) CHECK(cudaGraphDestroy(graph));
  return launches;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s post|even|busy sync|bar stream|graph|if|while|spin|mapped\n",
                 argv[0]);
    return 2;
  }
  const std::string kernel_name = argv[1], barrier = argv[2], place = argv[3];
  const kernel_fn kernel = pick_kernel(kernel_name, barrier);
  if (kernel == nullptr || (barrier != "sync" && barrier != "bar")) {
    std::fprintf(stderr, "unknown kernel or barrier: %s %s\n", argv[1], argv[2]);
    return 2;
  }
  probe_check::require_gpu("resident_sanitizer_probe");
  int* out = nullptr;
  CHECK(cudaMalloc(&out, (threads + 1) * sizeof(int)));
  CHECK(cudaMemset(out, 0, (threads + 1) * sizeof(int)));
  cudaStream_t s{};
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int launches = run_in(place, kernel, out, s);
  if (launches < 0) {
    std::fprintf(stderr, "unknown place: %s\n", place.c_str());
    return 2;
  }
  std::vector<int> got(threads + 1);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  // post: every thread saw the launch count; even and busy: out[threads] stays 0, so i + 1
  // (mod threads).
  int wrong = 0;
  for (int i = 0; i < threads; ++i) {
    const int want = kernel_name == "post" ? launches : (i + 1) % threads;
    wrong += got[static_cast<std::size_t>(i)] != want ? 1 : 0;
  }
  std::printf("%s %s %s: %d launches, %s\n", kernel_name.c_str(), barrier.c_str(), place.c_str(),
              launches, wrong == 0 ? "outputs right" : "OUTPUTS WRONG");
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(out));
  return wrong == 0 ? 0 : 1;
}
