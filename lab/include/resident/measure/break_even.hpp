#pragma once
// When does a CUDA graph pay for itself? Setup (capture + instantiate) is paid once; each replay
// saves (baseline - replay) per iteration. The first reuse count at which the graph path is
// strictly cheaper in total is floor(setup / saving) + 1; with no saving there is none.

#include <cstdint>
#include <optional>

namespace resident::measure {

/// The smallest iteration count n with setup + n * replay < n * baseline, or nullopt when replay
/// saves nothing per iteration. Costs must be finite and non-negative (std::invalid_argument
/// otherwise); all three in the same unit.
[[nodiscard]] std::optional<std::int64_t> first_cheaper_reuse(double setup, double baseline,
                                                              double replay);

}  // namespace resident::measure
