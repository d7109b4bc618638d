#pragma once
// The lab pipeline (copy -> 2x+1 -> square -> sum) over a batch of requests, shaped for a
// bucketed graph pool. Each request is `width` fp32 values; static device buffers hold
// `capacity` requests, so one graph per bucket reads and writes the same addresses forever and
// new requests are copied in before each replay (the static-buffer-plus-copy-in pattern).
//
// Padding and masking: a batch of n requests replays the graph of a bucket b >= n. Slots n..b-1
// are padded with zeros, and every step still runs on them, so each dummy value becomes
// (2*0+1)^2 = 1. The count n lives in device memory and the reduction reads it when it runs:
// it sums only the first n*width values, so the dummies never reach the result (inputs 1..6 in
// bucket 8 sum to 454, not 456).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/exec/graph_pool.hpp"

namespace resident::ops {

/// CPU model of one padded batch, in fp64: `values` padded with zeros to `slots * width` values,
/// each mapped to (2x+1)^2, summed over the real values only (masked) or over every slot.
[[nodiscard]] inline double padded_batch_reference(std::span<const float> values,
                                                   std::size_t padded_values, bool masked) {
  double sum = 0;
  for (std::size_t i = 0; i < padded_values; ++i) {
    if (masked && i >= values.size()) break;
    const double x = i < values.size() ? static_cast<double>(values[i]) : 0.0;
    sum += (2 * x + 1) * (2 * x + 1);
  }
  return sum;
}

class lab_batch {
 public:
  /// capacity: the most requests one batch may hold (the eager path included).
  explicit lab_batch(std::size_t capacity, std::size_t width = 1);

  /// Enqueues the pipeline over `slots` request slots (a bucket size, or the exact count on the
  /// eager path) on `s`. mask = false sums every slot, dummies included (to show why masking is
  /// needed). What a graph_pool records once per bucket.
  void record(std::size_t slots, stream_view s, bool mask = true) const;

  /// Copies `values` (count * width floats) into the static input, zeroes slots
  /// [count, padded_slots) and writes the count for the mask, in stream order on `s`.
  /// The previous batch must have completed (run() guarantees it): the staging buffer is reused.
  void stage(std::span<const float> values, std::size_t padded_slots, stream_view s);

  /// Waits for `s` and returns the last batch's sum.
  [[nodiscard]] float read_result(stream_view s);

  struct outcome {
    float sum{};
    std::optional<std::size_t> bucket;  // nullopt: no bucket held it, so it ran eagerly
  };
  /// One batch, synchronously: stage, replay the smallest bucket of `pool` that holds it (or
  /// submit it eagerly beyond the largest bucket), read the sum.
  outcome run(std::span<const float> values, const graph_pool& pool, stream_view s);

  [[nodiscard]] std::size_t capacity() const noexcept { return _capacity; }
  [[nodiscard]] std::size_t width() const noexcept { return _width; }
  /// Bytes of static device memory the batch holds (all buckets share it).
  [[nodiscard]] std::size_t device_bytes() const noexcept;

 private:
  std::size_t _capacity;
  std::size_t _width;
  device_buffer _input;  // retained: requests are copied in here
  device_buffer _work;   // the copy step's output
  device_buffer _affine;
  device_buffer _squared;
  device_buffer _result;   // one float
  device_buffer _valid;    // std::int64_t: valid values (count * width) for the mask
  device_buffer _all;      // std::int64_t: capacity * width, for unmasked sums
  pinned_buffer _staging;  // count * width floats, then the valid count
  pinned_buffer _result_host;
};

}  // namespace resident::ops
