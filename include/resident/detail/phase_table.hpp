#pragma once
// persistent mode's phase times (run_options::phase_times): the summary of the kernel's stamp
// table. Internal: not part of the API.

#include <cstdint>
#include <vector>

#include "resident/exec/executor.hpp"

namespace resident::detail {

/// tear_down_report::phases from the kernel's stamp table: [0] the DAG passes stamped, then
/// rows of names.size() + 1 stamps (one before the first phase, one after each barrier), pass p
/// in row p % rows. `names` gives each interval's operator, form and phase. The
/// pass that tear-down ends writes a row it does not count, over the oldest, so the latest
/// min(passes, rows - 1) passes are summarized.
[[nodiscard]] std::vector<phase_time> summarize_phases(const std::vector<std::uint64_t>& table,
                                                       const std::vector<phase_time>& names,
                                                       std::uint32_t rows);

}  // namespace resident::detail
