#pragma once
// An emulated display engine and the egress operator that feeds it.
//
//   display_tx (egress, in the DAG)                 display (engine kernel, own stream)
//   ──────────────────────────────                  ──────────────────────────────────
//   linear RGB ──gamma──▶ back buffer ──flip req──▶ latch at the next scanout start
//                         (front buffer in           scanout event {start, buffer, frame}
//                          front_buffer mode)        raster: the probe rows at their line time,
//                                                    read from the scanned buffer itself
//                                                    photodiode edge {t_pd, frame}
//
// The engine is one persistent block on the device clock (%globaltimer). With a fixed clock a
// scanout starts on every vblank of a fixed grid and a flip waits for the next one; with
// variable refresh (G-SYNC-like) a flip starts a scanout at once when the minimum period has
// passed since the last one, else when it has, and without flips the panel rescans the current
// frame at min_refresh_hz. The emulated photodiode sees the probe rectangle's pixels as the
// raster reaches them, so a frame that misses a vblank shows as latency.
//
// While the engine runs, a cudaDeviceSynchronize() elsewhere in the process waits for it, and so
// may cudaFree: synchronize streams or events instead, and allocate before start() and free
// after stop().

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/io/bayer.hpp"
#include "resident/io/frame.hpp"

namespace resident::io {

enum class display_sync : std::uint8_t {
  fixed,     // scanouts on a fixed vblank grid; a flip waits for the next vblank
  variable,  // variable refresh: a flip starts a scanout once the minimum period has passed
};

enum class present_mode : std::uint8_t {
  flip,          // the egress writes the back buffer and requests a flip
  front_buffer,  // the egress writes the buffer being scanned out (tears; lowest latency)
};

struct display_config {
  std::uint32_t width{1920};  // the scanout image, RGBA8, rows packed tightly
  std::uint32_t height{1080};
  double refresh_hz{240.0};     // fixed: the vblank rate; variable: the maximum rate
  double min_refresh_hz{30.0};  // variable: the panel rescans after 1/min_refresh_hz unflipped
  display_sync sync{display_sync::variable};
  present_mode mode{present_mode::flip};
  led_marker probe{};                 // the photodiode's rectangle (width 0: no photodiode)
  std::uint8_t probe_threshold{128};  // mean luma (0..255) above which the probe reads lit
  std::size_t event_capacity{4096};   // scanout and photodiode events held until drained
  std::size_t commit_capacity{4096};  // egress commits held until drained
};

/// One scanout: when it began, what it showed. Device clock (%globaltimer) nanoseconds.
struct scanout_event {
  std::uint64_t start_ns{0};
  std::uint64_t frame{0};            // the frame number tagged on the buffer shown (0: none)
  std::uint64_t flip_request_ns{0};  // the latched flip's request time; 0 when none was latched
  std::uint32_t buffer{0};           // 0 or 1
  std::uint32_t flipped{0};          // 1 when this scanout latched a flip
};

/// The photodiode saw its probe go from unlit to lit.
struct photodiode_event {
  std::uint64_t t_ns{0};   // device clock: when the raster read the probe's rows
  std::uint64_t frame{0};  // the frame number tagged on the buffer scanned out
};

/// An egress commit: the frame written and when its flip was requested (the end point of the
/// software processing latency).
struct display_commit {
  std::uint64_t frame{0};
  std::uint64_t commit_ns{0};  // device clock
};

struct display_counters {
  std::uint64_t scanouts{0};
  std::uint64_t flips_latched{0};     // flips (presents, in front_buffer mode) taken at a scanout
  std::uint64_t flips_replaced{0};    // flip requests withdrawn for a newer frame before latching
  std::uint64_t frames_written{0};    // frames the egress wrote
  std::uint64_t corrupt_frames{0};    // frames the egress refused (integrity not ok)
  std::uint64_t rewritten_frames{0};  // of those, frames whose ring slot was rewritten meanwhile
  std::uint64_t events_dropped{0};    // scanout and photodiode events lost to a full ring
};

namespace detail {

/// The flip word (device memory; engine and egress change it only by compare-and-swap):
/// bit 0 the buffer scanned out, bit 1 a flip is pending, bit 2 the buffer it asks for.
[[nodiscard]] constexpr std::uint32_t flip_front(std::uint64_t w) noexcept {
  return static_cast<std::uint32_t>(w & 1U);
}
[[nodiscard]] constexpr bool flip_pending(std::uint64_t w) noexcept { return (w & 2U) != 0; }
[[nodiscard]] constexpr std::uint32_t flip_target(std::uint64_t w) noexcept {
  return static_cast<std::uint32_t>((w >> 2) & 1U);
}
[[nodiscard]] constexpr std::uint64_t flip_word(std::uint32_t front, bool pending,
                                                std::uint32_t target) noexcept {
  return std::uint64_t{front & 1U} | (pending ? 2U : 0U) | std::uint64_t{target & 1U} << 2;
}

/// Device memory shared by the engine and the egress. The engine writes only the flip word
/// (latching); the egress everything else. The commit ring follows it.
struct display_shared {
  unsigned long long flip;       // flip_word(...)
  std::uint64_t tag[2];          // frame number last written into each buffer
  std::uint64_t request_ns[2];   // when the flip to each buffer was requested
  std::uint64_t flips_replaced;  // egress counters
  std::uint64_t frames_written;
  std::uint64_t corrupt_frames;
  std::uint64_t rewritten_frames;  // of corrupt_frames: frame_integrity::overwritten
  std::uint64_t commits;           // entries written into the commit ring
  std::uint32_t arrived;           // the egress grid's coordination (reset by its last block)
  std::uint32_t done;
  std::uint32_t ready;
  std::uint32_t target;
};

/// Host-mapped words between the host and the engine, each with one writer.
struct display_host_words {
  // host -> engine
  std::uint32_t stop;
  std::uint32_t pad0;
  std::uint64_t scanouts_read;  // ring entries the host has drained
  std::uint64_t photodiode_read;
  std::uint64_t stop_hold_ns;  // fault injection: a stop takes effect this long after it is seen
  // engine -> host (its own cache line)
  alignas(64) std::uint64_t scanouts_written;
  std::uint64_t photodiode_written;
  std::uint64_t scanouts;
  std::uint64_t flips_latched;
  std::uint64_t events_dropped;
  std::uint64_t started;       // 1 once the engine kernel runs
  std::uint64_t stop_seen_ns;  // when the engine first saw a held stop request (0: not yet)
};

}  // namespace detail

/// Device pointers for the egress kernel (kernel argument).
struct display_view {
  std::uint8_t* buffers[2]{};  // RGBA8 scanout buffers
  std::size_t pitch{0};        // bytes between rows (4 * width)
  std::uint32_t width{0};
  std::uint32_t height{0};
  present_mode mode{present_mode::flip};
  detail::display_shared* shared{};  // flip word, frame tags, counters
  display_commit* commit_ring{};     // commit_capacity entries
  std::uint32_t commit_capacity{0};
};

class display {
 public:
  explicit display(display_config c);  // allocates device and host-mapped memory: needs a GPU
  display(display&&) noexcept;
  display& operator=(display&&) noexcept;
  display(const display&) = delete;
  display& operator=(const display&) = delete;
  ~display();  // stops the engine (never throws; reports a failure to stop on stderr)

