#pragma once
// bench loops (internal to the bench): one configuration's run, N loops on their partitions
// with a sensor and observers (see loops_bench.hpp).

#include <iosfwd>
#include <string>
#include <vector>

#include "bench/loops/loops_bench.hpp"
#include "resident/exec/mode.hpp"

namespace resident::bench::loops_detail {

/// The cores of the measuring threads and what is left for the rest.
struct cpu_plan {
  int sensor{-1};
  std::vector<int> actuators;  // one per observer
  std::vector<int> others;     // everything else the process may use
};

/// Runs `count` loops in `mode` on partitions of `pc` under `contention` and returns the
/// configuration's result.
[[nodiscard]] nlohmann::json run_config(const loops_settings& s, execution_mode mode, int count,
                                        const partition_choice& pc, const std::string& contention,
                                        const cpu_plan& cpus, std::ostream& log);

}  // namespace resident::bench::loops_detail
