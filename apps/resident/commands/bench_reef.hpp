#pragma once
// resident bench reef: real-time loops beside best-effort inference under co-scheduling
// policies (bench/reef_bench.hpp). The command line sets what a run usually varies; every
// knob, those included, can come from --config FILE.yaml (bench/reef_config.hpp; the defaults
// are bench/configs/reef.yaml). Flags given override the file.

#include <cstdint>
#include <string>

#include "bench/reef/reef_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_reef_command_settings {
  std::string config;       // a reef configuration file; empty: the defaults
  std::string policies;     // empty: the file's
  std::string arrival;      // empty: the file's
  double rate_hz{0};        // 0: the file's
  std::int64_t samples{0};  // 0: the file's
  std::int64_t warmup{-1};  // -1: the file's
  bool quick{false};        // 1000 samples and 100 warm-up per policy, over the file and flags
  bool progress{false};
  bool no_fifo{false};
  std::string json;
  std::string command_line;  // for the receipt

  /// The benchmark's settings: the file's knobs (or the defaults), then the flags given;
  /// validated (std::invalid_argument naming the knob; file:line:col for the file's).
  [[nodiscard]] bench::reef_settings resolve() const;
};

CLI::App* add_bench_reef_options(CLI::App& bench, bench_reef_command_settings& settings);
[[nodiscard]] command add_bench_reef_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_reef(const bench_reef_command_settings& settings);

}  // namespace resident::cli
