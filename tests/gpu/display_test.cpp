// The emulated display engine and its egress operator: scanout timing (fixed and variable
// refresh), flip latching, front-buffer mode, the photodiode, the gamma mapping against its CPU
// reference, corrupt frames, and stopping.

#include <gmock/gmock.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gpu/support.hpp"
#include "resident/detail/loop_state.hpp"
#include "resident/io/display.hpp"

namespace resident::testing {
namespace {

using namespace std::chrono_literals;
using io::display;
using io::display_config;

constexpr std::uint64_t period_ns(double hz) { return static_cast<std::uint64_t>(1e9 / hz + 0.5); }

io::frame_integrity intact(std::uint32_t height) {
  io::frame_integrity f{};
  f.expected_lines = height;
  f.lines = height;
  return f;
}

/// Feeds the egress kernel directly, the way a loop would: a linear RGBA8 image, its integrity
/// record and a stand-in loop state whose `current` is the frame number to tag.
class egress_driver {
 public:
  explicit egress_driver(display& d, double gamma = 2.2)
      : _display(d),
        _rgb(d.image_bytes()),
        _integrity(sizeof(io::frame_integrity)),
        _loop(sizeof(loop_state)),
        _lut(256) {
    std::vector<std::uint8_t> lut(256);
    for (std::uint32_t v = 0; v < 256; ++v) lut[v] = io::gamma_encode(v, 255, gamma);
    RESIDENT_CUDA_TRY(cudaMemcpy(_lut.data(), lut.data(), 256, cudaMemcpyHostToDevice));
    set_integrity(intact(d.config().height));
  }
  void set_image(const std::vector<std::uint8_t>& rgba) {
    RESIDENT_CUDA_TRY(cudaMemcpy(_rgb.data(), rgba.data(), rgba.size(), cudaMemcpyHostToDevice));
  }
  void set_integrity(const io::frame_integrity& f) {
    RESIDENT_CUDA_TRY(cudaMemcpy(_integrity.data(), &f, sizeof(f), cudaMemcpyHostToDevice));
  }
  /// Runs the egress for frame `frame` and waits for it (bounded).
  void present(std::uint64_t frame) {
    loop_state state{};
    state.current = frame;
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(_loop.data(), &state, sizeof(state), cudaMemcpyHostToDevice,
                                      _stream.get()));
    io::detail::launch_display_tx(
        _display.device_view(), _rgb.data(), false, _lut.data_as<std::uint8_t>(),
        _integrity.data_as<io::frame_integrity>(), _loop.data_as<loop_state>(),
        io::detail::display_tx_blocks(_display.device_view()), _stream.get());
    ASSERT_TRUE(_stream.synchronize_for(1s)) << "the egress kernel did not finish";
  }
  /// The commit stamp the egress left in the stand-in loop state.
  std::uint64_t commit_stamp() {
    loop_state state{};
    RESIDENT_CUDA_TRY(cudaMemcpyAsync(&state, _loop.data(), sizeof(state), cudaMemcpyDeviceToHost,
                                      _stream.get()));
    _stream.synchronize();
    return state.stamp_ns[static_cast<std::size_t>(stage::commit)];
  }

 private:
  display& _display;
  device_buffer _rgb;
  device_buffer _integrity;
  device_buffer _loop;
  device_buffer _lut;
  stream _stream;
};

std::vector<std::uint8_t> flat_image(const display_config& c, std::uint8_t value) {
  std::vector<std::uint8_t> v(std::size_t{c.width} * c.height * 4, value);
  return v;
}

TEST(display, fixed_refresh_scans_out_on_a_vblank_grid) {
  RESIDENT_REQUIRE_GPU();
  display_config c{.width = 64, .height = 32, .refresh_hz = 240, .sync = io::display_sync::fixed};
  display d(c);
  d.start();
  std::this_thread::sleep_for(120ms);
  d.stop();
  const auto events = d.drain_scanouts();
  const std::uint64_t p = period_ns(240);
  ASSERT_GE(events.size(), 20U);
  EXPECT_LE(events.size(), 40U);
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ((events[i].start_ns - events[0].start_ns) % p, 0U) << "scanout " << i;
    EXPECT_GT(events[i].start_ns, events[i - 1].start_ns);
    EXPECT_EQ(events[i].flipped, 0U) << "nothing asked for a flip";
  }
  EXPECT_EQ(d.counters().scanouts, events.size());
  EXPECT_EQ(d.counters().events_dropped, 0U);
}

