#include "resident/io/display.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "cuda/host_words.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"
#include "resident/detail/event_ring.hpp"

namespace resident::io {

namespace {

using ::resident::detail::host_load_acquire;
using ::resident::detail::host_store_release;

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

display_config checked(display_config c) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("display_config: " + what);
  };
  if (c.width == 0 || c.height == 0) fail("width and height must be positive");
  if (!(c.refresh_hz > 0) || !std::isfinite(c.refresh_hz)) {
    fail("refresh_hz must be positive, got " + std::to_string(c.refresh_hz));
  }
  if (!(c.min_refresh_hz > 0) || c.min_refresh_hz > c.refresh_hz) {
    fail("min_refresh_hz must be positive and at most refresh_hz, got " +
         std::to_string(c.min_refresh_hz));
  }
  const led_marker& p = c.probe;
  if (p.width != 0 && (p.height == 0 || p.x + p.width > c.width || p.y + p.height > c.height)) {
    fail("the probe (" + std::to_string(p.width) + "x" + std::to_string(p.height) + " at " +
         std::to_string(p.x) + "," + std::to_string(p.y) + ") is not inside the " +
         std::to_string(c.width) + "x" + std::to_string(c.height) + " image");
  }
  if (c.event_capacity == 0 || c.event_capacity > UINT32_MAX || c.commit_capacity == 0 ||
      c.commit_capacity > UINT32_MAX) {
    fail("event_capacity and commit_capacity must be between 1 and 2^32 - 1");
  }
  return c;
}

// Both buffers start 256-byte aligned: the egress stores 16-byte vectors.
std::size_t buffer_stride(const display_config& c) {
  return round_up(std::size_t{c.width} * c.height * 4, 256);
}

std::size_t shared_bytes(const display_config& c) {
  return round_up(sizeof(detail::display_shared), 64) + c.commit_capacity * sizeof(display_commit);
}
std::size_t scanout_ring_at() { return round_up(sizeof(detail::display_host_words), 64); }
std::size_t photodiode_ring_at(const display_config& c) {
  return scanout_ring_at() + round_up(c.event_capacity * sizeof(scanout_event), 64);
}
std::size_t host_bytes(const display_config& c) {
  return photodiode_ring_at(c) + c.event_capacity * sizeof(photodiode_event);
}

}  // namespace

display::display(display_config c)
    : _config(checked(c)),
      _pixels(2 * buffer_stride(_config)),
      _shared(shared_bytes(_config)),
      _host(host_bytes(_config)) {
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_pixels.data(), 0, _pixels.size(), _copy_stream.get()));
  RESIDENT_CUDA_TRY(cudaMemsetAsync(_shared.data(), 0, _shared.size(), _copy_stream.get()));
  _copy_stream.synchronize();
  _view.buffers[0] = _pixels.data_as<std::uint8_t>();
  _view.buffers[1] = _view.buffers[0] + buffer_stride(_config);
  _view.pitch = std::size_t{_config.width} * 4;
  _view.width = _config.width;
  _view.height = _config.height;
  _view.mode = _config.mode;
  _view.shared = _shared.data_as<detail::display_shared>();
  _view.commit_ring = reinterpret_cast<display_commit*>(
      _shared.data_as<std::byte>() + round_up(sizeof(detail::display_shared), 64));
  _view.commit_capacity = static_cast<std::uint32_t>(_config.commit_capacity);
}

display::display(display&& other) noexcept
    : _config(other._config),
      _pixels(std::move(other._pixels)),
      _shared(std::move(other._shared)),
      _host(std::move(other._host)),
      _view(std::exchange(other._view, {})),
      _engine_stream(std::move(other._engine_stream)),
      _copy_stream(std::move(other._copy_stream)),
      _running(std::exchange(other._running, false)),
      _scanouts_read(other._scanouts_read),
      _photodiode_read(other._photodiode_read),
      _commits_read(other._commits_read) {}

display& display::operator=(display&& other) noexcept {
  if (this != &other) {
    if (!stop_noexcept()) leak_memory();
    _config = other._config;
    _pixels = std::move(other._pixels);
    _shared = std::move(other._shared);
    _host = std::move(other._host);
    _view = std::exchange(other._view, {});
    _engine_stream = std::move(other._engine_stream);
    _copy_stream = std::move(other._copy_stream);
    _running = std::exchange(other._running, false);
    _scanouts_read = other._scanouts_read;
    _photodiode_read = other._photodiode_read;
    _commits_read = other._commits_read;
  }
  return *this;
}

display::~display() {
  if (!stop_noexcept()) leak_memory();
}

bool display::stop_noexcept() noexcept {
  try {
    stop();
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resident: display: %s; its memory is left allocated\n", e.what());
    return false;
  }
}

