#pragma once
// resident run [CONFIG.yaml]: the lab pipeline (rx -> affine -> square -> sum -> tx) between an
// emulated sensor and actuator, in one or all execution modes, every output checked. The
// configuration and the options are checked first, without a GPU; --check stops there.
// A configuration with a `camera` section (examples/camera.yaml) runs the camera-to-display
// pipeline instead: --frames per mode, --dump DIR for the first and last frames and a contact
// sheet as PNG. A pipeline file (an `operators` section, examples/config/pipeline.yaml) runs
// the pipeline it describes, --samples inputs one at a time per mode, outputs compared.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "commands/command.hpp"
#include "resident/exec/mode.hpp"
#include "resident/exec/run_options.hpp"

namespace resident::cli {

struct run_settings {
  std::string config;
  std::string mode{"all"};
  std::string policy{"skip-duplicate"};
  std::string capture{"chain"};  // run_options::capture: chain or forked
  std::int64_t samples{200};
  double rate_hz{1000.0};
  std::int64_t elements{4096};
  std::uint64_t sleep_ns{0};
  std::uint64_t poll_ns{0};
  std::string dot;
  bool no_fuse{false};  // run_options::fuse = false: separate controller and end marker
  /// run_options::persistent_blocks; -1: the configuration's default (the lab pipeline: 1; a
  /// camera: as many as fit but 4 SMs' worth)
  int persistent_blocks{-1};
  bool check{false};         // check the configuration and options, run nothing
  std::int64_t frames{600};  // camera: frames to process per mode
  std::string dump;          // camera: folder for the PNG dumps
  int sensor_cpu{-1};        // camera: core for the sensor thread
  bool phase_times{false};   // persistent mode: print the device time of each phase
  double deadline_us{0};     // run_options::deadline (0: none)
  double wcet_us{0};         // the body's WCET, for the timing model's bound (0: no bound)
  std::string overheads;     // a bench overhead receipt for the bound (default: the H200's)
  /// The options the command line gave ("--frames", ...): an option that does not apply to the
  /// configuration or the mode is an error, not silently ignored (add_run_options fills it).
  std::set<std::string> given;
};

/// The options of `s.given` that a lab run (camera false) or a camera run ignores, and the
/// ones its modes ignore (--persistent-blocks without --mode persistent, --no-fuse with it,
/// --poll-ns with host-driven modes only): std::invalid_argument naming the option and why.
void check_options_apply(const run_settings& settings, bool camera);

/// --dump (camera) and --dot: the folder must exist or be creatable, and be writable;
/// --sensor-cpu must name a CPU this process may run on. std::invalid_argument naming the flag.
void check_run_paths_and_cpu(const run_settings& settings);

/// --phase-times without --mode persistent: an std::invalid_argument saying so.
void check_phase_times(const run_settings& settings);

/// `s` with the lab configuration's `loop` section applied (deadline_us, wcet_us) where the
/// command line did not give them; config_error naming file:line for a bad key or value.
[[nodiscard]] run_settings with_loop_section(const run_settings& settings);
/// --overheads without --wcet-us, or naming no file: std::invalid_argument saying so.
void check_deadline_options(const run_settings& settings);
/// The timing model's response bound for a loop in `mode` at `rate_hz` (the planner's R on the
/// whole GPU, from the overheads receipt and --wcet-us), or why there is none ("no bound: no
/// WCET given"): an observed maximum is not a bound.
[[nodiscard]] std::string response_bound_text(const run_settings& settings, execution_mode mode,
                                              double rate_hz);
/// After a run: the deadline's misses and worst overrun (with --deadline-us), and the longest
/// release -> commit beside the bound.
void print_deadline_line(const run_settings& settings, const loop_counters& counters,
                         const std::string& bound);

/// The run options of a mailbox pipeline (the lab pipeline, a pipeline file) from the command
/// line: policy, capture, polling, fusion, persistent blocks, phase times, deadline, --dot;
/// validated (std::invalid_argument naming the option).
[[nodiscard]] run_options mailbox_run_options(const run_settings& settings);

/// The camera-to-display pipeline of a `camera` configuration (commands/run_camera.cpp).
[[nodiscard]] int run_camera_command(const run_settings& settings);
/// A pipeline file (an `operators` section: resident/ops/pipeline_config.hpp), fed one sample
/// at a time in each mode, outputs compared across modes (commands/run_pipeline.cpp).
[[nodiscard]] int run_pipeline_command(const run_settings& settings);

/// Registers `run`'s options on `run_settings`.
CLI::App* add_run_options(CLI::App& root, run_settings& settings);
[[nodiscard]] command add_run_command(CLI::App& root);

/// What a checked run will do.
struct checked_run {
  std::vector<execution_mode> modes;
  run_options options;
};

/// Checks the options and the configuration without a GPU: the modes, the policy, the run
/// options, and the pipeline composed and planned with the configuration (its YAML, operator
/// names and parameters). Throws the library's errors (config_error names file:line:col).
[[nodiscard]] checked_run check_run(const run_settings& settings);

/// check_run, then (unless --check) the pipeline in each mode; 0 when every output was right.
[[nodiscard]] int run_run(const run_settings& settings);

}  // namespace resident::cli
