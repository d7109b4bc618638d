#include "resident/cuda/live_objects.hpp"

#include <array>
#include <atomic>

namespace resident {

namespace {

// Relaxed: a count is a statistic; nothing else is published through it.
std::array<std::atomic<std::int64_t>, 7>& counts() noexcept {
  static std::array<std::atomic<std::int64_t>, 7> c{};
  return c;
}

std::int64_t count_of(detail::cuda_object kind) noexcept {
  return counts()[static_cast<std::size_t>(kind)].load(std::memory_order_relaxed);
}

}  // namespace

live_cuda_objects live_objects() noexcept {
  using detail::cuda_object;
  return {count_of(cuda_object::device_buffer), count_of(cuda_object::host_mapped_buffer),
          count_of(cuda_object::pinned_buffer), count_of(cuda_object::stream),
          count_of(cuda_object::event),         count_of(cuda_object::graph),
          count_of(cuda_object::graph_exec)};
}

namespace detail {

void note_created(cuda_object kind) noexcept {
  counts()[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
}

void note_destroyed(cuda_object kind) noexcept {
  counts()[static_cast<std::size_t>(kind)].fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace detail

}  // namespace resident
