#pragma once
// Owning device memory and host-mapped (zero-copy) memory.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

#include "resident/cuda/stream.hpp"

namespace resident {

/// Untyped device allocation (cudaMalloc). Allocation happens before launch, never on a hot path.
class device_buffer {
 public:
  device_buffer() noexcept = default;
  explicit device_buffer(std::size_t bytes);
  device_buffer(device_buffer&& other) noexcept;
  device_buffer& operator=(device_buffer&& other) noexcept;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer();

  [[nodiscard]] void* data() const noexcept { return _data; }
  template <class T>
  [[nodiscard]] T* data_as() const noexcept {
    return static_cast<T*>(_data);
  }
  [[nodiscard]] std::size_t size() const noexcept { return _bytes; }

  void copy_from_host(const void* src, std::size_t bytes, stream_view s);
  void copy_to_host(void* dst, std::size_t bytes, stream_view s) const;
  void fill_bytes(int value, stream_view s);

 private:
  void* _data{};
  std::size_t _bytes{};
};

/// `bytes` of `device`'s memory, zeroed before it returns; the caller's current device is left
/// as it was.
[[nodiscard]] device_buffer zeroed_device_buffer(std::size_t bytes, int device);

/// Page-locked host memory mapped into the device address space (cudaHostAllocMapped).
/// The host reads and writes `host()`, kernels use `device()`. Zero-initialized.
class host_mapped_buffer {
 public:
  host_mapped_buffer() noexcept = default;
  explicit host_mapped_buffer(std::size_t bytes);
  host_mapped_buffer(host_mapped_buffer&& other) noexcept;
  host_mapped_buffer& operator=(host_mapped_buffer&& other) noexcept;
  host_mapped_buffer(const host_mapped_buffer&) = delete;
  host_mapped_buffer& operator=(const host_mapped_buffer&) = delete;
  ~host_mapped_buffer();

  [[nodiscard]] void* host() const noexcept { return _host; }
  [[nodiscard]] void* device() const noexcept { return _device; }
  template <class T>
  [[nodiscard]] T* host_as() const noexcept {
    return static_cast<T*>(_host);
  }
  template <class T>
  [[nodiscard]] T* device_as() const noexcept {
    return static_cast<T*>(_device);
  }
  [[nodiscard]] std::size_t size() const noexcept { return _bytes; }

 private:
  void* _host{};
  void* _device{};
  std::size_t _bytes{};
};

/// Plain pinned host memory (cudaMallocHost), for staging asynchronous copies.
class pinned_buffer {
 public:
  pinned_buffer() noexcept = default;
  explicit pinned_buffer(std::size_t bytes);
  pinned_buffer(pinned_buffer&& other) noexcept;
  pinned_buffer& operator=(pinned_buffer&& other) noexcept;
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  ~pinned_buffer();

  [[nodiscard]] void* data() const noexcept { return _data; }
  template <class T>
  [[nodiscard]] T* data_as() const noexcept {
    return static_cast<T*>(_data);
  }
  [[nodiscard]] std::size_t size() const noexcept { return _bytes; }

 private:
  void* _data{};
  std::size_t _bytes{};
};

}  // namespace resident
