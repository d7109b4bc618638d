#pragma once
// A bucketed graph pool: the same work captured ahead of time for a few batch sizes (default
// 1, 2, 4, 8, 16 requests). A batch of n requests replays the smallest bucket that holds n; the
// work recorded for a bucket must pad and mask the slots it does not use. Beyond the largest
// bucket there is no graph, and the caller falls back to direct (eager) submission.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "resident/cuda/graph.hpp"
#include "resident/cuda/stream.hpp"

namespace resident {

/// Throws std::invalid_argument unless `buckets` is non-empty, positive and strictly increasing.
void validate_buckets(std::span<const std::size_t> buckets);

/// The smallest bucket >= count, or nullopt when count exceeds the largest (count 0 has no
/// bucket either: there is nothing to run). `buckets` as validate_buckets accepts.
[[nodiscard]] std::optional<std::size_t> select_bucket(std::span<const std::size_t> buckets,
                                                       std::size_t count);

/// Parses "1,2,4,8,16" and validates it.
[[nodiscard]] std::vector<std::size_t> parse_buckets(const std::string& text);

struct bucket_cost {
  std::size_t bucket{};
  double capture_us{};
  double instantiate_us{};
  double upload_us{};
  std::size_t nodes{};
  /// Device memory the capture, instantiation and upload took, as cudaMemGetInfo saw it
  /// (device-wide and page-granular: an estimate, 0 when nothing new was reserved).
  std::int64_t device_bytes{};
};

class graph_pool {
 public:
  using recorder = std::function<void(std::size_t bucket, stream_view s)>;

  /// Captures `record(bucket, s)` for every bucket on `s` (not the legacy stream), instantiates
  /// and uploads each, and keeps what each cost.
  graph_pool(std::vector<std::size_t> buckets, const recorder& record, stream_view s);

  [[nodiscard]] std::optional<std::size_t> bucket_for(std::size_t count) const {
    return select_bucket(_buckets, count);
  }
  /// Launches the graph of the smallest bucket that holds `count` on `s` and returns that
  /// bucket, or returns nullopt (launching nothing) when no bucket holds it.
  std::optional<std::size_t> launch(std::size_t count, stream_view s) const;
  /// Launches the graph of exactly this bucket (one of buckets()).
  void launch_bucket(std::size_t bucket, stream_view s) const;

  [[nodiscard]] const std::vector<std::size_t>& buckets() const noexcept { return _buckets; }
  [[nodiscard]] const std::vector<bucket_cost>& costs() const noexcept { return _costs; }

 private:
  std::vector<std::size_t> _buckets;
  std::vector<graph_exec> _execs;
  std::vector<bucket_cost> _costs;
};

}  // namespace resident
