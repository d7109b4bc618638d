#include "resident/io/sensor_bridge.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>

#include "cuda/host_words.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"
#include "resident/detail/frame_ring_protocol.hpp"

namespace resident::io {

namespace {

using steady = std::chrono::steady_clock;
constexpr std::size_t line = 64;

std::size_t round_up(std::size_t n) { return (n + line - 1) / line * line; }

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
          .count());
}

using ::resident::detail::host_load_acquire;
using ::resident::detail::host_store_release;

void check(const sensor_config& c) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("sensor_bridge: " + what);
  };
  if (c.width == 0 || c.height == 0 || c.width % 4 != 0 || c.height % 2 != 0) {
    fail("the frame must be a positive multiple of 4 pixels wide and of 2 lines high, got " +
         std::to_string(c.width) + "x" + std::to_string(c.height));
  }
  if (!(c.rate_hz > 0.0) || c.rate_hz > 1e6) {
    fail("rate_hz must be in (0, 1e6], got " + std::to_string(c.rate_hz));
  }
  if (!(c.readout_fraction > 0.0) || c.readout_fraction > 1.0) {
    fail("readout_fraction must be in (0, 1], got " + std::to_string(c.readout_fraction));
  }
  if (c.ring_slots < 2) {
    fail("ring_slots must be at least 2 (one to read while the bridge writes the next), got " +
         std::to_string(c.ring_slots));
  }
  if (c.distinct_frames == 0 || c.distinct_frames > 64) {
    fail("distinct_frames must be 1..64, got " + std::to_string(c.distinct_frames));
  }
  if (c.log_frames > (1U << 24)) {
    fail("log_frames must be 0 to 16777216, got " + std::to_string(c.log_frames));
  }
}

led_marker placed_led(const sensor_config& c) {
  if (c.led.width != 0) return c.led;
  const std::uint32_t w = std::min<std::uint32_t>(64, c.width / 4);
  const std::uint32_t h = std::min<std::uint32_t>(32, c.height / 4);
  return {c.width / 16, c.height / 16, w, h};
}

void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Best effort: a core that does not exist leaves the thread unpinned (reported nowhere else,
  // so the configuration's check of the core is the caller's).
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Sleeps until `deadline` (steady clock, ns): coarse sleeps while far, then a spin, so the frame
// starts on time without a core spinning through the whole period. False when stopped.
bool wait_until(std::uint64_t deadline, const std::atomic<bool>& stop) {
  constexpr std::uint64_t spin_ns = 150'000;
  for (;;) {
    if (stop.load(std::memory_order_relaxed)) return false;
    const std::uint64_t now = steady_ns();
    if (now >= deadline) return true;
    const std::uint64_t left = deadline - now;
    if (left > spin_ns) {
      std::this_thread::sleep_for(
          std::chrono::nanoseconds(std::min<std::uint64_t>(left - spin_ns, 1'000'000)));
    }
  }
}

void write_short_packet(std::uint8_t* at, csi2::data_type type, std::uint16_t number) {
  const auto h = csi2::encode_header({0, type, number});
  std::memcpy(at, h.data(), h.size());
}

}  // namespace

clock_sync measure_clock_offset(int samples) {
  host_mapped_buffer word(sizeof(std::uint64_t));
  stream s;
  auto* host = word.host_as<std::uint64_t>();
  clock_sync best{0, ~std::uint64_t{0}};
  for (int i = 0; i < std::max(samples, 1); ++i) {
    host_store_release(*host, std::uint64_t{0});
    const std::uint64_t t1 = steady_ns();
    detail::launch_clock_read(word.device_as<std::uint64_t>(), s.get());
    std::uint64_t g = 0;
    while ((g = host_load_acquire(*host)) == 0) {
      if (steady_ns() - t1 > 2'000'000'000ULL) {
        throw std::runtime_error(
            "measure_clock_offset: the clock-read kernel did not report "
            "within 2 s");
      }
    }
    const std::uint64_t t2 = steady_ns();
    const std::uint64_t half = (t2 - t1) / 2;
    if (half < best.uncertainty_ns) {
      best.uncertainty_ns = half;
      best.offset_ns = static_cast<std::int64_t>(g) - static_cast<std::int64_t>(t1 + half);
    }
  }
  s.synchronize();
  return best;
}

sensor_bridge::sensor_bridge(const sensor_config& config, const rgb8_image& photo)
    : _config(config) {
  check(_config);
  _config.led = placed_led(_config);
  _frame_bytes = csi2::frame_packet_bytes(_config.format, _config.width, _config.height);
  _slot_stride = round_up(_frame_bytes);
  build_frames(photo);
  allocate_ring();
  _clock_offset_ns = measure_clock_offset().offset_ns;
  // The first 2^16 entries are touched now (2 MB), so a run of up to 18 minutes at 60 Hz logs
  // without growing the process; beyond, the log grows up to log_frames, then wraps.
  _log.resize(std::min<std::size_t>(_config.log_frames, 1U << 16));
  _log.clear();
}

