#pragma once
// resident bench camera: the camera-to-display pipeline (camera/camera.hpp) in every mode, in one
// process run so ratios between modes are valid:
//
//   software        metadata arrival -> scanout buffer written (device clock), per resolution,
//                   RAW format, host contention and mode, at a fast sensor rate
//   photon          LED on -> photodiode, 60 Hz sensor, 240 Hz variable-refresh display (flip;
//                   front buffer beside it for the GPU-resident modes) and a fixed 60 Hz one
//   operators       each imaging operator's kernels alone, CUDA events (camera_operators.hpp)
//   demosaic        our demosaic against NPP's: PSNR on photographs (times: operators)
//   statistics      previous-frame against same-frame white balance: PSNR on photographs
//                   panned under a change of illuminant (CPU pipeline; camera_statistics.hpp)
//
// The receipt holds one result per configuration and the camera pipeline's targets, each
// judged (judge_camera_targets); camera_report.hpp draws the HTML report from the receipt alone.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "camera/camera.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::bench {

/// Photon runs: a 60 Hz sensor whose every 4th frame is marked (the LED lit); the first two
/// marked frames after the start are not measured.
inline constexpr double camera_photon_rate_hz = 60.0;
inline constexpr std::uint32_t camera_photon_distinct_frames = 4;
inline constexpr std::size_t camera_photon_warmup_samples = 2;

struct camera_bench_settings {
  std::vector<std::string> parts{"software", "photon", "operators", "demosaic", "statistics"};
  std::vector<std::string> resolutions{"1080p", "4k"};
  std::vector<std::string> formats{"raw10", "raw12"};
  std::vector<std::string> contention{"none", "stress"};
  std::vector<std::string> modes{"cpu-hostmem", "host-graph", "while", "tail"};
  /// Photon runs' displays: vrr240-flip (the paper's setup), vrr240-front (GPU-resident modes
  /// only), fixed60-flip (vblank quantization).
  std::vector<std::string> displays{"vrr240-flip", "vrr240-front", "fixed60-flip"};
  /// Software runs' camera passes: unfused (four operators) and fused (camera_isp; not in
  /// cpu-hostmem, the unfused chain's CPU-driven baseline).
  std::vector<std::string> pipelines{"unfused"};
  double rate_hz{2000.0};       // software runs: sensor frame rate
  std::int64_t frames{20000};   // software runs: measured frames per run
  std::int64_t warmup{200};     // software runs: processed first, not measured
  int repeats{3};               // runs of a target configuration (the rest run once)
  double photon_seconds{10.0};  // per photon run (a marked frame every 4 frames at 60 Hz)
  int operator_reps{200};       // timed launches per operator
  int operator_warmup{20};
  std::uint64_t poll_ns{2'000'000};  // the handler's in-kernel polling budget (resident modes)
  std::string photo{"astronaut"};    // the camera's photograph
  int photos{4};                     // demosaic quality: at least this many photographs
  int sensor_cpu{-1};                // -1: chosen (highest free cores)
  int loop_cpu{-1};                  // the CPU-driven modes' loop thread
  bool realtime{true};               // ask SCHED_FIFO for the sensor and loop threads
  bool stress_ng{false};             // stress-ng instead of the built-in hogs
  std::string command;               // the exact argv, for the receipt

  /// --quick: 1000 frames, 1080p and 4K RAW12 quiet, 3 s photon runs, one run each (~60 s).
  void make_quick();
  /// Throws std::invalid_argument naming the flag and the bad value.
  void validate() const;
  [[nodiscard]] bool has_part(const std::string& part) const;
  /// Whether a part needs a GPU (all but statistics, which runs the CPU pipeline).
  [[nodiscard]] bool needs_gpu() const;
};

/// One measured configuration: a software or photon run of one mode.
struct camera_case {
  std::string part;        // software | photon
  std::string resolution;  // 1080p | 4k
  std::string format;      // raw10 | raw12
  std::string contention;  // none | stress
  std::string mode;        // a camera mode (camera::parse_camera_mode)
  std::string display;     // vrr240-flip | vrr240-front | fixed60-flip
  int runs{1};
  std::string pipeline{"unfused"};  // unfused | fused (pipeline.isp)

