#pragma once
// resident plan TASKSET.yaml [--sm-count N] [--json PATH]: the partition planner
// (resident/partition/planner.hpp) on the command line. No GPU is involved: the overheads come
// from the taskset or an overhead receipt, the body WCETs from the taskset.
//
// Exit status of run_plan: 0 when every loop meets its deadline on its own partition and the
// partitions fit on the device together, 3 when they do not (the reasons are printed), so a
// script can gate a deployment on it. Invalid input throws (plan_error and friends); the CLI turns
// that into status 1 like every other command.

#include <iosfwd>
#include <string>
#include <vector>

#include "resident/exec/mode.hpp"

namespace resident::bench {

struct plan_settings {
  std::string file;  // the taskset (YAML)
  int sm_count{-1};  // > 0: plan for this many SMs instead of the taskset's device.sm_count
  std::string json;  // write {"benchmark": "plan", "source", ...the plan} here when not empty
  /// Measure the WCET table of every loop that names a workload (needs a GPU): the workload
  /// runs in the loop's mode on a partition of each size in profile_sizes.
  bool profile{false};
  std::vector<int> profile_sizes{8, 16, 32, 64, 128};
  int profile_samples{300};  // samples per size; B(m) is the largest body span seen
};

/// B(m) of one workload: runs it in `mode` on an `sms`-SM partition for `samples` samples (one
/// at a time) and returns the largest device span from the controller's release to the end
/// marker's start. That span also holds the IF transition (or the tail launch), which
/// O_busy counts as well, so the bound errs on the safe side by that much.
[[nodiscard]] double profile_body_us(const std::string& workload, execution_mode mode, int sms,
                                     int samples);

/// Exit status when the taskset does not fit.
inline constexpr int plan_does_not_fit = 3;

/// Plans, prints the plan to `out` (and writes settings.json); returns 0 or plan_does_not_fit.
/// std::invalid_argument for an sm_count other than -1 that is not positive.
[[nodiscard]] int run_plan(const plan_settings& settings, std::ostream& out);

}  // namespace resident::bench
