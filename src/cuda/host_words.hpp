#pragma once
// Host side of the words shared with the device in host-mapped memory. The H200 has no
// host-native atomics with the device, so each such word has one writer, and the host reads and
// writes it with acquire/release (the device side: resident/app/loop_device.cuh).

#include <atomic>

namespace resident::detail {

template <class T>
[[nodiscard]] T host_load_acquire(const T& word) noexcept {
  return std::atomic_ref<T>(const_cast<T&>(word)).load(std::memory_order_acquire);
}
template <class T>
void host_store_release(T& word, T value) noexcept {
  std::atomic_ref<T>(word).store(value, std::memory_order_release);
}

}  // namespace resident::detail
