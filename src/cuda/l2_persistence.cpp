#include "resident/cuda/l2_persistence.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/cuda/error.hpp"

namespace resident {

l2_set_aside::l2_set_aside(std::size_t bytes) {
  int device = 0;
  RESIDENT_CUDA_TRY(cudaGetDevice(&device));
  int most = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, device));
  RESIDENT_CUDA_TRY(cudaDeviceGetLimit(&_previous, cudaLimitPersistingL2CacheSize));
  const std::size_t want = std::min(bytes, static_cast<std::size_t>(most));
  RESIDENT_CUDA_TRY(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want));
  _active = true;
  // A constructor that throws runs no destructor: give the set-aside back here.
  try {
    RESIDENT_CUDA_TRY(cudaDeviceGetLimit(&_granted, cudaLimitPersistingL2CacheSize));
  } catch (...) {
    release();
    throw;
  }
}

l2_set_aside::l2_set_aside(l2_set_aside&& other) noexcept
    : _active(std::exchange(other._active, false)),
      _previous(other._previous),
      _granted(std::exchange(other._granted, 0)) {}

l2_set_aside& l2_set_aside::operator=(l2_set_aside&& other) noexcept {
  if (this != &other) {
    release();
    _active = std::exchange(other._active, false);
    _previous = other._previous;
    _granted = std::exchange(other._granted, 0);
  }
  return *this;
}

l2_set_aside::~l2_set_aside() { release(); }

void l2_set_aside::release() noexcept {
  if (!_active) return;
  _active = false;
  // Lines already marked persisting would otherwise keep their priority.
  RESIDENT_CUDA_ASSERT_OK(cudaCtxResetPersistingL2Cache());
  RESIDENT_CUDA_ASSERT_OK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, _previous));
}

cudaAccessPolicyWindow persisting_window(const void* base, std::size_t bytes) {
  if (base == nullptr || bytes == 0) {
    throw std::invalid_argument("persisting_window: the window needs a base address and bytes");
  }
  int device = 0;
  RESIDENT_CUDA_TRY(cudaGetDevice(&device));
  int most = 0;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&most, cudaDevAttrMaxAccessPolicyWindowSize, device));
  if (bytes > static_cast<std::size_t>(most)) {
    throw std::invalid_argument("persisting_window: " + std::to_string(bytes) +
                                " bytes is over the device's largest window (" +
                                std::to_string(most) + " bytes)");
  }
  cudaAccessPolicyWindow w{};
  w.base_ptr = const_cast<void*>(base);
  w.num_bytes = bytes;
  w.hitRatio = 1.0F;
  w.hitProp = cudaAccessPropertyPersisting;
  w.missProp = cudaAccessPropertyNormal;
  return w;
}

int mark_captured_kernels(cudaStream_t capturing, const cudaAccessPolicyWindow& window) {
  cudaStreamCaptureStatus status{};
  const cudaGraphNode_t* deps = nullptr;
  std::size_t count = 0;
  RESIDENT_CUDA_TRY(
      cudaStreamGetCaptureInfo(capturing, &status, nullptr, nullptr, &deps, nullptr, &count));
  if (status != cudaStreamCaptureStatusActive) {
    throw std::logic_error("mark_captured_kernels: the stream is not capturing");
  }
  cudaLaunchAttributeValue value{};
  value.accessPolicyWindow = window;
  int marked = 0;
  for (std::size_t i = 0; i < count; ++i) {
    cudaGraphNodeType type{};
    RESIDENT_CUDA_TRY(cudaGraphNodeGetType(deps[i], &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    RESIDENT_CUDA_TRY(
        cudaGraphKernelNodeSetAttribute(deps[i], cudaLaunchAttributeAccessPolicyWindow, &value));
    ++marked;
  }
  return marked;
}

}  // namespace resident
