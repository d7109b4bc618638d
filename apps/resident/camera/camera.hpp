#pragma once
// The camera-to-display application: an emulated camera behind a sensor bridge, the imaging
// operators and an emulated display, one Application run in any mode.
//
//   sensor_bridge ─▶ frame_rx ─▶ csi2_reconstruct ─▶ raw_isp ─▶ demosaic ─▶ display_tx ─▶ display
//   (handler)                        └──────────── integrity ──────────────────┘
//
// Modes (item 6 of the camera pipeline's design): `cpu-hostmem` is CPU-driven without GPUDirect
// (frames land in pinned host memory; the host sees the frame, copies it in and launches: eager
// mode), `host-graph` CPU-driven with GPUDirect (device ring; the host polls the host-mapped
// metadata mirror and launches the graph), `while` and `tail` GPU-resident. `eager` (device ring,
// stream launches) is there for completeness.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resident/app/application.hpp"
#include "resident/exec/executor.hpp"
#include "resident/exec/mode.hpp"
#include "resident/io/bayer.hpp"
#include "resident/io/display.hpp"
#include "resident/io/sensor_bridge.hpp"
#include "resident/measure/threads.hpp"

namespace resident::camera {

/// What a camera configuration may ask for (docs/camera.md, "Limits"). Each bound is a key's
/// range or a budget of the buffers the run allocates; beyond them a run would not fit in memory
/// or could not keep its rate, so parse_camera_settings refuses the file instead.
namespace limits {
inline constexpr std::int64_t max_side = 16384;  // camera.width, camera.height (16K)
/// One frame's CSI-2 packets: 256 MiB (a 16384 x 8192 RAW12 frame is 192 MiB).
inline constexpr std::size_t max_frame_bytes = std::size_t{256} << 20;
/// The ring of frames in GPU memory (ring_slots frames), and the prebuilt frames
/// (distinct_frames, held on the host and staged on the GPU): 4 GiB each.
inline constexpr std::size_t max_ring_bytes = std::size_t{4} << 30;
inline constexpr std::int64_t max_ring_slots = 1024;
/// camera.rate_hz: the sensor thread spins the last 150 us before each frame start, so a
/// period must be longer than that for frames to start on time: 5 kHz (200 us) at most (bench
/// camera drives 2 kHz). Below 1 Hz a run of --frames takes hours.
inline constexpr double min_rate_hz = 1.0;
inline constexpr double max_rate_hz = 5000.0;
/// display.refresh_hz and min_refresh_hz: what real panels do (1 Hz VRR floors to 1000 Hz).
inline constexpr double min_refresh_hz = 1.0;
inline constexpr double max_refresh_hz = 1000.0;
inline constexpr double max_gamma = 10.0;
}  // namespace limits

struct camera_settings {
  io::sensor_config sensor;        // shape, format, Bayer order, rate, ring
  std::string photo{"astronaut"};  // a photograph of the set (lab png.hpp) or a PNG path
  // fused (the default): one camera_isp pass; unfused: csi2_reconstruct -> raw_isp -> demosaic
  // -> display_tx (a configuration that leaves pipeline.isp out and asks for what only the
  // unfused chain has, demosaic npp or a front-buffer display, gets the unfused chain).
  std::string isp{"fused"};
  std::string isp_grid{"resident"};  // fused, graph modes: resident (blocks that fit) | tiles
  std::string statistics{"previous-frame"};  // fused: previous-frame | same-frame white balance
  std::string demosaic{"malvar"};            // malvar | bilinear | npp
  std::string white_balance{"grey_world"};   // grey_world | none
  double gamma{2.2};
  io::display_config display;  // rate, sync, present mode (size and probe follow the sensor)
  double deadline_us{0};       // loop.deadline_us: the loop's deadline (0: none)
  double wcet_us{0};           // loop.wcet_us: the body's WCET, for the bound (0: none)
};

/// Reads a camera configuration (see examples/camera.yaml). Unknown keys and bad values are
/// errors naming the file, the key and what is allowed (config_error).
[[nodiscard]] camera_settings parse_camera_settings(std::string_view yaml,
                                                    const std::string& origin = "<camera>");
[[nodiscard]] camera_settings load_camera_settings(const std::filesystem::path& file);
/// True when the YAML file has a top-level `camera` section.
[[nodiscard]] bool is_camera_config(const std::filesystem::path& file);

struct camera_mode {
  std::string name;  // cpu-hostmem, eager, host-graph, while, tail, persistent
  execution_mode mode{execution_mode::while_loop};
  io::frame_delivery delivery{io::frame_delivery::device};
};
[[nodiscard]] camera_mode parse_camera_mode(std::string_view name);
/// The four the comparison needs: cpu-hostmem, host-graph, while, tail.
[[nodiscard]] std::vector<camera_mode> compared_camera_modes();

class camera_app final : public Application {
 public:
  camera_app(camera_settings s, std::shared_ptr<io::sensor_bridge> bridge,
             std::shared_ptr<io::display> display);
  void compose() override;