sensor_bridge::~sensor_bridge() {
  try {
    stop();
  } catch (...) {
    // A destructor never throws; stop() only fails on a CUDA error the sensor already recorded.
  }
}

void sensor_bridge::build_frames(const rgb8_image& photo) {
  const unsigned bits = static_cast<unsigned>(_config.format);
  std::vector<std::future<std::pair<std::vector<std::uint16_t>, std::vector<std::uint8_t>>>> jobs;
  for (std::uint32_t i = 0; i < _config.distinct_frames; ++i) {
    jobs.push_back(std::async(std::launch::async, [this, &photo, bits, i] {
      mosaic_options o;
      o.width = _config.width;
      o.height = _config.height;
      o.bits = bits;
      o.order = _config.order;
      o.black_level = _config.black_level;
      std::copy(std::begin(_config.cast), std::end(_config.cast), std::begin(o.cast));
      o.pan_x = i * _config.pan_step;
      o.pan_y = i * _config.pan_step / 2;
      o.led = _config.led;
      o.led_lit = i == 0;
      auto pixels = mosaic(photo, o);
      auto packets = csi2::frame_packets(_config.format, _config.width, _config.height, pixels, 1);
      return std::make_pair(std::move(pixels), std::move(packets));
    }));
  }
  for (auto& j : jobs) {
    auto [pixels, packets] = j.get();
    _pixels.push_back(std::move(pixels));
    _packets.push_back(std::move(packets));
  }
}

void sensor_bridge::allocate_ring() {
  const std::size_t slots = _slot_stride * _config.ring_slots;
  const std::size_t records = sizeof(frame_record) * _config.ring_slots;
  const std::size_t total = slots + records + line;
  _faults = device_buffer(sizeof(detail::commit_patch) * detail::max_patches);
  if (_config.delivery == frame_delivery::device) {
    _staging = device_buffer(_frame_bytes * _config.distinct_frames);
    for (std::uint32_t i = 0; i < _config.distinct_frames; ++i) {
      RESIDENT_CUDA_TRY(cudaMemcpy(static_cast<std::uint8_t*>(_staging.data()) + i * _frame_bytes,
                                   _packets[i].data(), _frame_bytes, cudaMemcpyHostToDevice));
    }
    _ring = device_buffer(total);
    RESIDENT_CUDA_TRY(cudaMemset(_ring.data(), 0, total));
    _host_ring = host_mapped_buffer(line);  // the mirror of `newest`
    auto* base = static_cast<std::uint8_t*>(_ring.data());
    _view.slots = base;
    _view.records = reinterpret_cast<const frame_record*>(base + slots);
    _view.newest = reinterpret_cast<const std::uint64_t*>(base + slots + records);
    _mirror_host = _host_ring.host_as<std::uint64_t>();
  } else {
    _host_ring = host_mapped_buffer(total);
    _landing = device_buffer(_slot_stride);
    auto* dev = _host_ring.device_as<std::uint8_t>();
    _view.slots = dev;
    _view.records = reinterpret_cast<const frame_record*>(dev + slots);
    _view.newest = reinterpret_cast<const std::uint64_t*>(dev + slots + records);
    _view.landing = static_cast<std::uint8_t*>(_landing.data());
    _view.host_delivery = 1;
    _mirror_host =
        reinterpret_cast<std::uint64_t*>(_host_ring.host_as<std::uint8_t>() + slots + records);
  }
  _view.slot_stride = _slot_stride;
  _view.depth = _config.ring_slots;
}

void sensor_bridge::start() {
  if (_running.load()) return;
  {
    std::lock_guard lock(_mutex);
    _failure.clear();
  }
  _stop.store(false);
  _running.store(true);
  _thread = std::thread([this] { run_sensor(); });
}

void sensor_bridge::stop() {
  _stop.store(true);
  if (_thread.joinable()) _thread.join();
  _running.store(false);
  if (_config.delivery == frame_delivery::device) _stream.synchronize();
}

void sensor_bridge::inject(const bridge_fault& f) {
  std::lock_guard lock(_mutex);
  _pending.push_back(f);
}

std::uint64_t sensor_bridge::produced() const noexcept { return host_load_acquire(*_mirror_host); }

std::span<const std::uint8_t> sensor_bridge::packets(std::uint32_t distinct) const {
  return _packets.at(distinct);
}
std::span<const std::uint16_t> sensor_bridge::pixels(std::uint32_t distinct) const {
  return _pixels.at(distinct);
}

