#pragma once
// resident bench link: a loop on one GPU hands samples to a loop on another through
// io::device_link (bench/link/link_bench.hpp).

#include <string>

#include "bench/link/link_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_link_command_settings {
  bench::link_settings link;
  std::string sizes{"8294400,602112"};
  std::string modes{"while,tail,persistent"};
  bool quick{false};
  std::string json;

  /// The benchmark's settings: the lists split, --quick applied, validated.
  [[nodiscard]] bench::link_settings resolve() const;
};

CLI::App* add_bench_link_options(CLI::App& bench, bench_link_command_settings& settings);
[[nodiscard]] command add_bench_link_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_link(const bench_link_command_settings& settings);

}  // namespace resident::cli
