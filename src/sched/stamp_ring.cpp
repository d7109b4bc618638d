#include "resident/sched/stamp_ring.hpp"

#include <stdexcept>
#include <string>

#include "resident/cuda/error.hpp"

namespace resident::sched {

namespace {

std::uint32_t checked_mask(std::size_t capacity) {
  constexpr std::size_t most = std::size_t{1} << 26U;
  if (capacity < 2U || capacity > most || (capacity & (capacity - 1U)) != 0U) {
    throw std::invalid_argument("stamp_ring: the capacity must be a power of two from 2 to " +
                                std::to_string(most) + ", not " + std::to_string(capacity));
  }
  return static_cast<std::uint32_t>(capacity - 1U);
}

}  // namespace

stamp_ring::stamp_ring(std::size_t capacity)
    : _mask(checked_mask(capacity)),
      _head(sizeof(unsigned long long)),
      _entries(capacity * sizeof(unsigned long long)),
      _reader(0) {
  reset();
}

stamp_ring_view stamp_ring::view() const noexcept {
  return {_head.data_as<unsigned long long>(), _entries.data_as<unsigned long long>(), _mask};
}

std::uint64_t stamp_ring::appended() const {
  std::uint64_t head = 0;
  _head.copy_to_host(&head, sizeof head, _reader);
  _reader.synchronize();
  return head;
}

std::uint64_t stamp_ring::lost() const {
  const std::uint64_t head = appended();
  return head > capacity() ? head - capacity() : 0U;
}

std::vector<std::uint64_t> stamp_ring::read() const {
  const std::uint64_t head = appended();
  std::vector<std::uint64_t> all(capacity());
  _entries.copy_to_host(all.data(), all.size() * sizeof(std::uint64_t), _reader);
  _reader.synchronize();
  const std::uint64_t kept = head < capacity() ? head : capacity();
  std::vector<std::uint64_t> out;
  out.reserve(kept);
  for (std::uint64_t i = head - kept; i < head; ++i) out.push_back(all[i & _mask]);
  return out;
}

void stamp_ring::reset() {
  _head.fill_bytes(0, _reader);
  _entries.fill_bytes(0, _reader);
  _reader.synchronize();
}

}  // namespace resident::sched
