#pragma once
// resident bench soak: the camera and mailbox pipelines side by side for minutes to days, every
// output checked (bench/soak_bench.hpp).

#include <string>

#include "bench/soak/soak_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_soak_command_settings {
  bench::soak_settings soak;
  bool quick{false};
  std::string json;

  /// The benchmark's settings: --quick applied, validated.
  [[nodiscard]] bench::soak_settings resolve() const;
};

CLI::App* add_bench_soak_options(CLI::App& bench, bench_soak_command_settings& settings);
[[nodiscard]] command add_bench_soak_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_soak(const bench_soak_command_settings& settings);

}  // namespace resident::cli
