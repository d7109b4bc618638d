#pragma once
// An emulated camera behind a sensor bridge, and the data-ready handler that takes its frames.
//
//   sensor thread (pinned)          bridge stream                       the loop
//   ───────────────────────          ─────────────                       ────────
//   frame k starts at t0 + k·T  ──▶  payload copy into ring slot  ──▶  frame_rx polls `newest`,
//   readout ends                     (the NIC's DMA into GPU memory)    checks the slot's record,
//                                    then the slot's metadata record    writes a frame_ref, and
//                                    and `newest` (the write-with-      publishes the frame number
//                                    immediate), device clock stamped
//
// Frames are CSI-2 packet streams made before the run from a photograph (io::mosaic, then
// io::csi2::frame_packets): `distinct_frames` of them, each panned a little further, and the first
// of them with the LED marker lit, so every `distinct_frames`-th frame is a marked frame. The
// packing and CRC are not on the timed path. The bridge forwards one of them per frame, writing the
// frame start and end packets' frame number as it goes.
//
// Delivery `device` (GPUDirect): the ring, its records and `newest` are in device memory; `newest`
// is also mirrored to host-mapped memory, where a CPU-driven loop polls it without a copy (a NIC's
// completion queue). Delivery `host` (no GPUDirect): the ring and its records are in pinned host
// memory, written by the sensor thread itself; frame_rx then copies the frame in from the host.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "resident/app/application.hpp"
#include "resident/app/operator.hpp"
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/stream.hpp"
#include "resident/io/bayer.hpp"
#include "resident/io/csi2.hpp"
#include "resident/io/frame.hpp"

namespace resident::io {

enum class frame_delivery : std::uint8_t { device, host };

/// One ring slot's metadata record, written after the slot's payload. `frame` is written last
/// (release): a reader that acquires it sees the rest of the record and the payload.
struct alignas(64) frame_record {
  std::uint64_t frame;           // frame counter of the frame in the slot (0: none yet)
  std::uint64_t frame_start_ns;  // device clock: the sensor began the frame
  std::uint64_t arrival_ns;      // device clock: the record was written
  std::uint64_t bytes;           // length of the packet stream
  std::uint32_t status;          // bridge_status
  std::uint32_t pad[7];
};
static_assert(sizeof(frame_record) == 64);

/// Device pointers of the ring (kernel arguments).
struct frame_ring_view {
  const std::uint8_t* slots;  // depth slots of slot_stride bytes (device or host-mapped)
  std::size_t slot_stride;
  std::uint32_t depth;
  const frame_record* records;  // depth records
  const std::uint64_t* newest;  // newest complete frame (0: none yet)
  std::uint8_t* landing;        // host delivery: device buffer the frame is copied into
  std::uint32_t host_delivery;  // 1: slots and records are host memory
};

/// A fault the bridge applies to one upcoming frame (tests and demos of the checks).
struct bridge_fault {
  enum class kind : std::uint8_t {
    flip_bits,   // XOR `mask` into the byte at `offset` of the packet stream (up to 4 per frame)
    bad_status,  // the record says bridge_status::link_error
    stall,       // the sensor stops for `stall` and then resumes (frames are late, none lost)
  };
  kind what{kind::flip_bits};
  std::size_t offset{0};
  std::uint8_t mask{0};
  std::chrono::microseconds stall{0};
};

struct sensor_config {
  std::uint32_t width{1920};
  std::uint32_t height{1080};
  csi2::raw_format format{csi2::raw_format::raw12};
  bayer_order order{bayer_order::rggb};
  double rate_hz{60.0};          // frames per second
  double readout_fraction{0.9};  // the rolling shutter reads the frame out over this share
  std::uint32_t ring_slots{4};   // >= 2
  frame_delivery delivery{frame_delivery::device};
  std::uint32_t distinct_frames{8};  // prebuilt frames; the first has the LED lit
  std::uint32_t pan_step{3};         // pixels the photograph moves per prebuilt frame
  std::uint16_t black_level{256};    // in sensor units (bits of `format`)
  float cast[3]{1.25F, 1.0F, 0.8F};  // colour cast the white balance has to undo
  led_marker led{};                  // width 0: placed near the top left, 64 x 32
  int cpu{-1};                       // core for the sensor thread (-1: not pinned)
  /// Frames the log keeps, the newest (0: none, for runs of any length); the first 2^16 entries
  /// are reserved when the bridge is built, more as the log fills. At most 2^24.
  std::uint32_t log_frames{1U << 20};
};

/// What the sensor thread logged about one frame.
struct frame_log {
  std::uint64_t frame;
  std::uint64_t frame_start_ns;  // device clock
  std::uint64_t late_ns;         // how late the thread enqueued it after readout ended
  bool led_lit;
  bool faulty;  // an injected fault (bit flips or a bad status) hit it
};

class sensor_bridge {
 public:
  /// Builds the frames from `photo` (host work, before any run) and allocates the ring. Needs a
  /// GPU. Throws std::invalid_argument for a bad configuration.
  sensor_bridge(const sensor_config& config, const rgb8_image& photo);
  sensor_bridge(const sensor_bridge&) = delete;
  sensor_bridge& operator=(const sensor_bridge&) = delete;
  ~sensor_bridge();  // stops the sensor

