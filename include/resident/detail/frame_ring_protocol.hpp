#pragma once
// The sensor bridge's host-delivery ring protocol, over any memory: how the sensor thread (the
// only writer) rewrites a slot and its record, and how a host reader takes a frame and learns
// whether the slot was rewritten while it read. Internal: io::sensor_bridge runs it over pinned
// host memory; the unit tests run it over plain memory under ThreadSanitizer, with a payload
// copy made of relaxed atomic words (the bridge's own copy is a plain memcpy, as a NIC's DMA
// would be: what the protocol orders is the record around it).

#include <atomic>
#include <cstdint>
#include <optional>

#include "resident/io/sensor_bridge.hpp"

namespace resident::detail {

/// The record fields a frame is published with (frame_record without `frame`).
struct frame_record_fields {
  std::uint64_t frame_start_ns{0};
  std::uint64_t arrival_ns{0};
  std::uint64_t bytes{0};
  std::uint32_t status{0};
};

template <class T>
void ring_store_relaxed(T& word, T value) noexcept {
  std::atomic_ref<T>(word).store(value, std::memory_order_relaxed);
}
template <class T>
[[nodiscard]] T ring_load_relaxed(const T& word) noexcept {
  return std::atomic_ref<T>(const_cast<T&>(word)).load(std::memory_order_relaxed);
}

/// The writer: the record stops naming the slot's old frame before any payload byte changes
/// (a release store, then a release fence so the payload's stores stay after it), `fill()`
/// writes the payload, then the record's fields, then `frame` and `newest` are released.
template <class Fill>
void publish_host_frame(io::frame_record& record, std::uint64_t& newest, std::uint64_t frame,
                        const frame_record_fields& fields, Fill&& fill) {
  std::atomic_ref<std::uint64_t>(record.frame).store(0, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  fill();
  ring_store_relaxed(record.frame_start_ns, fields.frame_start_ns);
  ring_store_relaxed(record.bytes, fields.bytes);
  ring_store_relaxed(record.status, fields.status);
  ring_store_relaxed(record.arrival_ns, fields.arrival_ns);
  std::atomic_ref<std::uint64_t>(record.frame).store(frame, std::memory_order_release);
  std::atomic_ref<std::uint64_t>(newest).store(frame, std::memory_order_release);
}

/// The reader's first step: the record's fields when the slot holds `frame` now (acquire: the
/// payload and fields written before it are visible), nullopt when it holds another.
[[nodiscard]] inline std::optional<frame_record_fields> take_host_frame(
    const io::frame_record& record, std::uint64_t frame) noexcept {
  if (std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(record.frame))
          .load(std::memory_order_acquire) != frame) {
    return std::nullopt;
  }
  frame_record_fields f;
  f.frame_start_ns = ring_load_relaxed(record.frame_start_ns);
  f.bytes = ring_load_relaxed(record.bytes);
  f.status = ring_load_relaxed(record.status);
  f.arrival_ns = ring_load_relaxed(record.arrival_ns);
  return f;
}

/// The reader's last step, after it read the payload: true when the slot still holds `frame`
/// (an acquire fence keeps the payload's reads before the record's re-read), so nothing read
/// since take_host_frame() came from a rewrite. (On the device, csi2_reconstruct makes the same
/// check through frame_ref::slot_frame.)
[[nodiscard]] inline bool still_holds(const io::frame_record& record,
                                      std::uint64_t frame) noexcept {
  std::atomic_thread_fence(std::memory_order_acquire);
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(record.frame))
             .load(std::memory_order_relaxed) == frame;
}

}  // namespace resident::detail