void display::leak_memory() noexcept {
  // Freeing memory a running kernel uses would wait for it (or pull the memory from under it):
  // these holders are never destroyed, and the stream is not destroyed under the engine either.
  (void)new device_buffer(std::move(_pixels));
  (void)new device_buffer(std::move(_shared));
  (void)new host_mapped_buffer(std::move(_host));
  (void)new stream(std::move(_engine_stream));
  _running = false;
}

void display::inject_stop_hold(std::chrono::nanoseconds hold) {
  if (hold.count() < 0) throw std::invalid_argument("display::inject_stop_hold: negative hold");
  host_store_release(_host.host_as<detail::display_host_words>()->stop_hold_ns,
                     static_cast<std::uint64_t>(hold.count()));
}

void display::start() {
  if (_running) throw std::logic_error("display::start: the engine is already running");
  auto* words = _host.host_as<detail::display_host_words>();
  host_store_release(words->stop, 0U);
  host_store_release(words->started, std::uint64_t{0});
  host_store_release(words->stop_seen_ns, std::uint64_t{0});
  auto* base = _host.device_as<std::byte>();
  detail::launch_display_engine(_view, _config, reinterpret_cast<detail::display_host_words*>(base),
                                base + scanout_ring_at(), base + photodiode_ring_at(_config),
                                _engine_stream.get());
  _running = true;
  // The engine is one block; it starts at once unless the GPU is full of blocks that never
  // end. Report that rather than measure a display that never scans out.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (host_load_acquire(words->started) == 0) {
    if (_engine_stream.ready()) {
      _running = false;
      throw std::runtime_error("display::start: the engine kernel ended before it started");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop_noexcept();
      throw std::runtime_error(
          "display::start: the engine kernel did not start within 2 s (is the GPU full of "
          "persistent kernels?)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void display::stop(std::chrono::milliseconds timeout) {
  if (!_running) return;
  host_store_release(_host.host_as<detail::display_host_words>()->stop, 1U);
  if (!_engine_stream.synchronize_for(timeout)) {
    throw std::runtime_error("display::stop: the engine kernel did not end within " +
                             std::to_string(timeout.count()) + " ms of the stop request");
  }
  _running = false;
}

std::vector<scanout_event> display::drain_scanouts() {
  auto* words = _host.host_as<detail::display_host_words>();
  const auto* ring =
      reinterpret_cast<const scanout_event*>(_host.host_as<std::byte>() + scanout_ring_at());
  return ::resident::detail::drain_events(ring, _config.event_capacity, words->scanouts_written,
                                          words->scanouts_read, _scanouts_read);
}

std::vector<photodiode_event> display::drain_photodiode() {
  auto* words = _host.host_as<detail::display_host_words>();
  const auto* ring = reinterpret_cast<const photodiode_event*>(_host.host_as<std::byte>() +
                                                               photodiode_ring_at(_config));
  return ::resident::detail::drain_events(ring, _config.event_capacity, words->photodiode_written,
                                          words->photodiode_read, _photodiode_read);
}

std::vector<display_commit> display::drain_commits() {
  // Count, ring, count again: an entry is whole when it was written before the first count
  // and its slot was not reused by the time of the second.
  auto count = [&] {
    std::uint64_t n = 0;
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(&n, &_view.shared->commits, sizeof(n), cudaMemcpyDeviceToHost,
                                      _copy_stream.get()));
    _copy_stream.synchronize();
    return n;
  };
  const std::uint64_t before = count();
  std::vector<display_commit> ring(_config.commit_capacity);
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(ring.data(), _view.commit_ring,
                                    ring.size() * sizeof(display_commit), cudaMemcpyDeviceToHost,
                                    _copy_stream.get()));
  _copy_stream.synchronize();
  const std::uint64_t after = count();
  std::vector<display_commit> out;
  for (std::uint64_t i = _commits_read; i < before; ++i) {
    if (i + _config.commit_capacity > after) out.push_back(ring[i % _config.commit_capacity]);
  }
  _commits_read = before;
  return out;
}

display_counters display::counters() const {
  detail::display_shared s{};
  RESIDENT_CUDA_TRY(
      cudaMemcpyAsync(&s, _view.shared, sizeof(s), cudaMemcpyDeviceToHost, _copy_stream.get()));
  _copy_stream.synchronize();
  const auto* words = _host.host_as<detail::display_host_words>();
  display_counters c;
  c.scanouts = host_load_acquire(words->scanouts);
  c.flips_latched = host_load_acquire(words->flips_latched);
  c.events_dropped = host_load_acquire(words->events_dropped);
  c.flips_replaced = s.flips_replaced;
  c.frames_written = s.frames_written;
  c.corrupt_frames = s.corrupt_frames;
  c.rewritten_frames = s.rewritten_frames;
  return c;
}

