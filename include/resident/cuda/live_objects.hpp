#pragma once
// How many CUDA objects resident's RAII wrappers own right now, per kind: a diagnostic for runs
// that must not leak (a start/tear-down cycle must return every count to where it was; memory a
// loop that did not stop may still use is left allocated on purpose, and stays counted).

#include <cstdint>

namespace resident {

struct live_cuda_objects {
  std::int64_t device_buffers{0};       // cudaMalloc
  std::int64_t host_mapped_buffers{0};  // cudaHostAlloc(..., cudaHostAllocMapped)
  std::int64_t pinned_buffers{0};       // cudaMallocHost
  std::int64_t streams{0};
  std::int64_t events{0};
  std::int64_t graphs{0};
  std::int64_t graph_execs{0};
  friend bool operator==(const live_cuda_objects&, const live_cuda_objects&) = default;
};

/// The counts now (relaxed reads: exact once the threads that create and destroy are quiet).
[[nodiscard]] live_cuda_objects live_objects() noexcept;

namespace detail {
enum class cuda_object : std::uint8_t {
  device_buffer,
  host_mapped_buffer,
  pinned_buffer,
  stream,
  event,
  graph,
  graph_exec
};
void note_created(cuda_object kind) noexcept;
void note_destroyed(cuda_object kind) noexcept;
}  // namespace detail

}  // namespace resident
