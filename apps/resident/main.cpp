// resident: the command-line front end. One file per command under commands/:
//
//   resident info                      the GPU and build this binary sees
//   resident run [CONFIG.yaml] ...     the lab pipeline between an emulated sensor and actuator,
//                                      in one or all execution modes, every output checked
//   resident bench io|overhead|lab|loops|reef|camera ...
//                                      benchmarks: a human table last, JSON receipts
//   resident sim [OPS.yaml]            the logical issue-order model of streams (no GPU)
//   resident plan TASKSET.yaml         SM partitions for a set of resident loops (no GPU)
//   resident report RECEIPT...         receipts -> plain-text table and one HTML page (no GPU)

#include <string>
#include <vector>

#include "commands/bench_camera.hpp"
#include "commands/bench_io.hpp"
#include "commands/bench_lab.hpp"
#include "commands/bench_link.hpp"
#include "commands/bench_loops.hpp"
#include "commands/bench_overhead.hpp"
#include "commands/bench_python.hpp"
#include "commands/bench_reef.hpp"
#include "commands/bench_soak.hpp"
#include "commands/command.hpp"
#include "commands/info.hpp"
#include "commands/plan.hpp"
#include "commands/report.hpp"
#include "commands/run.hpp"
#include "commands/sim.hpp"
#include "resident/cuda/device.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/version.hpp"

#ifndef RESIDENT_VERSION
#define RESIDENT_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  // Before any CUDA call: every kernel is loaded when the context is made. Under lazy loading a
  // kernel first launched beside a running resident loop (a best-effort kernel, another loop's
  // graph) can wait for that loop to end. An explicit CUDA_MODULE_LOADING is kept.
  resident::request_eager_module_loading();
  namespace cli = resident::cli;
  CLI::App root{"resident: timing-predictable GPU pipelines"};
  root.set_version_flag("--version", std::string("resident ") + RESIDENT_VERSION + " (commit " +
                                         std::string(resident::git_commit()) + ")");
  root.require_subcommand(1);
  const std::string line = resident::measure::command_line(argc, argv);
  std::vector<cli::command> commands;
  commands.push_back(cli::add_info_command(root));
  commands.push_back(cli::add_run_command(root));
  CLI::App* bench = cli::add_bench_group(root);
  commands.push_back(cli::add_bench_io_command(*bench, line));
  commands.push_back(cli::add_bench_overhead_command(*bench, line));
  commands.push_back(cli::add_bench_lab_command(*bench, line));
  commands.push_back(cli::add_bench_loops_command(*bench, line));
  commands.push_back(cli::add_bench_link_command(*bench, line));
  commands.push_back(cli::add_bench_reef_command(*bench, line));
  commands.push_back(cli::add_bench_camera_command(*bench, line));
  commands.push_back(cli::add_bench_soak_command(*bench, line));
  for (auto& c : cli::add_python_bench_commands(*bench)) commands.push_back(std::move(c));
  commands.push_back(cli::add_report_command(root));
  commands.push_back(cli::add_sim_command(root));
  commands.push_back(cli::add_plan_command(root));
  return cli::parse_and_run(root, commands, argc, argv);
}
