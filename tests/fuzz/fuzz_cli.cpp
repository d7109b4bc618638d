// The command line (resident ...) up to its parse: parse_and_run over the real option sets of
// plan, report and sim. sim runs in full (it needs no GPU); plan and report stop after their
// parse (plan after --profile-sizes), because their commands link code built by nvcc (the
// profiling workloads, the io benchmark's targets). `run` is left out for the same reason: its
// translation unit holds the lab pipeline, whose operators are .cu files (fuzz_lab_config
// covers its configuration). Input: one argument per line.
//
// Everything happens inside a private temporary folder (the working directory): an argument
// that could name a path outside it (absolute, or with "..") is replaced by "out", so --json
// and the like write only there, and only the folder's own files can be read.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "commands/command.hpp"
#include "commands/plan.hpp"
#include "commands/report.hpp"
#include "commands/sim.hpp"
#include "fuzz_support.hpp"

namespace {

namespace cli = resident::cli;

/// The scratch folder, entered, with the files the seed command lines name.
void prepare() {
  static const bool ready = [] {
    const auto& dir = resident::fuzz::scratch_dir();
    const std::filesystem::path fixtures = RESIDENT_FUZZ_FIXTURES;
    for (const char* name : {"sim_lab.yaml", "sim_race.yaml", "taskset_fits.yaml"}) {
      std::filesystem::copy_file(fixtures / name, dir / name,
                                 std::filesystem::copy_options::overwrite_existing);
    }
    if (std::freopen("/dev/null", "w", stdout) == nullptr) std::abort();
    return true;
  }();
  (void)ready;
}

std::vector<std::string> arguments_of(std::string_view text) {
  std::vector<std::string> args{"resident"};
  std::size_t start = 0;
  while (start <= text.size() && args.size() < 24) {
    const auto end = std::min(text.find('\n', start), text.size());
    std::string arg(text.substr(start, std::min<std::size_t>(end - start, 512)));
    if (!arg.empty() && (arg.find('/') == 0 || arg.find("..") != std::string::npos ||
                         arg.find('~') == 0 || arg.find("=/") != std::string::npos)) {
      arg = "out";
    }
    args.push_back(std::move(arg));
    start = end + 1;
  }
  return args;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  prepare();
  std::vector<std::string> args = arguments_of(resident::fuzz::text_of(data, size));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  CLI::App root{"resident: timing-predictable GPU pipelines"};
  root.set_version_flag("--version", "resident fuzz");
  root.require_subcommand(1);
  cli::plan_command_settings plan;
  cli::report_settings report;
  cli::sim_settings sim;
  std::vector<cli::command> commands;
  commands.push_back({cli::add_plan_options(root, plan), [&plan] {
                        (void)plan.resolve();
                        return 0;
                      }});
  commands.push_back({cli::add_report_options(root, report), [] { return 0; }});
  commands.push_back(cli::add_sim_command(root));
  try {
    (void)cli::parse_and_run(root, commands, static_cast<int>(args.size()), argv.data());
  } catch (const CLI::Error& e) {
    resident::fuzz::unexpected("CLI::Error", e.what());  // parse_and_run handles them all
  }
  return 0;
}
