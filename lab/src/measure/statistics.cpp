#include "resident/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace resident::measure {

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("percentile_sorted: no values");
  if (!(q >= 0.0 && q <= 1.0)) {  // also rejects NaN
    throw std::invalid_argument("percentile_sorted: q = " + std::to_string(q) +
                                " is outside [0, 1]");
  }
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();  // q = 1, or a single value
  const double frac = h - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

summary summarize(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("summarize: no values");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw std::invalid_argument("summarize: value " + std::to_string(i) + " is not finite (" +
                                  std::to_string(values[i]) + ")");
    }
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());

  summary s;
  s.n = sorted.size();
  const auto n = static_cast<double>(s.n);

  // Corrected two-pass algorithm: the second pass removes the rounding error of the first mean,
  // and the variance is computed from deviations, not from sum(x^2) - n mean^2, which cancels
  // catastrophically for latencies with a large common offset.
  double sum = 0.0;
  for (const double v : sorted) sum += v;
  double mean = sum / n;
  double dev_sum = 0.0;
  double dev_sq_sum = 0.0;
  for (const double v : sorted) {
    const double d = v - mean;
    dev_sum += d;
    dev_sq_sum += d * d;
  }
  mean += dev_sum / n;
  const double variance = std::max(0.0, (dev_sq_sum - dev_sum * dev_sum / n) / n);
  // Rounding can push the mean of identical values a hair outside [min, max]; keep it inside.
  s.mean = std::clamp(mean, sorted.front(), sorted.back());
  s.stddev = std::sqrt(variance);

  s.min = sorted.front();
  s.max = sorted.back();
  s.jitter = s.max - s.min;
  s.p25 = percentile_sorted(sorted, 0.25);
  s.p50 = percentile_sorted(sorted, 0.50);
  s.p75 = percentile_sorted(sorted, 0.75);
  s.p99 = percentile_sorted(sorted, 0.99);
  s.p999 = percentile_sorted(sorted, 0.999);

  const double iqr = s.p75 - s.p25;
  const double fence_low = s.p25 - 1.5 * iqr;
  const double fence_high = s.p75 + 1.5 * iqr;
  // Both searches find a sample: fence_low <= p25 <= max and fence_high >= p75 >= min. With
  // very few samples an interpolated quartile can sit in a gap wider than its fence (e.g.
  // {0, 10, 10, 10}: p25 = 7.5, fence 3.75, first sample above it 10), so clamp the whiskers to
  // the box to keep min <= whisker_low <= p25 and p75 <= whisker_high <= max.
  s.whisker_low = std::min(*std::lower_bound(sorted.begin(), sorted.end(), fence_low), s.p25);
  s.whisker_high =
      std::max(*std::prev(std::upper_bound(sorted.begin(), sorted.end(), fence_high)), s.p75);
  return s;
}

}  // namespace resident::measure
