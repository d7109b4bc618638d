#pragma once
// resident bench io: sensor -> actuator latency through emulated I/O (bench/io_bench.hpp).

#include <string>

#include "bench/io/io_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_io_command_settings {
  bench::io_settings io;
  std::string modes{"while,tail,host-graph,eager"};
  std::string workloads{"empty,matmul6"};
  std::string mailbox_formats{"automatic"};
  std::string contention{"none,stress"};
  bool quick{false};
  bool no_fifo{false};
  bool no_fuse{false};
  bool peers{false};
  std::string json;

  /// The benchmark's settings: the lists split, --quick and --no-fifo applied, validated.
  [[nodiscard]] bench::io_settings resolve() const;
};

CLI::App* add_bench_io_options(CLI::App& bench, bench_io_command_settings& settings);
[[nodiscard]] command add_bench_io_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_io(const bench_io_command_settings& settings);

}  // namespace resident::cli
