// resident plan (see plan.hpp).

#include "commands/plan.hpp"

#include <iostream>

namespace resident::cli {

CLI::App* add_plan_options(CLI::App& root, plan_command_settings& s) {
  auto* app = root.add_subcommand(
      "plan", "SM partitions for resident loops: response bounds, deadlines, fit (no GPU)");
  app->add_option("file", s.plan.file, "taskset (YAML, see docs/plan.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("--sm-count", s.plan.sm_count, "plan for N SMs instead of device.sm_count")
      ->check(whole_in(1, max_sm_count));
  app->add_option("--json", s.plan.json, "write the plan as JSON here");
  app->add_flag("--profile", s.plan.profile,
                "measure each loop's workload on partitions of --profile-sizes (GPU)");
  app->add_option("--profile-sizes", s.profile_sizes, "partition sizes to profile")
      ->capture_default_str();
  app->add_option("--profile-samples", s.plan.profile_samples, "samples per size")
      ->check(whole_in(1, 1'000'000))
      ->capture_default_str();
  return app;
}

command add_plan_command(CLI::App& root) {
  auto s = std::make_shared<plan_command_settings>();
  return {add_plan_options(root, *s), [s] { return run_plan_command(*s); }};
}

bench::plan_settings plan_command_settings::resolve() const {
  bench::plan_settings out = plan;
  out.profile_sizes = positive_numbers(profile_sizes, "--profile-sizes");
  return out;
}

int run_plan_command(const plan_command_settings& s) {
  const bench::plan_settings plan = s.resolve();
  if (plan.profile && !have_gpu()) return no_gpu("plan --profile");
  return bench::run_plan(plan, std::cout);
}

}  // namespace resident::cli