  /// Launches the engine kernel on the display's own non-blocking stream. Throws when it runs.
  void start();
  /// Asks the engine to stop and waits up to `timeout` for its kernel to end; throws
  /// std::runtime_error when it did not. No-op when not running.
  void stop(std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));
  [[nodiscard]] bool running() const noexcept { return _running; }

  /// Events recorded since the last drain, oldest first; the engine keeps running.
  [[nodiscard]] std::vector<scanout_event> drain_scanouts();
  [[nodiscard]] std::vector<photodiode_event> drain_photodiode();
  /// Egress commits since the last drain (device memory, read on the display's copy stream).
  [[nodiscard]] std::vector<display_commit> drain_commits();
  [[nodiscard]] display_counters counters() const;

  /// Fault injection (tests of tear-down): from now on, the engine ends only `hold` after it
  /// sees a stop request, so stop() with a shorter timeout fails as for an engine that hangs.
  /// The display then leaks its memory rather than free it under a running kernel.
  void inject_stop_hold(std::chrono::nanoseconds hold);

  /// The buffer being scanned out now (0 or 1).
  [[nodiscard]] std::uint32_t front() const;
  /// The frame number tagged on buffer `index` (0 or 1): the frame last written into it.
  [[nodiscard]] std::uint64_t buffer_frame(std::uint32_t index) const;
  /// Copies the front buffer (or buffer `index`) into `out` (width * height * 4 bytes, tight)
  /// on the display's copy stream, synchronously. Off the critical path (PNG dumps, tests).
  void copy_front(std::span<std::uint8_t> out) const;
  void copy_buffer(std::uint32_t index, std::span<std::uint8_t> out) const;
  /// Test and set-up helper: fills buffer `index` from `rgba` (tight) and tags it `frame`.
  void fill_buffer(std::uint32_t index, std::span<const std::uint8_t> rgba, std::uint64_t frame);

