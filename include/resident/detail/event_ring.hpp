#pragma once
// A one-writer, one-reader event ring over any memory, as the display engine and the host share
// it in host-mapped memory: the writer appends an entry only while fewer than `capacity` are
// unread (else it counts the event as dropped), then releases its write count; the reader takes
// entries up to the count it acquired, then releases its read count so the writer may reuse
// their slots. Internal: io::display drains its engine's rings with drain_events(); the engine
// appends on the device (src/io/display_kernels.cu, push_event); push_event() here is the same
// protocol on the host, for the unit tests that run both ends under ThreadSanitizer.

#include <atomic>
#include <cstdint>
#include <vector>

namespace resident::detail {

template <class E>
[[nodiscard]] std::vector<E> drain_events(const E* ring, std::uint64_t capacity,
                                          const std::uint64_t& written_word,
                                          std::uint64_t& read_word, std::uint64_t& read) {
  const std::uint64_t written =
      std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(written_word))
          .load(std::memory_order_acquire);
  std::vector<E> out;
  out.reserve(written - read);
  for (; read < written; ++read) out.push_back(ring[read % capacity]);
  // Release: the entries were read before the writer learns their slots are free.
  std::atomic_ref<std::uint64_t>(read_word).store(read, std::memory_order_release);
  return out;
}

/// The writer's side (the engine's protocol, on the host). False when the ring was full and the
/// event was dropped.
template <class E>
bool push_event(E* ring, std::uint64_t capacity, std::uint64_t& written,
                std::uint64_t& written_word, const std::uint64_t& read_word, const E& e) {
  const std::uint64_t read = std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(read_word))
                                 .load(std::memory_order_acquire);
  if (written - read >= capacity) return false;
  ring[written % capacity] = e;
  ++written;
  std::atomic_ref<std::uint64_t>(written_word).store(written, std::memory_order_release);
  return true;
}

}  // namespace resident::detail
