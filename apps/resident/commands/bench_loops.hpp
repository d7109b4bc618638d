#pragma once
// resident bench loops: N concurrent loops, each on its own SM partition
// (bench/loops_bench.hpp).

#include <string>

#include "bench/loops/loops_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_loops_command_settings {
  bench::loops_settings loops;
  std::string counts{"1,5,10,15,20"};
  std::string modes{"while,host-graph"};
  std::string contention{"none"};
  bool quick{false};
  bool no_fifo{false};
  bool no_telemetry{false};
  std::string json;

  /// The benchmark's settings: the lists split, --quick (whose counts a --counts other than the
  /// default replaces), --no-fifo and --no-telemetry applied, validated.
  [[nodiscard]] bench::loops_settings resolve() const;
};

CLI::App* add_bench_loops_options(CLI::App& bench, bench_loops_command_settings& settings);
[[nodiscard]] command add_bench_loops_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_loops(const bench_loops_command_settings& settings);

}  // namespace resident::cli