  /// Starts the sensor thread: frame 1 starts now. Frames keep counting across stop()/start().
  void start();
  /// Stops after the frame in progress (bounded by one frame period plus its copy).
  void stop();
  [[nodiscard]] bool running() const noexcept { return _running.load(); }

  /// Applies `f` to the next frame the sensor produces (stall: at the next frame start).
  void inject(const bridge_fault& f);

  /// Frames the bridge delivered so far: the newest frame counter, as the host-mapped mirror
  /// shows it (what a CPU-driven loop polls).
  [[nodiscard]] std::uint64_t produced() const noexcept;
  [[nodiscard]] frame_ring_view device_view() const noexcept { return _view; }
  [[nodiscard]] const sensor_config& config() const noexcept { return _config; }
  /// The packet stream of one prebuilt frame and its pixels (tests, references).
  [[nodiscard]] std::span<const std::uint8_t> packets(std::uint32_t distinct) const;
  [[nodiscard]] std::span<const std::uint16_t> pixels(std::uint32_t distinct) const;
  [[nodiscard]] std::size_t frame_bytes() const noexcept { return _frame_bytes; }
  /// Which prebuilt frame frame counter `frame` carries; whether its LED is lit.
  [[nodiscard]] std::uint32_t distinct_of(std::uint64_t frame) const noexcept;
  [[nodiscard]] bool led_lit(std::uint64_t frame) const noexcept { return distinct_of(frame) == 0; }
  /// The log of the frames produced so far, oldest first (a copy; the newest
  /// sensor_config::log_frames of them).
  [[nodiscard]] std::vector<frame_log> log() const;
  /// A sensor-thread failure (a CUDA error), or empty.
  [[nodiscard]] std::string failure() const;

  /// The host gate of a CPU-driven loop: is there a frame newer than the last one processed?
  [[nodiscard]] std::function<bool(std::uint64_t, sample_policy)> host_gate() const;
  /// A data-ready handler around `rx` (a frame_rx of this bridge).
  [[nodiscard]] data_ready_handler make_handler(std::shared_ptr<Operator> rx) const;

  /// Host delivery, eager mode: the frame the host gate chose (0: none). frame_rx reads it.
  [[nodiscard]] std::uint64_t host_choice() const noexcept { return _host_choice; }

 private:
  void build_frames(const rgb8_image& photo);
  void allocate_ring();
  void run_sensor();
  void deliver(std::uint64_t frame, std::uint64_t start_dev_ns, std::uint64_t late_ns);

