#pragma once
// Byte counts of ports and buffers computed from sizes a user gave (a parameter, a flag, a key of
// a configuration): checked before they are multiplied, so a huge count is an error naming the
// key instead of a byte count that wraps around to a few bytes (and kernels that then run past
// the end of their buffers).

#include <cstddef>
#include <cstdint>
#include <string>

#include "resident/app/error.hpp"

namespace resident::detail {

/// The most bytes one port or buffer sized from user input may take: 16 GiB, a ninth of an
/// H200's memory; a larger request is a mistake, not a workload.
inline constexpr std::size_t max_buffer_bytes = std::size_t{1} << 34;

/// count * element_size, for a count in [1, limit / element_size]; otherwise a
/// composition_error naming `what` (e.g. "operator 'affine': parameter 'elements'"), the value
/// and the allowed range.
[[nodiscard]] inline std::size_t checked_bytes(std::int64_t count, std::size_t element_size,
                                               const std::string& what,
                                               std::size_t limit = max_buffer_bytes) {
  const std::size_t most = element_size == 0 ? 0 : limit / element_size;
  if (count <= 0 || static_cast<std::uint64_t>(count) > most) {
    throw composition_error(what + " must be in [1, " + std::to_string(most) + "] (at most " +
                            std::to_string(limit) + " bytes of " + std::to_string(element_size) +
                            "-byte values), got " + std::to_string(count));
  }
  return static_cast<std::size_t>(count) * element_size;
}

}  // namespace resident::detail
