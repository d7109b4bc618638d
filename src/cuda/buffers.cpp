#include "resident/cuda/buffers.hpp"

#include <cstring>
#include <utility>

#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/live_objects.hpp"

namespace resident {

using detail::cuda_object;
using detail::note_created;
using detail::note_destroyed;

device_buffer::device_buffer(std::size_t bytes) : _bytes(bytes) {
  if (bytes > 0) {
    RESIDENT_CUDA_TRY(cudaMalloc(&_data, bytes));
    note_created(cuda_object::device_buffer);
  }
}

device_buffer::device_buffer(device_buffer&& other) noexcept
    : _data(std::exchange(other._data, nullptr)), _bytes(std::exchange(other._bytes, 0)) {}

device_buffer& device_buffer::operator=(device_buffer&& other) noexcept {
  if (this != &other) {
    if (_data != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaFree(_data));
      note_destroyed(cuda_object::device_buffer);
    }
    _data = std::exchange(other._data, nullptr);
    _bytes = std::exchange(other._bytes, 0);
  }
  return *this;
}

device_buffer::~device_buffer() {
  if (_data != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaFree(_data));
    note_destroyed(cuda_object::device_buffer);
  }
}

void device_buffer::copy_from_host(const void* src, std::size_t bytes, stream_view s) {
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_data, src, bytes, cudaMemcpyHostToDevice, s.get()));
}

void device_buffer::copy_to_host(void* dst, std::size_t bytes, stream_view s) const {
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(dst, _data, bytes, cudaMemcpyDeviceToHost, s.get()));
}

void device_buffer::fill_bytes(int value, stream_view s) {
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_data, value, _bytes, s.get()));
}

host_mapped_buffer::host_mapped_buffer(std::size_t bytes) : _bytes(bytes) {
  RESIDENT_CUDA_TRY(cudaHostAlloc(&_host, bytes, cudaHostAllocMapped));
  std::memset(_host, 0, bytes);
  try {
    RESIDENT_CUDA_TRY(cudaHostGetDevicePointer(&_device, _host, 0));
  } catch (...) {
    // The destructor of a constructor that throws does not run: free the allocation here.
    RESIDENT_CUDA_ASSERT_OK(cudaFreeHost(_host));
    _host = nullptr;
    throw;
  }
  note_created(cuda_object::host_mapped_buffer);
}

host_mapped_buffer::host_mapped_buffer(host_mapped_buffer&& other) noexcept
    : _host(std::exchange(other._host, nullptr)),
      _device(std::exchange(other._device, nullptr)),
      _bytes(std::exchange(other._bytes, 0)) {}

host_mapped_buffer& host_mapped_buffer::operator=(host_mapped_buffer&& other) noexcept {
  if (this != &other) {
    if (_host != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaFreeHost(_host));
      note_destroyed(cuda_object::host_mapped_buffer);
    }
    _host = std::exchange(other._host, nullptr);
    _device = std::exchange(other._device, nullptr);
    _bytes = std::exchange(other._bytes, 0);
  }
  return *this;
}

host_mapped_buffer::~host_mapped_buffer() {
  if (_host != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaFreeHost(_host));
    note_destroyed(cuda_object::host_mapped_buffer);
  }
}

pinned_buffer::pinned_buffer(std::size_t bytes) : _bytes(bytes) {
  RESIDENT_CUDA_TRY(cudaMallocHost(&_data, bytes));
  note_created(cuda_object::pinned_buffer);
  std::memset(_data, 0, bytes);
}

pinned_buffer::pinned_buffer(pinned_buffer&& other) noexcept
    : _data(std::exchange(other._data, nullptr)), _bytes(std::exchange(other._bytes, 0)) {}

pinned_buffer& pinned_buffer::operator=(pinned_buffer&& other) noexcept {
  if (this != &other) {
    if (_data != nullptr) {
      RESIDENT_CUDA_ASSERT_OK(cudaFreeHost(_data));
      note_destroyed(cuda_object::pinned_buffer);
    }
    _data = std::exchange(other._data, nullptr);
    _bytes = std::exchange(other._bytes, 0);
  }
  return *this;
}

pinned_buffer::~pinned_buffer() {
  if (_data != nullptr) {
    RESIDENT_CUDA_ASSERT_OK(cudaFreeHost(_data));
    note_destroyed(cuda_object::pinned_buffer);
  }
}

device_buffer zeroed_device_buffer(std::size_t bytes, int device) {
  const current_device_guard on(device);
  device_buffer b(bytes);
  RESIDENT_CUDA_TRY(cudaMemset(b.data(), 0, b.size()));
  return b;
}

}  // namespace resident
