#include "resident/detail/counter_snapshot.hpp"

#include "cuda/host_words.hpp"

namespace resident::detail {

loop_counters snapshot_counters(const loop_control& control, std::uint64_t start_seq,
                                std::chrono::nanoseconds bound) noexcept {
  loop_counters out;
  out.start_seq = start_seq;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (std::uint32_t attempt = 1;; ++attempt) {
    out.last_seq = host_load_acquire(control.last_seq);  // pairs with the end marker's release
    out.processed = host_load_acquire(control.processed);
    out.dropped = host_load_acquire(control.dropped);
    out.repeated = host_load_acquire(control.repeated);
    if (host_load_acquire(control.last_seq) == out.last_seq &&
        out.processed + out.dropped == out.last_seq - start_seq) {
      break;
    }
    // The clock is read every 64 attempts only: a torn read lasts until the release arrives.
    if (attempt % 64 == 0 && std::chrono::steady_clock::now() >= deadline) break;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  out.iterations = host_load_acquire(control.heartbeat);
  // Written before last_seq's release when they change: at least as new as the counters above.
  const response_words& r = control.responses;
  out.max_response_ns = host_load_acquire(r.max_response_ns);
  out.deadline_misses = host_load_acquire(r.deadline_misses);
  out.worst_overrun_ns = host_load_acquire(r.worst_overrun_ns);
  out.max_arrival_response_ns = host_load_acquire(r.max_arrival_response_ns);
  out.arrival_deadline_misses = host_load_acquire(r.arrival_deadline_misses);
  out.worst_arrival_overrun_ns = host_load_acquire(r.worst_arrival_overrun_ns);
  return out;
}

}  // namespace resident::detail
