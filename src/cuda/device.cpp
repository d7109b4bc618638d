#include "resident/cuda/device.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cassert>
#include <cstdlib>
#include <string>

#include "resident/cuda/error.hpp"

namespace resident {

namespace {

// Process-wide (CUDA_MODULE_LOADING): "lazy", "eager", or "unknown" when the driver cannot say.
std::string module_loading_mode() {
  using get_mode = CUresult (*)(CUmoduleLoadingMode*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  std::string mode_name = "unknown";
  if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12020, cudaEnableDefault,
                                       &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess && fn != nullptr) {
    CUmoduleLoadingMode mode{};
    if (reinterpret_cast<get_mode>(fn)(&mode) == CUDA_SUCCESS) {
      mode_name = mode == CU_MODULE_LAZY_LOADING ? "lazy" : "eager";
    }
  }
  (void)cudaGetLastError();
  return mode_name;
}

}  // namespace

current_device_guard::current_device_guard(int ordinal) {
  const int previous = current_device();
  // Always: it also makes the device's primary context current where a partition's context
  // was, so what is allocated in the scope outlives the partition that was current.
  RESIDENT_CUDA_TRY(cudaSetDevice(ordinal));
  if (previous != ordinal) _previous = previous;
}

current_device_guard::~current_device_guard() {
  if (_previous < 0) return;
  [[maybe_unused]] const cudaError_t e = cudaSetDevice(_previous);
  assert(e == cudaSuccess && "current_device_guard: restoring the previous device failed");
}

int current_device() {
  int device = 0;
  RESIDENT_CUDA_TRY(cudaGetDevice(&device));
  return device;
}

bool request_eager_module_loading() noexcept {
  return ::setenv("CUDA_MODULE_LOADING", "EAGER", 0) == 0;
}

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" status
    return 0;
  }
  return count;
}

void enable_peer_access(int from, int to) {
  if (from == to) return;
  const current_device_guard on(from);
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // clears the error CUDA just recorded
    return;
  }
  RESIDENT_CUDA_TRY(e);
}

std::string missing_device(int ordinal) {
  const int devices = device_count();
  if (ordinal >= 0 && ordinal < devices) return {};
  std::string why = std::to_string(ordinal) + " does not exist: this machine has " +
                    std::to_string(devices) + " usable CUDA device" + (devices == 1 ? "" : "s");
  if (devices > 0) why += " (0 to " + std::to_string(devices - 1) + ")";
  return why;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status == cudaSuccess && count > 0) return {};
  if (status == cudaSuccess) return "the CUDA driver reports no devices";
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

std::string explain_no_device(const std::string& reason) {
  std::string m = "no usable CUDA GPU or driver was found (CUDA's report: " + reason;
  if (reason.find("InsufficientDriver") != std::string::npos) {
    m += "; CUDA says this too when no NVIDIA driver is installed or loaded";
  }
  return m + ")";
}

device_info query_device(int ordinal) {
  device_info info;
  info.ordinal = ordinal;
  cudaDeviceProp prop{};
  RESIDENT_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  RESIDENT_CUDA_TRY(cudaDriverGetVersion(&info.driver_version));
  RESIDENT_CUDA_TRY(cudaRuntimeGetVersion(&info.runtime_version));
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&info.clock_rate_khz, cudaDevAttrClockRate, ordinal));
  int value = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&value, cudaDevAttrCanMapHostMemory, ordinal));
  info.can_map_host_memory = value != 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&value, cudaDevAttrHostNativeAtomicSupported, ordinal));
  info.host_native_atomics = value != 0;
  info.module_loading = module_loading_mode();
  return info;
}

bool lazy_module_loading() { return module_loading_mode() == "lazy"; }

void load_kernel(const void* kernel, const char* name) {
  cudaFuncAttributes attributes{};
  // Querying a kernel's attributes loads it (the documented way to load one ahead of time
  // under lazy loading).
  const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    detail::throw_cuda_error(
        status, (std::string("cudaFuncGetAttributes (loading kernel '") + name + "')").c_str(),
        __FILE__, __LINE__);
  }
}

}  // namespace resident
