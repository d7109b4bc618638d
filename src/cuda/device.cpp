#include "resident/cuda/device.hpp"

#include <cuda_runtime_api.h>

#include "resident/cuda/error.hpp"

namespace resident {

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" status
    return 0;
  }
  return count;
}

std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (status == cudaSuccess && count > 0) return {};
  if (status == cudaSuccess) return "the CUDA driver reports no devices";
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
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
  return info;
}

}  // namespace resident
