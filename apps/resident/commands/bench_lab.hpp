#pragma once
// resident bench lab: the four-operation pipeline in eager, stream and graph submission modes,
// graph pools and graph updates (bench/lab_bench.hpp).

#include <string>

#include "bench/lab/lab_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_lab_command_settings {
  bench::lab_settings lab;
  std::string order{"eager,stream,graph,persistent"};
  bool quick{false};
  std::string json;

  /// The benchmark's settings: --order split, --quick applied, validated.
  [[nodiscard]] bench::lab_settings resolve() const;
};

CLI::App* add_bench_lab_options(CLI::App& bench, bench_lab_command_settings& settings);
[[nodiscard]] command add_bench_lab_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_lab(const bench_lab_command_settings& settings);

}  // namespace resident::cli
