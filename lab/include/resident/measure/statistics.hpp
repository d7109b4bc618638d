#pragma once
// Summary statistics of response times, as every benchmark reports them (docs/design.md,
// "Measurement definitions"): n, mean, p50, p99, p99.9, max, min, stddev, jitter, plus the
// quartiles and Tukey whiskers a box plot needs. Pure CPU code; units are whatever the caller
// passes (the benchmarks pass microseconds).

#include <cstddef>
#include <span>

namespace resident::measure {

struct summary {
  std::size_t n{};
  double mean{}, p50{}, p99{}, p999{}, max{}, min{};
  /// Population standard deviation: sqrt(sum((x - mean)^2) / n), not the n-1 sample estimate,
  /// because a run's samples are the whole population being described, not a sample of it.
  double stddev{};
  double jitter{};  // max - min
  double p25{}, p75{};
  /// Tukey whiskers: the smallest and largest samples inside [p25 - 1.5 IQR, p75 + 1.5 IQR],
  /// IQR = p75 - p25. Samples beyond them are outliers; min and max still include them. With
  /// very few samples a whisker is clamped to the box edge (p25 / p75) when no sample lies
  /// between the fence and the interpolated quartile, so min <= whisker_low <= p25 always.
  double whisker_low{}, whisker_high{};
};

/// Summarizes `values` (any order; copied and sorted internally). Percentiles use
/// percentile_sorted(). Throws std::invalid_argument when `values` is empty or holds a NaN or an
/// infinity (a non-finite latency is a measurement bug, and NaN would break the sort).
[[nodiscard]] summary summarize(std::span<const double> values);

/// The q-quantile (q in [0, 1]) of ascending `sorted`, interpolating linearly between the two
/// closest ranks like numpy's default 'linear' method: h = (n - 1) q, result = x[floor(h)] +
/// (h - floor(h)) (x[floor(h) + 1] - x[floor(h)]). Throws std::invalid_argument when `sorted`
/// is empty or q is outside [0, 1]. Does not check that `sorted` is sorted.
[[nodiscard]] double percentile_sorted(std::span<const double> sorted, double q);

}  // namespace resident::measure