 private:
  camera_settings _settings;
  std::shared_ptr<io::sensor_bridge> _bridge;
  std::shared_ptr<io::display> _display;
};

struct camera_run_options {
  std::uint64_t frames{600};   // frames to process after the start
  std::filesystem::path dump;  // write first/last frames and a contact sheet here
  sample_policy policy{sample_policy::skip_duplicate};
  capture_order capture{capture_order::chain};  // run_options::capture
  std::uint64_t poll_ns{2'000'000};  // the handler's in-kernel polling budget (resident modes)
  /// persistent mode: the kernel's blocks. 0: as many as fit at once but 4 SMs' worth
  /// (run_options::persistent_blocks = 0 with io.frame_rx), which stay free for the bridge's
  /// commit kernel and the display engine (they must run beside the resident kernel: a grid
  /// that fills every SM may leave them no room). On the H200: 2 per SM, 256 blocks.
  int persistent_blocks{0};
  /// persistent mode: time each phase of the device forms (run_options::phase_times);
  /// camera_result::phases holds the summary.
  bool phase_times{false};
  int sensor_cpu{-1};  // pin the sensor thread here
  /// Ask for SCHED_FIFO for the sensor thread (it inherits the policy of the thread that starts
  /// it); camera_result::sensor_grant says what the OS granted
  bool sensor_realtime{false};
  /// CPU-driven modes: runs first on the loop thread (e.g. pin it, as the paper's baseline was)
  std::function<void()> on_loop_thread_start;
  bool progress{true};              // a progress line on stderr every second
  std::chrono::seconds timeout{0};  // 0: frames / rate + 10 s
  bool keep_screen{false};          // keep the last screen in camera_result::screen
  /// Called from the supervising thread every ~2 ms while the loop runs (tests inject faults
  /// through it); the loop counters so far.
  std::function<void(io::sensor_bridge&, const loop_counters&)> during;
  /// Called like `during`, with the display too (a soak checks the shown frames through it).
  std::function<void(io::sensor_bridge&, io::display&, const loop_counters&)> watch;
  std::chrono::nanoseconds deadline{0};  // run_options::deadline
  /// When set (from another thread), the run ends as if its frames were done: the loop is torn
  /// down and the result covers the frames so far (a soak ending early on an error elsewhere).
  const std::atomic<bool>* stop{nullptr};
  /// For runs of any length (bench soak): each batch of the loop's telemetry goes here as the
  /// supervisor drains it (run_options::on_telemetry, from its thread), and the run keeps
  /// neither the telemetry nor the display's scanout and photodiode events, so its memory does
  /// not grow with its length. camera_result's per-frame vectors (software_us, processed_frames,
  /// shown_frames, photon_us, stages) then stay empty.
  std::function<void(std::span<const telemetry_entry>)> on_telemetry;
};

/// One processed frame's path, device clock in nanoseconds (0 where nothing stamped it): where a
/// late frame spent its time (bench camera's stage breakdown).
struct frame_stages {
  std::uint64_t frame{0};
  std::uint64_t sensor_start_ns{0};   // the sensor began the frame (the bridge's log)
  std::uint64_t sensor_late_ns{0};    // how late the sensor thread enqueued it
  std::uint64_t arrival_ns{0};        // the bridge's metadata record landed
  std::uint64_t handler_start_ns{0};  // the handler pass that took it began polling
  std::uint64_t detect_ns{0};         // ... and saw it
  std::uint64_t release_ns{0};        // the controller released the DAG
  std::uint64_t commit_ns{0};         // the scanout buffer was written
};

/// What one run measured. Times are microseconds.
struct camera_result {
  std::string mode;
  loop_counters counters;
  std::uint64_t produced{0};  // frames the bridge delivered during the run
  io::display_counters display;
  std::uint64_t displayed{0};       // distinct frames scanned out
  std::vector<double> software_us;  // per processed frame: metadata arrival -> scanout written
  std::vector<std::uint64_t> software_frames;  // the frame number of each software_us sample
  std::vector<double> photon_us;               // per marked frame seen: LED on -> photodiode
  std::vector<std::uint64_t> photon_frames;    // the frame number of each photon_us sample
  measure::thread_grant sensor_grant;   // sensor_realtime: the policy the sensor thread inherited
  std::uint64_t marked_frames{0};       // LED frames produced while the loop ran
  std::uint64_t late_sensor_frames{0};  // frames the sensor thread delivered > 100 us late
  std::string error;                    // empty when the loop ran and stopped cleanly
  std::vector<std::filesystem::path> written;   // PNG files
  std::vector<std::uint64_t> processed_frames;  // frame numbers the DAG ran on (telemetry)
  std::vector<std::uint64_t> shown_frames;      // frame numbers scanned out, each once, in order
  std::vector<std::uint64_t> faulty_frames;     // frames an injected fault hit (bridge log)
  std::vector<std::uint8_t> screen;             // keep_screen: the front buffer at the end
  std::uint64_t screen_frame{0};                // keep_screen: the frame tagged on it
  std::vector<phase_time> phases;               // phase_times: per phase of a DAG pass
  std::vector<frame_stages> stages;             // per processed frame, in order
};

/// A processed frame's software latency from its telemetry entry: the bridge's metadata arrival
/// to the scanout written, device clock, in µs; nothing for a repeat or an entry that lacks
/// either stamp.
[[nodiscard]] std::optional<double> software_latency_us(const telemetry_entry& e) noexcept;

/// Each processed frame's stages from the loop's telemetry and the bridge's log.
[[nodiscard]] std::vector<frame_stages> stages_of(const std::vector<telemetry_entry>& telemetry,
                                                  const std::vector<io::frame_log>& log);

/// Builds the bridge and display for `s`, runs the pipeline in `m` until `o.frames` frames were
/// processed (or the timeout), and tears everything down. Throws for a bad configuration.
[[nodiscard]] camera_result run_camera(const camera_settings& s, const camera_mode& m,
                                       const camera_run_options& o, const io::rgb8_image& photo);

/// The photograph `name` from the photograph set, or a PNG file; a clear error when missing.
[[nodiscard]] io::rgb8_image load_photo(const std::string& name);
/// A procedural test card (colour bars over a gradient, a checkerboard band): the camera's
/// picture where the photograph set was not fetched (a machine without network).
[[nodiscard]] io::rgb8_image test_card(std::uint32_t width, std::uint32_t height);

/// Prints the frame accounting and the latency summary of `r`.
void print_camera_result(const camera_result& r);
/// The table of run_options::phase_times' summary (stdout).
void print_phase_times(const std::vector<phase_time>& phases);

}  // namespace resident::camera
