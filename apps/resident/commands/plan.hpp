#pragma once
// resident plan TASKSET.yaml: SM partitions for resident loops (bench/plan_command.hpp; no GPU
// unless --profile).

#include <string>

#include "commands/plan_command.hpp"
#include "commands/command.hpp"

namespace resident::cli {

/// The largest --sm-count: more SMs than any GPU has.
inline constexpr int max_sm_count = 1024;

struct plan_command_settings {
  bench::plan_settings plan;
  std::string profile_sizes{"8,16,32,64,128"};

  /// The planner's settings: --profile-sizes parsed (std::invalid_argument naming the flag).
  [[nodiscard]] bench::plan_settings resolve() const;
};

CLI::App* add_plan_options(CLI::App& root, plan_command_settings& settings);
[[nodiscard]] command add_plan_command(CLI::App& root);
[[nodiscard]] int run_plan_command(const plan_command_settings& settings);

}  // namespace resident::cli