std::uint32_t sensor_bridge::distinct_of(std::uint64_t frame) const noexcept {
  return frame == 0 ? 0 : static_cast<std::uint32_t>((frame - 1) % _config.distinct_frames);
}

std::vector<frame_log> sensor_bridge::log() const {
  std::lock_guard lock(_mutex);
  std::vector<frame_log> out;
  out.reserve(_log.size());
  out.insert(out.end(), _log.begin() + static_cast<std::ptrdiff_t>(_log_oldest), _log.end());
  out.insert(out.end(), _log.begin(), _log.begin() + static_cast<std::ptrdiff_t>(_log_oldest));
  return out;
}

std::string sensor_bridge::failure() const {
  std::lock_guard lock(_mutex);
  return _failure;
}

void sensor_bridge::run_sensor() {
  pin_to(_config.cpu);
  const auto period = static_cast<std::uint64_t>(std::llround(1e9 / _config.rate_hz));
  const auto readout =
      static_cast<std::uint64_t>(std::llround(1e9 * _config.readout_fraction / _config.rate_hz));
  std::uint64_t next_start = steady_ns();
  try {
    while (!_stop.load(std::memory_order_relaxed)) {
      bool stalled = false;
      {
        std::lock_guard lock(_mutex);
        for (auto it = _pending.begin(); it != _pending.end();) {
          if (it->what != bridge_fault::kind::stall) {
            ++it;
            continue;
          }
          next_start += static_cast<std::uint64_t>(it->stall.count()) * 1000U;
          it = _pending.erase(it);
          stalled = true;
        }
      }
      (void)stalled;
      const std::uint64_t readout_end = next_start + readout;
      if (!wait_until(readout_end, _stop)) break;
      const std::uint64_t late = steady_ns() - readout_end;
      deliver(_next_frame,
              static_cast<std::uint64_t>(static_cast<std::int64_t>(next_start) + _clock_offset_ns),
              late);
      ++_next_frame;
      next_start += period;
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(_mutex);
    _failure = std::string("sensor_bridge: ") + e.what();
  }
}

void sensor_bridge::deliver(std::uint64_t frame, std::uint64_t start_dev_ns,
                            std::uint64_t late_ns) {
  const std::uint32_t distinct = distinct_of(frame);
  const std::uint32_t slot = static_cast<std::uint32_t>(frame % _config.ring_slots);
  detail::commit_args a{};
  a.frame = frame;
  a.frame_start_ns = start_dev_ns;
  a.bytes = _frame_bytes;
  a.status = static_cast<std::uint32_t>(bridge_status::ok);
  {
    std::lock_guard lock(_mutex);
    for (auto it = _pending.begin(); it != _pending.end();) {
      if (it->what == bridge_fault::kind::bad_status) {
        a.status = static_cast<std::uint32_t>(bridge_status::link_error);
      } else if (it->what == bridge_fault::kind::flip_bits && a.patches < detail::max_patches) {
        a.patch[a.patches++] = {it->offset, it->mask, 0};
      } else {
        ++it;
        continue;
      }
      it = _pending.erase(it);
    }
    const bool faulty = a.patches > 0 || a.status != 0;
    const frame_log entry{frame, start_dev_ns, late_ns, distinct == 0, faulty};
    if (_log.size() < _config.log_frames) {
      _log.push_back(entry);
    } else if (!_log.empty()) {
      _log[_log_oldest] = entry;
      _log_oldest = (_log_oldest + 1) % _log.size();
    }
  }
  if (_config.delivery == frame_delivery::device) {
    auto* base = static_cast<std::uint8_t*>(_ring.data());
    a.slot = base + slot * _slot_stride;
    a.record = reinterpret_cast<frame_record*>(base + _slot_stride * _config.ring_slots) + slot;
    a.newest = reinterpret_cast<std::uint64_t*>(base + _slot_stride * _config.ring_slots +
                                                sizeof(frame_record) * _config.ring_slots);
    a.mirror = _host_ring.device_as<std::uint64_t>();
    // The slot's record stops naming the frame it held before any byte of the new one lands:
    // a reader in the middle of that frame re-reads the record after its reads and sees the
    // slot was rewritten (as the host path does with its store before the copy).
    RESIDENT_CUDA_TRY(cudaMemsetAsync(&a.record->frame, 0, sizeof(a.record->frame), _stream.get()));
    // The NIC's DMA of the frame into GPU memory, then the write-with-immediate on the same
    // queue, so the record lands after the payload.
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(
        a.slot, static_cast<const std::uint8_t*>(_staging.data()) + distinct * _frame_bytes,
        _frame_bytes, cudaMemcpyDeviceToDevice, _stream.get()));
    detail::launch_bridge_commit(a, _stream.get());
    return;
  }
  // Host delivery: the frame lands in pinned host memory, written by this thread.
  auto* base = _host_ring.host_as<std::uint8_t>();
  std::uint8_t* at = base + slot * _slot_stride;
  auto* record = reinterpret_cast<frame_record*>(base + _slot_stride * _config.ring_slots) + slot;
  ::resident::detail::frame_record_fields fields;
  fields.frame_start_ns = start_dev_ns;
  fields.bytes = _frame_bytes;
  fields.status = a.status;
  // The slot's record stops naming its old frame before the payload is rewritten, and names
  // the new one after (resident/detail/frame_ring_protocol.hpp); the payload is a plain copy.
  ::resident::detail::publish_host_frame(*record, *_mirror_host, frame, fields, [&] {
    std::memcpy(at, _packets[distinct].data(), _frame_bytes);
    const std::uint16_t number = csi2_frame_number(frame);
    write_short_packet(at, csi2::data_type::frame_start, number);
    write_short_packet(at + _frame_bytes - 4, csi2::data_type::frame_end, number);
    for (std::uint32_t i = 0; i < a.patches; ++i) {
      if (a.patch[i].offset < _frame_bytes) at[a.patch[i].offset] ^= a.patch[i].mask;
    }
    fields.arrival_ns =
        static_cast<std::uint64_t>(static_cast<std::int64_t>(steady_ns()) + _clock_offset_ns);
  });
}

