#pragma once
// resident bench camera: the camera-to-display pipeline in every mode (bench/camera_bench.hpp),
// its receipt and HTML report (bench/camera_report.hpp).

#include <filesystem>
#include <string>

#include "bench/camera/camera_bench.hpp"
#include "commands/command.hpp"

namespace resident::cli {

struct bench_camera_command_settings {
  bench::camera_bench_settings camera;
  // Comma-separated lists; empty: the benchmark's defaults (or --quick's).
  std::string parts;
  std::string resolutions;
  std::string formats;
  std::string contention;
  std::string modes;
  std::string displays;
  std::string pipelines;
  bool quick{false};
  bool no_fifo{false};
  std::string out{"bench-out/camera.json"};
  std::string report{"camera-report.html"};
  std::string from;  // an existing receipt: judge its targets again and draw the report; no GPU

  /// The benchmark's settings: --quick first (numbers it sets give way to flags that changed
  /// them from their defaults), then the lists given, validated.
  [[nodiscard]] bench::camera_bench_settings resolve() const;
  /// Where the HTML report goes: --report, in --out's folder unless it names a folder itself.
  [[nodiscard]] std::filesystem::path report_path() const;
};

CLI::App* add_bench_camera_options(CLI::App& bench, bench_camera_command_settings& settings);
[[nodiscard]] command add_bench_camera_command(CLI::App& bench, const std::string& command_line);
[[nodiscard]] int run_bench_camera(const bench_camera_command_settings& settings);

}  // namespace resident::cli