TEST(display, variable_refresh_rescans_at_the_minimum_rate_and_flips_at_once) {
  RESIDENT_REQUIRE_GPU();
  display_config c{.width = 64,
                   .height = 32,
                   .refresh_hz = 240,
                   .min_refresh_hz = 30,
                   .sync = io::display_sync::variable};
  display d(c);
  egress_driver egress(d);
  d.start();
  std::this_thread::sleep_for(110ms);  // no flips: the panel rescans every 1/30 s
  const auto idle = d.drain_scanouts();
  ASSERT_GE(idle.size(), 3U);
  for (std::size_t i = 1; i < idle.size(); ++i) {
    EXPECT_EQ(idle[i].start_ns - idle[i - 1].start_ns, period_ns(30)) << "rescan " << i;
  }
  for (std::uint64_t frame = 1; frame <= 8; ++frame) {
    egress.present(frame);
    std::this_thread::sleep_for(frame % 2 == 0 ? 10ms : 1ms);  // some flips come early
  }
  std::this_thread::sleep_for(20ms);
  d.stop();
  const auto events = d.drain_scanouts();
  std::uint64_t previous = idle.back().start_ns;
  int flips = 0;
  for (const auto& e : events) {
    EXPECT_GE(e.start_ns - previous, period_ns(240)) << "never faster than the maximum rate";
    if (e.flipped != 0U) {
      ++flips;
      EXPECT_GE(e.start_ns, e.flip_request_ns);
      // At once, or as soon as the minimum period since the last scanout allows.
      const std::uint64_t allowed = std::max(e.flip_request_ns, previous + period_ns(240));
      EXPECT_LT(e.start_ns - allowed, 200'000U) << "frame " << e.frame;
    }
    previous = e.start_ns;
  }
  EXPECT_GE(flips, 4);
  const auto counts = d.counters();
  EXPECT_EQ(counts.frames_written, 8U);
  EXPECT_EQ(counts.flips_latched + counts.flips_replaced, 8U);
}

TEST(display, a_flip_waits_for_the_next_vblank_and_a_newer_frame_replaces_it) {
  RESIDENT_REQUIRE_GPU();
  display_config c{.width = 64, .height = 32, .refresh_hz = 60, .sync = io::display_sync::fixed};
  display d(c);
  egress_driver egress(d);
  d.start();
  // Right after a vblank, so that both frames come within one frame time (16.7 ms).
  std::vector<io::scanout_event> events;
  const auto deadline = std::chrono::steady_clock::now() + 200ms;
  while (events.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    for (const auto& e : d.drain_scanouts()) events.push_back(e);
  }
  ASSERT_GE(events.size(), 2U) << "no vblank within 200 ms";
  egress.present(1);
  egress.present(2);  // before the next vblank: frame 1's flip is withdrawn
  std::this_thread::sleep_for(40ms);
  d.stop();
  for (const auto& e : d.drain_scanouts()) events.push_back(e);
  const std::uint64_t p = period_ns(60);
  std::vector<io::scanout_event> flipped;
  for (const auto& e : events) {
    EXPECT_EQ((e.start_ns - events[0].start_ns) % p, 0U) << "on the grid";
    if (e.flipped != 0U) flipped.push_back(e);
  }
  ASSERT_EQ(flipped.size(), 1U);
  EXPECT_EQ(flipped[0].frame, 2U);
  EXPECT_EQ(flipped[0].buffer, 1U) << "the back buffer becomes the front";
  EXPECT_GT(flipped[0].start_ns, flipped[0].flip_request_ns);
  EXPECT_LE(flipped[0].start_ns - flipped[0].flip_request_ns, p) << "the next vblank";
  const auto counts = d.counters();
  EXPECT_EQ(counts.flips_latched, 1U);
  EXPECT_EQ(counts.flips_replaced, 1U);
  EXPECT_EQ(d.front(), 1U);
  const auto commits = d.drain_commits();
  ASSERT_EQ(commits.size(), 2U);
  EXPECT_EQ(commits[1].frame, 2U);
  EXPECT_EQ(commits[1].commit_ns, egress.commit_stamp()) << "stage::commit is the commit time";
}

TEST(display, front_buffer_mode_writes_the_buffer_being_scanned_out) {
  RESIDENT_REQUIRE_GPU();
  display_config c{.width = 64,
                   .height = 32,
                   .refresh_hz = 240,
                   .sync = io::display_sync::fixed,
                   .mode = io::present_mode::front_buffer};
  display d(c);
  egress_driver egress(d);
  egress.set_image(flat_image(c, 255));
  d.start();
  std::this_thread::sleep_for(5ms);
  egress.present(3);
  std::this_thread::sleep_for(20ms);
  d.stop();
  EXPECT_EQ(d.front(), 0U);
  std::vector<std::uint8_t> front(d.image_bytes());
  std::vector<std::uint8_t> back(d.image_bytes());
  d.copy_buffer(0, front);
  d.copy_buffer(1, back);
  EXPECT_THAT(front, ::testing::Each(255));
  EXPECT_THAT(back, ::testing::Each(0)) << "the other buffer is never written";
  bool seen = false;
  for (const auto& e : d.drain_scanouts()) {
    EXPECT_EQ(e.buffer, 0U);
    seen |= e.frame == 3U;
  }
  EXPECT_TRUE(seen) << "a later scanout shows frame 3 from the same buffer";
}

TEST(display, the_photodiode_sees_a_lit_probe_when_the_raster_reaches_it) {
  RESIDENT_REQUIRE_GPU();
  display_config c{.width = 128,
                   .height = 96,
                   .refresh_hz = 240,
                   .sync = io::display_sync::fixed,
                   .probe = {16, 48, 16, 8},
                   .probe_threshold = 128};
  display d(c);
  egress_driver egress(d);
  std::vector<std::uint8_t> image = flat_image(c, 0);
  for (std::uint32_t y = 48; y < 56; ++y) {
    for (std::uint32_t x = 16; x < 32; ++x) {
      for (int ch = 0; ch < 3; ++ch) image[(std::size_t{y} * c.width + x) * 4 + ch] = 255;
    }
  }
  egress.set_image(image);
  d.start();
  std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(d.drain_photodiode().empty()) << "a black screen";
  egress.present(7);
  std::this_thread::sleep_for(30ms);
  d.stop();
  const auto edges = d.drain_photodiode();
  ASSERT_EQ(edges.size(), 1U) << "one rising edge: the probe stays lit";
  EXPECT_EQ(edges[0].frame, 7U);
  const auto commits = d.drain_commits();
  ASSERT_EQ(commits.size(), 1U);
  EXPECT_GT(edges[0].t_ns, commits[0].commit_ns) << "seen after it was written";
  const auto scanouts = d.drain_scanouts();
  const io::scanout_event* shown = nullptr;
  for (const auto& e : scanouts) {
    if (e.flipped != 0U && e.frame == 7U) shown = &e;
    if (shown != nullptr) break;
  }
  ASSERT_NE(shown, nullptr);
  // The probe's first row (48 of 96) is scanned half a frame time after the scanout starts.
  const std::uint64_t row_time = shown->start_ns + period_ns(240) * 48 / 96;
  EXPECT_GE(edges[0].t_ns, row_time);
  EXPECT_LT(edges[0].t_ns - row_time, 100'000U);
}

TEST(display_tx, writes_the_gamma_encoded_image_like_the_cpu_reference) {
  RESIDENT_REQUIRE_GPU();
  for (const std::string input : {"rgba16", "rgba8"}) {
    SCOPED_TRACE(input);
    // An odd size: the kernel's vector loop and its tail both run.
    const display_config c{.width = 37, .height = 11};
    auto d = std::make_shared<display>(c);
    const bool wide = input == "rgba16";
    const std::uint32_t full = wide ? 65535 : 255;
    std::mt19937 rng{std::random_device{}()};
    std::uniform_int_distribution<std::uint32_t> value(0, full);
    const std::size_t samples = std::size_t{c.width} * c.height * 4;
    std::vector<std::uint16_t> linear(samples);
    for (auto& v : linear) v = static_cast<std::uint16_t>(value(rng));
    std::vector<std::uint8_t> bytes(samples * (wide ? 2 : 1));
    for (std::size_t i = 0; i < samples; ++i) {
      if (wide) {
        std::memcpy(&bytes[2 * i], &linear[i], 2);
      } else {
        bytes[i] = static_cast<std::uint8_t>(linear[i]);
      }
    }
    device_buffer rgb(bytes.size());
    device_buffer integrity(sizeof(io::frame_integrity));
    const io::frame_integrity ok = intact(c.height);
    RESIDENT_CUDA_TRY(cudaMemcpy(rgb.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    RESIDENT_CUDA_TRY(cudaMemcpy(integrity.data(), &ok, sizeof(ok), cudaMemcpyHostToDevice));

    class egress_app final : public Application {
     public:
      egress_app(std::shared_ptr<display> d, std::string input, void* rgb, std::size_t rgb_bytes,
                 void* integrity)
          : _d(std::move(d)),
            _input(std::move(input)),
            _rgb(rgb),
            _bytes(rgb_bytes),
            _integrity(integrity) {}
      void compose() override {
        auto image = make_operator<ops::external_source>("image", _rgb, _bytes);
        auto check =
            make_operator<ops::external_source>("check", _integrity, sizeof(io::frame_integrity));
        auto tx =
            make_operator<io::display_tx>("egress", _d, arg("gamma", 2.2), arg("input", _input));
        add_flow(image, tx, {{"out", "rgb"}});
        add_flow(check, tx, {{"out", "integrity"}});
      }

     private:
      std::shared_ptr<display> _d;
      std::string _input;
      void* _rgb;
      std::size_t _bytes;
      void* _integrity;
    } app(d, input, rgb.data(), bytes.size(), integrity.data());
    direct_submission sub(app);
    stream s;
    sub.submit(s);
    ASSERT_TRUE(s.synchronize_for(1s));

    std::vector<std::uint8_t> out(d->image_bytes());
    d->copy_buffer(1, out);  // flip mode: the back buffer of a fresh display
    for (std::size_t px = 0; px < out.size() / 4; ++px) {
      for (int ch = 0; ch < 3; ++ch) {
        ASSERT_EQ(out[4 * px + ch], io::gamma_encode(linear[4 * px + ch], full, 2.2))
            << "pixel " << px << " channel " << ch << " linear " << linear[4 * px + ch];
      }
      ASSERT_EQ(out[4 * px + 3], 255);
    }
    EXPECT_EQ(d->counters().frames_written, 1U);
    const auto commits = d->drain_commits();
    ASSERT_EQ(commits.size(), 1U);
    EXPECT_EQ(commits[0].frame, 0U) << "outside a loop the frame number is 0";
  }
}

TEST(display_tx, a_corrupt_frame_writes_nothing_and_is_counted) {
  RESIDENT_REQUIRE_GPU();
  const display_config c{.width = 64, .height = 32};
  display d(c);
  egress_driver egress(d);
  egress.set_image(flat_image(c, 200));
  io::frame_integrity bad = intact(c.height);
  bad.crc_errors = 1;
  egress.set_integrity(bad);
  egress.present(5);
  egress.present(6);
  std::vector<std::uint8_t> buffer(d.image_bytes());
  for (std::uint32_t b = 0; b < 2; ++b) {
    d.copy_buffer(b, buffer);
    EXPECT_THAT(buffer, ::testing::Each(0)) << "buffer " << b;
  }
  const auto counts = d.counters();
  EXPECT_EQ(counts.corrupt_frames, 2U);
  EXPECT_EQ(counts.frames_written, 0U);
  EXPECT_TRUE(d.drain_commits().empty());
  EXPECT_EQ(egress.commit_stamp(), 0U) << "no commit stamped";
  egress.set_integrity(intact(c.height));
  egress.present(7);  // the next good frame is written: the grid's state was reset
  EXPECT_EQ(d.counters().frames_written, 1U);
}

TEST(display_tx, refuses_bad_parameters) {
  RESIDENT_REQUIRE_GPU();
  EXPECT_THROW((void)display(display_config{.width = 0}), std::invalid_argument);
  EXPECT_THROW((void)display(display_config{.width = 8, .height = 8, .probe = {4, 4, 8, 8}}),
               std::invalid_argument);
  EXPECT_THROW((void)display(display_config{.refresh_hz = 60, .min_refresh_hz = 120}),
               std::invalid_argument);
  EXPECT_EQ(io::gamma_encode(0, 255, 2.2), 0);
  EXPECT_EQ(io::gamma_encode(255, 255, 2.2), 255);
  EXPECT_EQ(io::gamma_encode(65535, 65535, 2.2), 255);
}

TEST(display, stop_ends_the_engine_within_milliseconds) {
  RESIDENT_REQUIRE_GPU();
  // A variable-refresh panel with no flips sleeps toward its next rescan 33 ms away.
  display d(display_config{.width = 64, .height = 32, .min_refresh_hz = 30});
  d.start();
  EXPECT_TRUE(d.running());
  std::this_thread::sleep_for(5ms);
  const auto t0 = std::chrono::steady_clock::now();
  d.stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(d.running());
  EXPECT_LT(took, 10ms);
  EXPECT_THROW(
      {
        d.start();
        d.start();
      },
      std::logic_error);
  d.stop();
}

TEST(display, the_destructor_stops_a_running_engine) {
  RESIDENT_REQUIRE_GPU();
  const auto t0 = std::chrono::steady_clock::now();
  {
    display d(display_config{.width = 64, .height = 32, .sync = io::display_sync::fixed});
    d.start();
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
  // Nothing of the engine is left running: the whole device goes idle.
  RESIDENT_CUDA_TRY(cudaDeviceSynchronize());
}

// An engine that does not stop when asked: stop() says so, and the destructor neither waits for
// it nor frees the memory it still uses (freeing would wait for the kernel, or fault it).
TEST(display, an_engine_that_does_not_stop_keeps_its_memory_and_is_not_waited_for) {
  RESIDENT_REQUIRE_GPU();
  auto d = std::make_unique<display>(
      display_config{.width = 64, .height = 32, .sync = io::display_sync::fixed});
  d->start();
  d->inject_stop_hold(2500ms);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(d->stop(100ms), std::runtime_error);
  EXPECT_TRUE(d->running()) << "the engine did not stop, so the display still counts it running";
  d.reset();  // its own stop waits 1 s, fails again, and leaves the memory allocated
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2000ms)
      << "the destructor waited for the engine instead of leaving its memory";
  // The engine ends by itself 2.5 s after it saw the stop request, on memory still valid.
  RESIDENT_CUDA_TRY(cudaDeviceSynchronize());
  EXPECT_GT(std::chrono::steady_clock::now() - t0, 2000ms);
}

}  // namespace
}  // namespace resident::testing
