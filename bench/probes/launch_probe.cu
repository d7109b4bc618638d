// launch_probe: what one host submission costs, call by call, for the ways CUDA offers to
// submit a kernel. bench lab measured 3.7-4.5 us of host time per eager launch of an empty
// kernel on the H200 VM, against 1.3 us for a whole cudaGraphLaunch; this probe looks for
// where that goes (runtime layer, driver layer, stream kind, queue depth, arguments). It is a
// design probe, not part of the library.
//
//   launch_probe [launches]   (prints one line per variant: mean and percentiles of the
//                              host time of single calls, and the batch time per call)

#include <cuda.h>
#include <cuda_runtime.h>

#include <time.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "probe_check.hpp"

#define CHECK_DRV(call)                                                      \
  do {                                                                       \
    const CUresult r_ = (call);                                              \
    if (r_ != CUDA_SUCCESS) {                                                \
      std::fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #call, r_); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

namespace {

__global__ void empty_kernel() {}

__global__ void args_kernel(const float* a, float* b, const float* c, float* d, int n) {
  if (n < 0) b[0] = a[0] + c[0] + d[0];  // never true: keeps the arguments live
}

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

using cu_launch_kernel_t = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void**, void**);

struct result {
  double mean, p10, p50, p90, p99, batch;
};

double pct(std::vector<double>& v, double q) {
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

// `submit` is timed call by call (synchronizing every `drain_every` calls, untimed), then as
// one batch of n calls without any synchronization in between.
result measure(int n, int drain_every, cudaStream_t s, const std::function<void()>& submit) {
  for (int i = 0; i < 200; ++i) submit();
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaDeviceSynchronize());
  std::vector<double> one(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (drain_every > 0 && i % drain_every == 0) CHECK(cudaDeviceSynchronize());
    const std::int64_t t0 = now_ns();
    submit();
    one[static_cast<std::size_t>(i)] = static_cast<double>(now_ns() - t0) / 1e3;
  }
  CHECK(cudaDeviceSynchronize());
  const std::int64_t b0 = now_ns();
  for (int i = 0; i < n; ++i) submit();
  const double batch = static_cast<double>(now_ns() - b0) / 1e3 / n;
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
  double sum = 0;
  for (double x : one) sum += x;
  result r{sum / n, 0, 0, 0, 0, batch};
  r.p10 = pct(one, 0.10);
  r.p50 = pct(one, 0.50);
  r.p90 = pct(one, 0.90);
  r.p99 = pct(one, 0.99);
  return r;
}

void print(const std::string& name, const result& r) {
  std::printf("%-44s mean %6.2f  p10 %6.2f  p50 %6.2f  p90 %6.2f  p99 %7.2f  batch %6.2f us\n",
              name.c_str(), r.mean, r.p10, r.p50, r.p90, r.p99, r.batch);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2000;
  probe_check::require_gpu("resident_launch_probe");
  CHECK(cudaFree(nullptr));
  cudaStream_t ns = nullptr;  // non-blocking
  CHECK(cudaStreamCreateWithFlags(&ns, cudaStreamNonBlocking));
  cudaStream_t bs = nullptr;  // blocking (synchronizes with the legacy stream)
  CHECK(cudaStreamCreate(&bs));
  float* buf = nullptr;
  CHECK(cudaMalloc(&buf, 1 << 16));

  void* fn_ptr = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn_ptr, 12000, cudaEnableDefault,
                                         &found));
  if (found != cudaDriverEntryPointSuccess || fn_ptr == nullptr) {
    std::fprintf(stderr, "cuLaunchKernel entry point not found\n");
    return 1;
  }
  const auto cu_launch = reinterpret_cast<cu_launch_kernel_t>(fn_ptr);
  cudaFunction_t empty_fn = nullptr;
  CHECK(cudaGetFuncBySymbol(&empty_fn, reinterpret_cast<const void*>(empty_kernel)));
  cudaFunction_t args_fn = nullptr;
  CHECK(cudaGetFuncBySymbol(&args_fn, reinterpret_cast<const void*>(args_kernel)));

  int v = 0;
  CHECK(cudaRuntimeGetVersion(&v));
  int dv = 0;
  CHECK(cudaDriverGetVersion(&dv));
  const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("runtime %d driver %d  CUDA_DEVICE_MAX_CONNECTIONS=%s  n=%d\n", v, dv,
              conn ? conn : "(unset)", n);

  const std::int64_t c0 = now_ns();
  for (int i = 0; i < 1000; ++i) (void)now_ns();
  std::printf("clock_gettime: %.3f us per call\n", static_cast<double>(now_ns() - c0) / 1e6);

  const float* a = buf;
  float* b = buf + 1024;
  const float* c = buf + 2048;
  float* d = buf + 3072;
  int len = 4096;

  print("<<<1,1>>> empty, legacy stream", measure(n, 0, nullptr, [] { empty_kernel<<<1, 1>>>(); }));
  print("<<<1,1>>> empty, blocking stream",
        measure(n, 0, bs, [&] { empty_kernel<<<1, 1, 0, bs>>>(); }));
  print("<<<1,1>>> empty, non-blocking stream",
        measure(n, 0, ns, [&] { empty_kernel<<<1, 1, 0, ns>>>(); }));
  print("<<<1,1>>> empty, non-blocking, drained each",
        measure(n, 1, ns, [&] { empty_kernel<<<1, 1, 0, ns>>>(); }));
  print("<<<1,1>>> empty, non-blocking, drained /16",
        measure(n, 16, ns, [&] { empty_kernel<<<1, 1, 0, ns>>>(); }));
  print("cudaLaunchKernel empty, non-blocking", measure(n, 0, ns, [&] {
          CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(1), dim3(1),
                                 nullptr, 0, ns));
        }));
  print("cudaLaunchKernelEx empty, non-blocking", measure(n, 0, ns, [&] {
          cudaLaunchConfig_t cfg{};
          cfg.gridDim = dim3(1);
          cfg.blockDim = dim3(1);
          cfg.stream = ns;
          CHECK(cudaLaunchKernelEx(&cfg, empty_kernel));
        }));
  print("cuLaunchKernel empty, non-blocking", measure(n, 0, ns, [&] {
          CHECK_DRV(cu_launch(reinterpret_cast<CUfunction>(empty_fn), 1, 1, 1, 1, 1, 1, 0,
                              reinterpret_cast<CUstream>(ns), nullptr, nullptr));
        }));
  print("cuLaunchKernel empty, legacy stream", measure(n, 0, nullptr, [&] {
          CHECK_DRV(cu_launch(reinterpret_cast<CUfunction>(empty_fn), 1, 1, 1, 1, 1, 1, 0,
                              CU_STREAM_LEGACY, nullptr, nullptr));
        }));
  print("<<<16,256>>> 5 args, non-blocking",
        measure(n, 0, ns, [&] { args_kernel<<<16, 256, 0, ns>>>(a, b, c, d, len); }));
  print("cuLaunchKernel 5 args, non-blocking", measure(n, 0, ns, [&] {
          void* params[] = {&a, &b, &c, &d, &len};
          CHECK_DRV(cu_launch(reinterpret_cast<CUfunction>(args_fn), 16, 1, 1, 256, 1, 1, 0,
                              reinterpret_cast<CUstream>(ns), params, nullptr));
        }));
  print("cudaMemcpyAsync D2D 16 KiB, non-blocking", measure(n, 0, ns, [&] {
          CHECK(cudaMemcpyAsync(b, a, 16384, cudaMemcpyDeviceToDevice, ns));
        }));
  cudaEvent_t ev = nullptr;
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  print("cudaEventRecord (no timing), non-blocking",
        measure(n, 0, ns, [&] { CHECK(cudaEventRecord(ev, ns)); }));

  // Graphs of 1 and 4 empty kernels.
  for (int k : {1, 4}) {
    cudaGraph_t g = nullptr;
    CHECK(cudaStreamBeginCapture(ns, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < k; ++i) empty_kernel<<<1, 1, 0, ns>>>();
    CHECK(cudaStreamEndCapture(ns, &g));
    cudaGraphExec_t ge = nullptr;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphUpload(ge, ns));
    print("cudaGraphLaunch " + std::to_string(k) + " empty kernel(s)",
          measure(n, 0, ns, [&] { CHECK(cudaGraphLaunch(ge, ns)); }));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
  }
  // Four launches per call, as the lab's eager pipeline submits them.
  print("4 x <<<>>> 5 args (per 4), non-blocking", measure(n / 4, 0, ns, [&] {
          for (int i = 0; i < 4; ++i) args_kernel<<<16, 256, 0, ns>>>(a, b, c, d, len);
        }));
  print("4 x cuLaunchKernel 5 args (per 4)", measure(n / 4, 0, ns, [&] {
          void* params[] = {&a, &b, &c, &d, &len};
          for (int i = 0; i < 4; ++i) {
            CHECK_DRV(cu_launch(reinterpret_cast<CUfunction>(args_fn), 16, 1, 1, 256, 1, 1, 0,
                                reinterpret_cast<CUstream>(ns), params, nullptr));
          }
        }));
  CHECK(cudaEventDestroy(ev));
  CHECK(cudaFree(buf));
  CHECK(cudaStreamDestroy(bs));
  CHECK(cudaStreamDestroy(ns));
  return 0;
}
