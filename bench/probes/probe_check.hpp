#pragma once
// Shared by the design probes (standalone programs, not the library): the GPU gate each main()
// passes first, CHECK for CUDA runtime calls, and driver calls resolved at run time.
//
// The probes link no libcuda (cudart is static and loads the driver at run time), so they start
// on any machine; without a usable GPU and driver require_gpu() says so in the CLI's words and
// ends the program, instead of a raw error from the first CUDA call.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    const cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace probe_check {

/// Ends the program with a clear message (exit 1) unless a CUDA GPU and its driver are usable;
/// then makes device 0 current.
inline void require_gpu(const char* name) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status != cudaSuccess || count == 0) {
    std::fprintf(
        stderr,
        "%s: no usable CUDA GPU or driver was found (%s). This design probe measures "
        "the GPU; run it on a machine with a CUDA GPU and its driver.\n",
        name, status != cudaSuccess ? cudaGetErrorName(status) : "the driver reports no devices");
    std::exit(1);
  }
  CHECK(cudaSetDevice(0));
}

/// A driver entry point by name (e.g. "cuDeviceGet"), through the runtime: no libcuda link.
template <class F>
F* driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, CUDA_VERSION, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    std::fprintf(stderr, "the CUDA driver has no %s (this probe needs a driver for CUDA %d.%d)\n",
                 symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    std::exit(1);
  }
  return reinterpret_cast<F*>(fn);
}

}  // namespace probe_check

/// DRIVER(cuDeviceGet)(&dev, 0): the driver call, resolved once per call site. The name is the
/// driver's unversioned one; decltype picks the prototype cuda.h maps it to.
#define DRIVER(name)                                                                \
  ([]() {                                                                           \
    static auto* const fn_ =                                                        \
        ::probe_check::driver_entry<std::remove_pointer_t<decltype(&name)>>(#name); \
    return fn_;                                                                     \
  }())

#define CU_CHECK(call)                                                       \
  do {                                                                       \
    const CUresult r_ = (call);                                              \
    if (r_ != CUDA_SUCCESS) {                                                \
      const char* s_ = "unknown error";                                      \
      DRIVER(cuGetErrorString)(r_, &s_);                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, s_); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)