std::function<bool(std::uint64_t, sample_policy)> sensor_bridge::host_gate() const {
  return [this](std::uint64_t last, sample_policy policy) {
    const std::uint64_t newest = host_load_acquire(*_mirror_host);
    if (_config.delivery == frame_delivery::host) {
      _host_choice =
          detail::select_frame(newest, last, _host_handed_over, policy, _config.ring_slots);
      return _host_choice != 0;
    }
    return newest > last || (policy == sample_policy::newest && newest != 0);
  };
}

data_ready_handler sensor_bridge::make_handler(std::shared_ptr<Operator> rx) const {
  return data_ready_handler{{std::move(rx)}, host_gate(), [this] { return produced(); }};
}

void frame_rx::setup(OperatorSpec& spec) { spec.device_output("frame", sizeof(frame_ref)); }

void frame_rx::compute(CaptureContext& ctx) {
  if (ctx.loop() == nullptr) {
    throw composition_error("operator '" + ctx.operator_name() +
                            "' (frame_rx) publishes frames to a loop, so it needs an execution "
                            "mode with a loop; direct submission has none");
  }
  auto* out = ctx.device_memory<frame_ref>("frame");
  const frame_ring_view& ring = _bridge->device_view();
  if (ring.host_delivery == 0U) {
    detail::launch_frame_rx(ring, ctx.loop(), out, ctx.stream());
    return;
  }
  if (ctx.capturing()) {
    throw composition_error("operator '" + ctx.operator_name() +
                            "' (frame_rx): host delivery (no GPUDirect) has the host copy each "
                            "frame in before the launch, so it runs in eager mode only; use "
                            "device delivery for the graph modes");
  }
  frame_ref ref{};
  const std::uint64_t pick = _bridge->_host_choice;
  const auto& c = _bridge->config();
  const std::size_t records_at = _bridge->_slot_stride * c.ring_slots;
  if (pick != 0) {
    const std::uint32_t slot = static_cast<std::uint32_t>(pick % c.ring_slots);
    auto* base = _bridge->_host_ring.host_as<std::uint8_t>();
    const auto* record = reinterpret_cast<const frame_record*>(base + records_at) + slot;
    ref.frame = pick;
    // The copy below is asynchronous: the reconstruction re-reads the record through
    // slot_frame after its reads (the protocol's still_holds step, on the device).
    if (const auto taken = ::resident::detail::take_host_frame(*record, pick)) {
      ref.packets = ring.landing;
      ref.bytes = taken->bytes;
      ref.status = taken->status;
      ref.slot = slot;
      ref.frame_start_ns = taken->frame_start_ns;
      ref.arrival_ns = taken->arrival_ns;
      ref.slot_frame = &reinterpret_cast<const frame_record*>(ring.records)[slot].frame;
      RESIDENT_CUDA_TRY(cudaMemcpyAsync(ring.landing, base + slot * _bridge->_slot_stride,
                                        ref.bytes, cudaMemcpyHostToDevice, ctx.stream()));
      _bridge->_host_handed_over = true;
    } else {
      // Rewritten since the gate looked: the frame is gone; what reaches the DAG says so.
      ref.packets = ring.landing;
      ref.bytes = 0;
      ref.status = static_cast<std::uint32_t>(bridge_status::truncated);
    }
  }
  detail::launch_frame_publish(ref, ctx.loop(), out, ctx.stream());
}

}  // namespace resident::io