  sensor_config _config;
  std::size_t _frame_bytes{};
  std::size_t _slot_stride{};
  std::vector<std::vector<std::uint8_t>> _packets;  // host copies of the prebuilt streams
  std::vector<std::vector<std::uint16_t>> _pixels;
  device_buffer _staging;         // the prebuilt streams in device memory (device delivery)
  device_buffer _ring;            // device delivery: slots, records, newest
  host_mapped_buffer _host_ring;  // host delivery: slots, records, newest; device delivery: mirror
  device_buffer _landing;         // host delivery: where frame_rx copies a frame in
  device_buffer _faults;          // per-frame patch list for the commit kernel
  stream _stream;                 // the bridge's own stream (the NIC's DMA)
  frame_ring_view _view{};
  std::uint64_t* _mirror_host{};    // host view of the newest mirror
  std::int64_t _clock_offset_ns{};  // device clock - host steady clock
  std::atomic<bool> _running{false};
  std::atomic<bool> _stop{false};
  std::thread _thread;
  std::uint64_t _next_frame{1};  // sensor-private
  mutable std::mutex _mutex;     // guards the log, the pending faults and the failure
  std::vector<frame_log> _log;   // a ring once it holds log_frames entries
  std::size_t _log_oldest{0};    // where the ring's oldest entry is
  std::vector<bridge_fault> _pending;
  std::string _failure;
  // Loop thread only (host delivery, eager): the host gate's choice for frame_rx, and whether
  // frame_rx handed a frame over yet (what `newest` needs to know to repeat one).
  mutable std::uint64_t _host_choice{0};
  mutable bool _host_handed_over{false};
  friend class frame_rx;
};

/// SMs that a persistent loop fed by a bridge leaves free when it takes "as many blocks as fit":
/// the bridge's commit kernel, which the loop waits for, runs there.
inline constexpr std::uint32_t bridge_reserved_sms = 4;

/// The data-ready handler operator: polls the ring for the frame the loop's policy asks for,
/// checks its slot's record and writes a frame_ref into its "frame" output. Resident modes poll up
/// to run_options::poll_ns inside the kernel; host-driven modes run it after the host gate saw a
/// frame. With host delivery (eager mode only) the frame is first copied in from host memory.
class frame_rx final : public Operator {
 public:
  explicit frame_rx(std::shared_ptr<sensor_bridge> bridge) : _bridge(std::move(bridge)) {}
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  /// Its form names no kernel of its own: it runs in the camera operators' kernel.
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  [[nodiscard]] const sensor_bridge& bridge() const noexcept { return *_bridge; }

 private:
  std::shared_ptr<sensor_bridge> _bridge;
};

/// The offset between the device clock (%globaltimer) and the host's steady clock, measured by
/// bracketing a kernel's clock read between two host clock reads (the tightest of `samples`).
struct clock_sync {
  std::int64_t offset_ns;        // device = host + offset
  std::uint64_t uncertainty_ns;  // half the tightest bracket
};
[[nodiscard]] clock_sync measure_clock_offset(int samples = 32);

namespace detail {
struct commit_patch {
  std::uint64_t offset;
  std::uint32_t mask;
  std::uint32_t pad;
};
inline constexpr int max_patches = 4;
struct commit_args {
  std::uint8_t* slot;     // slot payload (device)
  frame_record* record;   // slot record (device)
  std::uint64_t* newest;  // device word
  std::uint64_t* mirror;  // host-mapped mirror of newest
  std::uint64_t frame;
  std::uint64_t frame_start_ns;
  std::uint64_t bytes;
  std::uint32_t status;
  std::uint32_t patches;
  commit_patch patch[max_patches];
};
/// The frame a loop's policy asks for, given the newest delivered one (0: none to take). The
/// slot the bridge fills next (newest + 1 - depth) may be mid-copy, so `every` keeps off it.
RESIDENT_HD constexpr std::uint64_t select_frame(std::uint64_t newest, std::uint64_t last,
                                                 bool have_processed, sample_policy policy,
                                                 std::uint32_t depth) noexcept {
  if (newest == 0) return 0;
  switch (policy) {
    case sample_policy::every: {
      if (newest <= last) return 0;
      const std::uint64_t oldest_safe = newest + 2 > depth ? newest + 2 - depth : 1;
      return last + 1 > oldest_safe ? last + 1 : oldest_safe;
    }
    case sample_policy::newest:
      return newest > last || have_processed ? newest : 0;
    case sample_policy::skip_duplicate:
    default:
      return newest > last ? newest : 0;
  }
}
void launch_bridge_commit(const commit_args& a, cudaStream_t s);
void launch_frame_rx(const frame_ring_view& ring, loop_state* loop, frame_ref* out, cudaStream_t s);
void launch_frame_publish(const frame_ref& ref, loop_state* loop, frame_ref* out, cudaStream_t s);
void launch_clock_read(std::uint64_t* out, cudaStream_t s);
}  // namespace detail

}  // namespace resident::io
