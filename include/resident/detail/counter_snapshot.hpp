#pragma once
// Reading a running loop's counters from the host. Internal: not part of the API.

#include <chrono>
#include <cstdint>

#include "resident/detail/loop_state.hpp"
#include "resident/exec/executor.hpp"

namespace resident::detail {

/// One commit's counters from `control`, which a running loop may be writing. The device writes
/// processed, dropped and repeated, then releases last_seq; a snapshot is read again until
/// last_seq before and after agree and processed + dropped == last_seq - start_seq (a mix of two
/// commits satisfies that only when the later one dropped nothing, and then the values are the
/// later commit's; `repeated` may be one commit newer). The device's system-scope release can
/// take microseconds to reach the host, during which thousands of cached re-reads fit, so the
/// retries are bounded by time: `bound` only guards against a writer that never finishes, and
/// after it the last read is returned as it is.
[[nodiscard]] loop_counters snapshot_counters(const loop_control& control, std::uint64_t start_seq,
                                              std::chrono::nanoseconds bound) noexcept;

}  // namespace resident::detail
