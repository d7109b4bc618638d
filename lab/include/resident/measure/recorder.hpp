#pragma once
// A fixed-capacity sample buffer for the hot path of a benchmark thread: all memory is allocated
// (and touched) in the constructor, so record() never allocates, never page-faults on fresh
// memory and never throws.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace resident::measure {

/// Not thread-safe: one thread records; read values() after that thread has stopped.
class sample_recorder {
 public:
  /// Allocates and zero-fills room for `capacity` samples (0 is allowed: everything overflows).
  explicit sample_recorder(std::size_t capacity);

  /// Appends `value`; when full, drops it, counts it in overflow() and returns false.
  bool record(double value) noexcept {
    if (_size == _capacity) {
      ++_overflow;
      return false;
    }
    _data[_size++] = value;
    return true;
  }

  /// The recorded samples, in recording order.
  [[nodiscard]] std::span<const double> values() const noexcept { return {_data.get(), _size}; }
  [[nodiscard]] std::size_t size() const noexcept { return _size; }
  [[nodiscard]] std::size_t capacity() const noexcept { return _capacity; }
  [[nodiscard]] bool full() const noexcept { return _size == _capacity; }
  /// How many record() calls were dropped because the recorder was full.
  [[nodiscard]] std::uint64_t overflow() const noexcept { return _overflow; }

  /// Forgets the samples and the overflow count; keeps the memory.
  void clear() noexcept {
    _size = 0;
    _overflow = 0;
  }

 private:
  std::unique_ptr<double[]> _data;
  std::size_t _capacity{};
  std::size_t _size{};
  std::uint64_t _overflow{};
};

}  // namespace resident::measure
