#pragma once
// Small helpers the parts of bench lab share (internal to the bench).

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/common.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/measure/statistics.hpp"

namespace resident::bench::lab_detail {

inline double median(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : measure::summarize(v).p50;
}

inline double us_since(std::int64_t start_ns) {
  return static_cast<double>(now_ns() - start_ns) / 1e3;
}

inline double relative_error(double value, double reference) {
  return reference == 0 ? std::fabs(value) : std::fabs(value - reference) / std::fabs(reference);
}

inline void sync(stream_view s) { RESIDENT_CUDA_TRY(cudaStreamSynchronize(s.get())); }

}  // namespace resident::bench::lab_detail
