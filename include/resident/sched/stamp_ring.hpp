#pragma once
// Diagnostics: a ring of %globaltimer stamps that kernels append to and the host reads after
// the run (when best-effort work came onto the GPU and left it; when a gate began to hold).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/sched/stamp_ring_view.hpp"

namespace resident::sched {

/// The device memory of one ring and its reading. Move-only (it owns device memory).
class stamp_ring {
 public:
  /// `capacity`: a power of two from 2 to 2^26 stamps; invalid_argument otherwise (it bounds
  /// the allocation: 2^26 stamps are 512 MiB). Allocates on the current device, zeroed.
  explicit stamp_ring(std::size_t capacity);

  [[nodiscard]] stamp_ring_view view() const noexcept;
  [[nodiscard]] std::size_t capacity() const noexcept { return _mask + 1U; }

  /// The kept stamps, oldest first (synchronous; call once the kernels that append are done).
  [[nodiscard]] std::vector<std::uint64_t> read() const;
  /// Stamps appended in all, and of those overwritten before read() (0: none lost).
  [[nodiscard]] std::uint64_t appended() const;
  [[nodiscard]] std::uint64_t lost() const;
  /// Forgets every stamp (synchronous).
  void reset();

 private:
  std::uint32_t _mask{0};
  device_buffer _head;
  device_buffer _entries;
  stream _reader;
};

}  // namespace resident::sched