std::uint32_t display::front() const {
  unsigned long long w = 0;
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(&w, &_view.shared->flip, sizeof(w), cudaMemcpyDeviceToHost,
                                    _copy_stream.get()));
  _copy_stream.synchronize();
  return detail::flip_front(w);
}

void display::copy_front(std::span<std::uint8_t> out) const { copy_buffer(front(), out); }

std::uint64_t display::buffer_frame(std::uint32_t index) const {
  if (index > 1) {
    throw std::invalid_argument("display::buffer_frame: buffer " + std::to_string(index) +
                                "; the display has buffers 0 and 1");
  }
  std::uint64_t tag = 0;
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(&tag, &_view.shared->tag[index], sizeof(tag),
                                    cudaMemcpyDeviceToHost, _copy_stream.get()));
  _copy_stream.synchronize();
  return tag;
}

void display::copy_buffer(std::uint32_t index, std::span<std::uint8_t> out) const {
  if (index > 1 || out.size() != image_bytes()) {
    throw std::invalid_argument("display::copy_buffer: buffer " + std::to_string(index) + " into " +
                                std::to_string(out.size()) +
                                " bytes; the display has buffers 0 and 1 of " +
                                std::to_string(image_bytes()) + " bytes");
  }
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(out.data(), _view.buffers[index], out.size(),
                                    cudaMemcpyDeviceToHost, _copy_stream.get()));
  _copy_stream.synchronize();
}

void display::fill_buffer(std::uint32_t index, std::span<const std::uint8_t> rgba,
                          std::uint64_t frame) {
  if (index > 1 || rgba.size() != image_bytes()) {
    throw std::invalid_argument("display::fill_buffer: buffer " + std::to_string(index) + " from " +
                                std::to_string(rgba.size()) +
                                " bytes; the display has buffers 0 and 1 of " +
                                std::to_string(image_bytes()) + " bytes");
  }
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(_view.buffers[index], rgba.data(), rgba.size(),
                                    cudaMemcpyHostToDevice, _copy_stream.get()));
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(&_view.shared->tag[index], &frame, sizeof(frame),
                                    cudaMemcpyHostToDevice, _copy_stream.get()));
  _copy_stream.synchronize();
}

std::uint8_t gamma_encode(std::uint32_t v, std::uint32_t full, double gamma) {
  const double x = v >= full ? 1.0 : static_cast<double>(v) / full;
  return static_cast<std::uint8_t>(std::lround(255.0 * std::pow(x, 1.0 / gamma)));
}

void display_tx::setup(OperatorSpec& spec) {
  _gamma = spec.param<double>("gamma", 2.2, "display gamma: out = 255 * (v / full)^(1 / gamma)");
  if (!(_gamma > 0) || !std::isfinite(_gamma)) {
    throw composition_error("operator '" + spec.operator_name() +
                            "': parameter 'gamma' must be positive, got " + std::to_string(_gamma));
  }
  const std::string input = spec.param<std::string>(
      "input", "rgba16", "pixel format of the linear image: rgba16 or rgba8");
  if (input != "rgba16" && input != "rgba8") {
    throw composition_error("operator '" + spec.operator_name() +
                            "': parameter 'input' must be rgba16 or rgba8, got '" + input + "'");
  }
  _rgba16 = input == "rgba16";
  const display_config& c = _display->config();
  spec.image_input("rgb", image_desc{c.width, c.height,
                                     _rgba16 ? pixel_format::rgba16 : pixel_format::rgba8, 0});
  spec.device_input("integrity", sizeof(frame_integrity));
}

void display_tx::initialize() {
  const std::uint32_t full = _rgba16 ? 65535U : 255U;
  std::vector<std::uint8_t> lut(std::size_t{full} + 1);
  for (std::uint32_t v = 0; v <= full; ++v) lut[v] = gamma_encode(v, full, _gamma);
  _lut = device_buffer(lut.size());
  RESIDENT_CUDA_TRY(cudaMemcpy(_lut.data(), lut.data(), lut.size(), cudaMemcpyHostToDevice));
  _blocks = detail::display_tx_blocks(_display->device_view());
}

void display_tx::compute(CaptureContext& ctx) {
  if (_lut.data() == nullptr) {
    throw composition_error("operator '" + ctx.operator_name() +
                            "' (display_tx): compute() before initialize()");
  }
  detail::launch_display_tx(_display->device_view(), ctx.device_memory<const void>("rgb"), _rgba16,
                            _lut.data_as<std::uint8_t>(),
                            ctx.device_memory<const frame_integrity>("integrity"), ctx.loop(),
                            _blocks, ctx.stream());
}

}  // namespace resident::io
