// Does work on a new stream wait behind a kernel that never ends on another stream? A resident
// loop is such a kernel (or graph launch). Streams share the device's hardware work queues
// (CUDA_DEVICE_MAX_CONNECTIONS of them, 8 by default), so a stream that lands on the loop's queue
// may find its commands behind the loop's; a loop's set-up beside running loops (one per device
// link end, PyTorch's streams, the display and the bridge) would then wait for ever.
//
//   resident_stream_alias_probe [STREAMS] [behind] [lazy]
//
// Launches a spinning kernel on stream A (released through a host-mapped word), with `behind`:
// an event recorded on A after it (work queued behind a running kernel, as a supervisor's
// end-of-loop event is); then makes STREAMS new streams (default 40) one by one, launches a
// one-thread kernel on each and waits up to 200 ms for it. Prints which streams waited, releases
// the spinner and checks that every stream then finished. Run it with CUDA_DEVICE_MAX_CONNECTIONS
// unset, 8 and 32. Kernels load eagerly, as in resident's programs (a kernel loaded lazily while
// another spins may wait for it: that is a different question); `lazy` keeps the driver's default
// of loading each kernel at its first launch.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "probe_check.hpp"

namespace {

__global__ void spin_kernel(const volatile int* stop, volatile int* started) {
  *started = 1;
  __threadfence_system();  // the host sees the word now, not when the kernel ends (never)
  while (*stop == 0) __nanosleep(1000);
}

__global__ void touch_kernel(int* out, int value) { *out = value; }

/// True when the stream's work finished within `limit`.
bool finishes_within(cudaStream_t s, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) CHECK(e);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

bool has_word(int argc, char** argv, const char* word) {
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == word) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const bool lazy = has_word(argc, argv, "lazy");
  // Before the first CUDA call; an explicit CUDA_MODULE_LOADING in the environment wins.
  if (!lazy) ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  probe_check::require_gpu("resident_stream_alias_probe");
  // Unbuffered: when a step never returns (the question asked here), the lines before it show.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const int streams = argc > 1 ? std::atoi(argv[1]) : 40;
  const bool behind = has_word(argc, argv, "behind");
  if (streams < 1 || streams > 1024) {
    std::fprintf(stderr, "resident_stream_alias_probe: STREAMS must be 1..1024\n");
    return 1;
  }
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  int* words = nullptr;  // [0] stop, [1] started (host-mapped)
  CHECK(cudaHostAlloc(&words, 2 * sizeof(int), cudaHostAllocMapped));
  words[0] = words[1] = 0;
  int* device_words = nullptr;
  CHECK(cudaHostGetDevicePointer(&device_words, words, 0));
  int* out = nullptr;
  CHECK(cudaMalloc(&out, static_cast<std::size_t>(streams) * sizeof(int)));

  cudaStream_t a = nullptr;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  spin_kernel<<<1, 1, 0, a>>>(device_words, device_words + 1);
  CHECK(cudaGetLastError());
  cudaEvent_t after = nullptr;
  CHECK(cudaEventCreateWithFlags(&after, cudaEventDisableTiming));
  if (behind) CHECK(cudaEventRecord(after, a));
  const auto started_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (reinterpret_cast<volatile int*>(words)[1] == 0) {
    if (std::chrono::steady_clock::now() > started_by) {
      std::fprintf(stderr,
                   "resident_stream_alias_probe: the spinning kernel did not start "
                   "within 5 s\n");
      return 1;
    }
    std::this_thread::yield();
  }

  std::printf("the spinner runs; making %d streams\n", streams);

  std::vector<cudaStream_t> made(static_cast<std::size_t>(streams));
  std::vector<int> waited;
  for (int i = 0; i < streams; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaStreamCreateWithFlags(&made[i], cudaStreamNonBlocking));
    const auto create_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (create_ms > 50.0) std::printf("  stream %d: its creation took %.1f ms\n", i, create_ms);
    touch_kernel<<<1, 1, 0, made[i]>>>(out + i, i + 1);
    CHECK(cudaGetLastError());
    if (!finishes_within(made[i], std::chrono::milliseconds(200))) waited.push_back(i);
  }
  const char* loading = std::getenv("CUDA_MODULE_LOADING");
  std::printf(
      "CUDA_DEVICE_MAX_CONNECTIONS=%s, CUDA_MODULE_LOADING=%s, %s the spinner: %zu of %d new "
      "streams waited:",
      connections ? connections : "unset", loading ? loading : "unset",
      behind ? "an event behind" : "nothing behind", waited.size(), streams);
  for (const int i : waited) std::printf(" %d", i);
  std::printf("\n");

  reinterpret_cast<volatile int*>(words)[0] = 1;  // release the spinner
  std::printf("spinner released\n");
  CHECK(cudaDeviceSynchronize());
  std::vector<int> seen(static_cast<std::size_t>(streams));
  CHECK(cudaMemcpy(seen.data(), out, seen.size() * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < streams; ++i) wrong += seen[i] != i + 1;
  std::printf("after the release: %d of %d streams wrote their word\n", streams - wrong, streams);
  for (cudaStream_t s : made) CHECK(cudaStreamDestroy(s));
  CHECK(cudaEventDestroy(after));
  CHECK(cudaStreamDestroy(a));
  CHECK(cudaFree(out));
  CHECK(cudaFreeHost(words));
  return wrong == 0 ? 0 : 1;
}