  [[nodiscard]] const display_config& config() const noexcept { return _config; }
  [[nodiscard]] display_view device_view() const noexcept { return _view; }
  [[nodiscard]] std::size_t image_bytes() const noexcept {
    return std::size_t{_config.width} * _config.height * 4;
  }

 private:
  /// stop() that reports instead of throwing; false when the engine may still be running.
  bool stop_noexcept() noexcept;
  /// Memory the engine may still use when it did not stop: never freed (as the loops do).
  void leak_memory() noexcept;

  display_config _config;
  device_buffer _pixels;  // both scanout buffers
  device_buffer _shared;  // detail::display_shared + commit ring
  host_mapped_buffer _host;
  display_view _view{};
  stream _engine_stream;
  stream _copy_stream;
  bool _running{false};
  std::uint64_t _scanouts_read{0};
  std::uint64_t _photodiode_read{0};
  std::uint64_t _commits_read{0};
};

/// The CPU reference of the egress's gamma mapping: round(255 * (v / full)^(1 / gamma)), with v
/// clamped to [0, full]. full is 65535 for rgba16 input, 255 for rgba8.
[[nodiscard]] std::uint8_t gamma_encode(std::uint32_t v, std::uint32_t full, double gamma);

/// Egress operator: writes its linear "rgb" image (display width x height, rgba16 or rgba8 by
/// parameter `input`) gamma-encoded into the display's back buffer (front buffer in
/// front_buffer mode), tags it with the loop's current sample and requests a flip, then stamps
/// stage::commit. A frame whose "integrity" input is not ok() is not written, only counted
/// (display_counters::corrupt_frames). Parameters: gamma (2.2), input ("rgba16" | "rgba8").
/// Outside a loop (direct submission) the frame number is 0.
class display_tx final : public Operator {
 public:
  explicit display_tx(std::shared_ptr<display> d) : _display(std::move(d)) {}
  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;
  /// Its form names no kernel of its own: it runs in the camera operators' kernel.
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] double gamma() const noexcept { return _gamma; }
  [[nodiscard]] const display& target() const noexcept { return *_display; }
  /// The encoding table in device memory (after initialize(); null before).
  [[nodiscard]] const std::uint8_t* lut() const noexcept { return _lut.data_as<std::uint8_t>(); }
  /// Whether its input is RGBA16 (else RGBA8).
  [[nodiscard]] bool rgba16_input() const noexcept { return _rgba16; }

 private:
  std::shared_ptr<display> _display;
  double _gamma{2.2};
  bool _rgba16{true};
  device_buffer _lut;   // 65536 or 256 entries: linear value -> encoded byte
  unsigned _blocks{1};  // the egress kernel's grid, sized once (display_tx_blocks)
};

namespace detail {
void launch_display_engine(const display_view& view, const display_config& c,
                           display_host_words* host, void* scanout_ring, void* photodiode_ring,
                           cudaStream_t s);
/// The egress kernel's grid for `view` on the current device: a few blocks per SM, each looping
/// over its share, so every block is resident at once. Queries the device: call it once.
[[nodiscard]] unsigned display_tx_blocks(const display_view& view);
void launch_display_tx(const display_view& view, const void* rgb, bool rgba16,
                       const std::uint8_t* lut, const frame_integrity* integrity, loop_state* loop,
                       unsigned blocks, cudaStream_t s);
}  // namespace detail

}  // namespace resident::io
