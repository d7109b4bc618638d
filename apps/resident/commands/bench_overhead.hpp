#pragma once
// resident bench overhead: the framework's fixed costs (bench/overhead_bench.hpp).

#include <string>

#include "bench/overhead/overhead_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_overhead_command_settings {
  bench::overhead_settings overhead;
  bool quick{false};
  std::string json;

  /// The benchmark's settings: --quick applied, validated.
  [[nodiscard]] bench::overhead_settings resolve() const;
};

CLI::App* add_bench_overhead_options(CLI::App& bench, bench_overhead_command_settings& settings);
[[nodiscard]] command add_bench_overhead_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_overhead(const bench_overhead_command_settings& settings);

}  // namespace resident::cli