  /// What the receipt's results group by: "1080p raw12" (software), "photon vrr240-flip".
  [[nodiscard]] std::string workload() const;
  /// A configuration a J or max target is judged on (median of runs): 1080p RAW12 software and
  /// 240 Hz variable-refresh flip photon runs, GPU-resident modes.
  [[nodiscard]] bool judged_on_median() const;
};

/// The software cases of one contention level: resolution x format x mode, in that order.
[[nodiscard]] std::vector<camera_case> software_cases(const camera_bench_settings& s,
                                                      const std::string& contention);
/// The photon cases of one contention level (1080p RAW12): display x mode; front-buffer runs
/// only for GPU-resident modes, fixed 60 Hz only without contention.
[[nodiscard]] std::vector<camera_case> photon_cases(const camera_bench_settings& s,
                                                    const std::string& contention);

/// The camera configuration a case runs (sensor, pipeline, display).
[[nodiscard]] camera::camera_settings camera_settings_for(const camera_case& c,
                                                          const camera_bench_settings& s);
/// Frame rate of the case's sensor: --rate (software) or 60 Hz (photon).
[[nodiscard]] double sensor_rate(const camera_case& c, const camera_bench_settings& s);

/// What one run of a case measured.
struct camera_run {
  std::vector<double> us;      // latency samples after the warm-up, in frame order
  std::vector<double> t_s;     // each sample's frame start, seconds after the run's first frame
  std::uint64_t requested{0};  // samples asked for: frames (software), marked frames (photon)
  std::uint64_t produced{0};
  std::uint64_t processed{0};
  std::uint64_t dropped{0};
  std::uint64_t repeated{0};
  loop_counters counters;      // the loop's, deadline accounting included
  std::uint64_t corrupt{0};    // refused by the egress (never displayed)
  std::uint64_t rewritten{0};  // of those, frames whose ring slot the bridge rewrote meanwhile
  std::uint64_t written{0};    // written to the display
  std::uint64_t displayed{0};  // distinct frames scanned out
  std::uint64_t marked{0};     // LED frames produced
  std::uint64_t late_sensor_frames{0};
  std::string error;  // empty: the loop ran, stopped cleanly and its accounting adds up
  nlohmann::json threads = nlohmann::json::object();
  nlohmann::json stages;  // software runs: stage_breakdown of the measured frames (or null)
};

/// The run's latency samples (software or photon per the case) with the first `warmup` dropped,
/// and its frame accounting. An accounting that does not add up is an error of the run.
[[nodiscard]] camera_run measured_run(const camera::camera_result& r, const camera_case& c,
                                      std::size_t warmup, double rate_hz, std::uint64_t requested);

/// A case's result: kind (its part), mode, workload, contention, resolution, format, display;
/// the latency fields of measure::latency_result, each the median over the runs with samples
/// ("aggregate" says which); totals of the frame accounting; every run in "runs"; and for the
/// run of median jitter ("plotted_run") a time series and a histogram ("series", "histogram";
/// photon results also every sample, "points").
[[nodiscard]] nlohmann::json case_result(const camera_case& c, const std::vector<camera_run>& runs);

/// The camera pipeline's targets judged on a receipt's results, and the ratios it reports.
struct camera_verdicts {
  nlohmann::json targets = nlohmann::json::array();     // name, value, target, met, ...
  nlohmann::json not_judged = nlohmann::json::array();  // name, why
  nlohmann::json ratios = nlohmann::json::array();      // name, value, paper, ...
};
[[nodiscard]] camera_verdicts judge_camera_targets(const nlohmann::json& results);
/// Writes them into settings "targets", "targets_not_judged" and "ratios".
void record_verdicts(measure::receipt& receipt);

/// The receipt's settings for `s` (everything that defines the run), before any result.
[[nodiscard]] nlohmann::json camera_settings_json(const camera_bench_settings& s);

/// Runs the parts and returns the receipt; a progress line per configuration on `log`.
[[nodiscard]] measure::receipt run_camera_bench(const camera_bench_settings& settings,
                                                std::ostream& log);

/// Results whose run failed (an error, no samples, accounting that does not add up).
[[nodiscard]] std::vector<std::string> camera_failures(const measure::receipt& receipt);

}  // namespace resident::bench
