// The camera-to-display pipeline end to end: the same screen in every mode and equal to the CPU
// pipeline, corrupt frames counted and never shown, a sensor faster than the loop, a bridge that
// stalls and a tear-down mid-stream, all with exact frame accounting.

#include <gmock/gmock.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "gpu/support.hpp"

#if RESIDENT_HAVE_BENCH
#include "camera/camera.hpp"
#include "resident/imaging/reference.hpp"
#include "resident/io/csi2.hpp"

namespace resident::testing {
namespace {

using camera::camera_mode;
using camera::camera_result;
using camera::camera_run_options;
using camera::camera_settings;

io::rgb8_image test_card(std::uint32_t w, std::uint32_t h) {
  io::rgb8_image p{w, h, std::vector<std::uint8_t>(std::size_t{w} * h * 3)};
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      auto* px = &p.rgb[(std::size_t{y} * w + x) * 3];
      px[0] = static_cast<std::uint8_t>(40 + x * 180 / w);
      px[1] = static_cast<std::uint8_t>(30 + ((x / 16 + y / 16) % 2) * 150);
      px[2] = static_cast<std::uint8_t>(20 + y * 200 / h);
    }
  }
  return p;
}

camera_settings small_camera(double rate_hz, std::uint32_t distinct = 8) {
  camera_settings s;
  s.isp = "unfused";  // these tests are the four-operator chain's; the fused pass's call fused()
  s.sensor.width = 256;
  s.sensor.height = 128;
  s.sensor.format = io::csi2::raw_format::raw12;
  s.sensor.order = io::bayer_order::grbg;
  s.sensor.rate_hz = rate_hz;
  s.sensor.distinct_frames = distinct;
  s.display.refresh_hz = 240.0;
  return s;
}

camera_result run(const camera_settings& s, std::string_view mode, camera_run_options o) {
  o.progress = false;
  if (o.timeout.count() == 0) o.timeout = std::chrono::seconds(20);
  return camera::run_camera(s, camera::parse_camera_mode(mode), o, test_card(300, 200));
}

void expect_exact_accounting(const camera_result& r) {
  const auto& c = r.counters;
  EXPECT_EQ(r.error, "") << r.mode;
  EXPECT_EQ(c.processed + c.dropped, c.last_seq - c.start_seq) << r.mode;
  EXPECT_EQ(r.display.frames_written + r.display.corrupt_frames, c.processed)
      << r.mode << ": each processed frame is written to the display or refused as corrupt";
  const std::set<std::uint64_t> processed(r.processed_frames.begin(), r.processed_frames.end());
  for (const auto f : r.shown_frames) {
    EXPECT_EQ(processed.count(f), 1U) << r.mode << ": frame " << f << " shown, never processed";
  }
}

const std::vector<std::string_view> all_camera_modes{"cpu-hostmem", "eager", "host-graph",
                                                     "while",       "tail",  "persistent"};

// The CPU pipeline of prebuilt frame `distinct` corrected with `multipliers` (another frame's
// grey-world gains: previous-frame statistics).
std::vector<std::uint8_t> cpu_screen_with(const camera_settings& s, const io::sensor_bridge& b,
                                          std::uint32_t distinct,
                                          const std::array<std::uint64_t, 3>& multipliers) {
  namespace ref = imaging::reference;
  const auto& k = s.sensor;
  const unsigned bits = static_cast<unsigned>(k.format);
  const float max_value = static_cast<float>((1U << bits) - 1U);
  const auto raw = ref::correct_raw(b.pixels(distinct), k.width, k.height, k.order, bits,
                                    k.black_level, multipliers);
  const auto rgba16 =
      ref::to_rgba16(ref::demosaic_malvar(raw, k.width, k.height, k.order, max_value), max_value);
  std::vector<std::uint8_t> out(rgba16.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = i % 4 == 3 ? 255 : io::gamma_encode(rgba16[i], 65535, s.gamma);
  }
  return out;
}

// The CPU pipeline on the pixels of prebuilt frame `distinct`: ISP (the frame's own gains),
// Malvar demosaic, RGBA16, gamma.
std::vector<std::uint8_t> cpu_screen(const camera_settings& s, const io::sensor_bridge& b,
                                     std::uint32_t distinct = 0) {
  const auto& k = s.sensor;
  const auto isp = imaging::reference::raw_isp(b.pixels(distinct), k.width, k.height, k.order,
                                               static_cast<unsigned>(k.format), k.black_level,
                                               s.white_balance == "grey_world");
  return cpu_screen_with(s, b, distinct, isp.multipliers);
}

TEST(camera, shows_the_same_screen_in_every_mode_equal_to_the_cpu_pipeline) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = small_camera(500.0, 1);  // one distinct frame: every frame the same
  camera_run_options o;
  o.frames = 30;
  o.keep_screen = true;
  std::vector<std::uint8_t> first;
  for (const auto mode : all_camera_modes) {
    const camera_result r = run(s, mode, o);
    expect_exact_accounting(r);
    ASSERT_GE(r.counters.processed, 30U) << mode;
    ASSERT_FALSE(r.screen.empty());
    if (first.empty()) {
      first = r.screen;
      continue;
    }
    EXPECT_TRUE(r.screen == first)
        << mode << " shows a different screen than " << all_camera_modes.front();
  }
  io::sensor_bridge bridge(s.sensor, test_card(300, 200));
  const auto want = cpu_screen(s, bridge);
  ASSERT_EQ(want.size(), first.size());
  int worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(int(want[i]) - int(first[i])));
  }
  EXPECT_LE(worst, 1) << "the screen differs from the CPU pipeline by more than 1 LSB";
}

int worst_difference(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  int worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(int(a[i]) - int(b[i])));
  return worst;
}

// Frames that differ from one to the next (the photograph pans, the LED blinks): the screen at
// the end is the CPU pipeline of the very frame tagged on it. A form reading any image of an
// earlier pass (a read-only cache path over data the same launch rewrites) cannot match.
TEST(camera, the_screen_is_the_cpu_pipeline_of_the_frame_it_shows_when_frames_differ) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = small_camera(500.0, 8);
  io::sensor_bridge bridge(s.sensor, test_card(300, 200));
  std::map<std::uint32_t, std::vector<std::uint8_t>> want;
  for (std::uint32_t d = 0; d < s.sensor.distinct_frames; ++d) want[d] = cpu_screen(s, bridge, d);
  ASSERT_GT(worst_difference(want[1], want[2]), 8) << "the prebuilt frames must differ";
  for (const auto mode : {"while", "tail", "persistent"}) {
    for (const std::uint64_t frames : {37U, 50U}) {  // ends on different prebuilt frames
      SCOPED_TRACE(std::string(mode) + ", " + std::to_string(frames) + " frames");
      camera_run_options o;
      o.frames = frames;
      o.keep_screen = true;
      const camera_result r = run(s, mode, o);
      expect_exact_accounting(r);
      ASSERT_NE(r.screen_frame, 0U) << "a frame was shown";
      const auto& expected = want[bridge.distinct_of(r.screen_frame)];
      ASSERT_EQ(r.screen.size(), expected.size());
      EXPECT_LE(worst_difference(r.screen, expected), 1)
          << "the screen is not frame " << r.screen_frame << " through the CPU pipeline";
    }
  }
}

// A run of any length keeps nothing that grows with it: the loop's telemetry streams to the
// caller (each processed frame once, in order, with its arrival -> scanout latency), and the run
// keeps no per-frame record of its own, nor the bridge a frame log.
TEST(camera, streamed_telemetry_reaches_the_caller_and_the_run_keeps_none) {
  RESIDENT_REQUIRE_GPU();
  camera_settings s = small_camera(500.0, 8);
  s.sensor.log_frames = 0;
  for (const auto mode : {"while", "tail", "persistent"}) {
    SCOPED_TRACE(mode);
    std::vector<std::uint64_t> frames;
    std::vector<double> latency_us;
    camera_run_options o;
    o.frames = 200;
    o.on_telemetry = [&](std::span<const telemetry_entry> batch) {
      for (const telemetry_entry& e : batch) {
        if (e.repeat != 0) continue;
        frames.push_back(e.seq);
        if (const auto us = camera::software_latency_us(e)) latency_us.push_back(*us);
      }
    };
    const camera_result r = run(s, mode, o);
    expect_exact_accounting(r);
    ASSERT_GE(r.counters.processed, 200U);
    EXPECT_EQ(frames.size(), r.counters.processed) << "every processed frame, once";
    EXPECT_EQ(std::adjacent_find(frames.begin(), frames.end(), std::greater_equal<>()),
              frames.end())
        << "in order";
    ASSERT_EQ(latency_us.size(), frames.size()) << "each with its arrival and commit stamps";
    ASSERT_FALSE(latency_us.empty());
    EXPECT_GT(*std::min_element(latency_us.begin(), latency_us.end()), 0.0);
    EXPECT_TRUE(r.software_us.empty());
    EXPECT_TRUE(r.processed_frames.empty());
    EXPECT_TRUE(r.shown_frames.empty());
    EXPECT_TRUE(r.stages.empty());
  }
}

// persistent mode's phase times: one entry per phase of each camera form, in DAG order, and
// the timed kernel shows the untimed one's screen.
TEST(camera, persistent_phase_times_cover_every_form_and_change_no_pixel) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = small_camera(500.0, 1);
  camera_run_options o;
  o.frames = 30;
  o.keep_screen = true;
  o.persistent_blocks = 8;
  const camera_result plain = run(s, "persistent", o);
  o.phase_times = true;
  const camera_result timed = run(s, "persistent", o);
  expect_exact_accounting(plain);
  expect_exact_accounting(timed);
  EXPECT_TRUE(plain.phases.empty());
  ASSERT_FALSE(timed.screen.empty());
  EXPECT_TRUE(timed.screen == plain.screen) << "timing changed the screen";
  ASSERT_FALSE(timed.phases.empty());
  std::vector<std::string> forms;
  for (const phase_time& t : timed.phases) {
    if (forms.empty() || forms.back() != t.form) forms.push_back(t.form);
    // The run processes at least 30 frames and keeps up to 30 passes (phase_rows = frames + 1;
    // a pass that tear-down ends is not counted).
    EXPECT_GE(t.passes, 29U) << t.op << " phase " << t.phase;
    EXPECT_LE(t.passes, 30U) << t.op << " phase " << t.phase;
    EXPECT_GT(t.mean_ns, 0.0) << t.op << " phase " << t.phase;
    EXPECT_LE(t.p50_ns, t.max_ns) << t.op << " phase " << t.phase;
  }
  const std::vector<std::string> want{"imaging.csi2_reconstruct", "imaging.raw_isp",
                                      "imaging.demosaic", "io.display_tx", ""};
  EXPECT_EQ(forms, want);
  EXPECT_EQ(timed.phases.back().op, "(closing barrier)");
}

// Three faults mid-stream (two flipped header bits in line 10, a payload bit in line 20, then
// `third` at 25 processed frames): each faulty frame that was processed is counted corrupt and
// never shown, and the loop keeps showing frames after them.
void expect_corrupt_frames_never_shown(const camera_settings& s, const io::bridge_fault& third,
                                       std::initializer_list<const char*> modes) {
  const std::size_t line = io::csi2::line_bytes(s.sensor.format, s.sensor.width);
  for (const auto mode : modes) {
    camera_run_options o;
    o.frames = 40;
    int step = 0;
    o.during = [&](io::sensor_bridge& b, const loop_counters& c) {
      if (step == 0 && c.processed >= 5) {  // two flipped bits in line 10's header: uncorrectable
        b.inject({io::bridge_fault::kind::flip_bits, 4 + 10 * (line + 6) + 1, 0x03});
        ++step;
      } else if (step == 1 && c.processed >= 15) {  // a payload bit: the line's CRC fails
        b.inject({io::bridge_fault::kind::flip_bits, 4 + 20 * (line + 6) + 4 + 7, 0x40});
        ++step;
      } else if (step == 2 && c.processed >= 25) {
        b.inject(third);
        ++step;
      }
    };
    const camera_result r = run(s, mode, o);
    expect_exact_accounting(r);
    ASSERT_EQ(r.faulty_frames.size(), 3U) << mode;
    const std::set<std::uint64_t> processed(r.processed_frames.begin(), r.processed_frames.end());
    std::uint64_t faulty_processed = 0;
    for (const auto f : r.faulty_frames) {
      faulty_processed += processed.count(f);
      EXPECT_EQ(std::count(r.shown_frames.begin(), r.shown_frames.end(), f), 0)
          << mode << ": corrupt frame " << f << " was shown";
    }
    EXPECT_EQ(r.display.corrupt_frames, faulty_processed) << mode;
    EXPECT_GT(r.displayed, 10U) << mode << ": the loop kept showing frames after the faults";
  }
}

TEST(camera, counts_corrupt_frames_and_never_shows_them) {
  RESIDENT_REQUIRE_GPU();
  expect_corrupt_frames_never_shown(small_camera(200.0),
                                    {io::bridge_fault::kind::bad_status, 0, 0, {}},
                                    {"while", "host-graph", "cpu-hostmem", "persistent"});
}

TEST(camera, accounts_exactly_for_a_sensor_faster_than_the_loop) {
  RESIDENT_REQUIRE_GPU();
  camera_settings s = small_camera(20000.0);
  s.sensor.width = 1920;
  s.sensor.height = 1080;
  for (const auto mode : {"while", "host-graph", "cpu-hostmem"}) {
    camera_run_options o;
    o.frames = 1500;
    o.policy = sample_policy::every;
    const camera_result r = run(s, mode, o);
    expect_exact_accounting(r);
    EXPECT_GE(r.counters.processed, 1500U) << mode;
  }
}

TEST(camera, rides_out_a_bridge_that_stalls) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = small_camera(200.0);
  for (const auto mode : {"while", "tail"}) {
    camera_run_options o;
    o.frames = 40;
    bool stalled = false;
    o.during = [&](io::sensor_bridge& b, const loop_counters& c) {
      if (!stalled && c.processed >= 10) {
        b.inject({io::bridge_fault::kind::stall, 0, 0, std::chrono::microseconds(300'000)});
        stalled = true;
      }
    };
    const camera_result r = run(s, mode, o);
    expect_exact_accounting(r);
    EXPECT_GE(r.counters.processed, 40U) << mode << ": frames resume after the stall";
    EXPECT_EQ(r.counters.dropped, 0U) << mode << ": a stall delays frames, it loses none";
  }
}

TEST(camera, tears_down_mid_stream_with_exact_accounting) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = small_camera(3000.0);
  for (const auto& m : camera::compared_camera_modes()) {
    camera_run_options o;
    o.frames = 100'000'000;  // never reached: the timeout stops the run with frames in flight
    o.timeout = std::chrono::seconds(1);
    const camera_result r = run(s, m.name, o);
    expect_exact_accounting(r);
    EXPECT_GT(r.counters.processed, 100U) << m.name;
  }
}

// ---- the fused pass (pipeline.isp: fused) -------------------------------------------------------

camera_settings fused(camera_settings s, const char* statistics) {
  s.isp = "fused";
  s.statistics = statistics;
  return s;
}

TEST(camera_fused, same_frame_statistics_show_the_unfused_chains_bytes_in_every_mode) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings unfused = small_camera(500.0, 1);  // every frame the same
  camera_run_options o;
  o.frames = 30;
  o.keep_screen = true;
  const camera_result base = run(unfused, "while", o);
  expect_exact_accounting(base);
  ASSERT_FALSE(base.screen.empty());
  for (const auto mode : {"eager", "host-graph", "while", "tail", "persistent"}) {
    const camera_result r = run(fused(unfused, "same-frame"), mode, o);
    expect_exact_accounting(r);
    ASSERT_GE(r.counters.processed, 30U) << mode;
    ASSERT_EQ(r.screen.size(), base.screen.size()) << mode;
    EXPECT_TRUE(r.screen == base.screen)
        << mode << ": the fused screen differs from the unfused chain's by up to "
        << worst_difference(r.screen, base.screen) << " LSB";
  }
}

// Every RAW format and Bayer order, on a frame whose sides are not whole tiles (200 x 90: the
// last tile column and row are partial), bit for bit the unfused chain's screen.
TEST(camera_fused, every_format_and_bayer_order_on_partial_tiles_equals_the_unfused_chain) {
  RESIDENT_REQUIRE_GPU();
  for (const auto format :
       {io::csi2::raw_format::raw8, io::csi2::raw_format::raw10, io::csi2::raw_format::raw12}) {
    for (const auto order : {io::bayer_order::rggb, io::bayer_order::bggr, io::bayer_order::grbg,
                             io::bayer_order::gbrg}) {
      camera_settings s = small_camera(500.0, 1);
      s.sensor.width = 200;
      s.sensor.height = 90;
      s.sensor.format = format;
      s.sensor.order = order;
      s.sensor.black_level = format == io::csi2::raw_format::raw8    ? 16
                             : format == io::csi2::raw_format::raw10 ? 64
                                                                     : 256;
      SCOPED_TRACE(std::string(io::csi2::to_string(format)) + " " +
                   std::string(io::to_string(order)));
      camera_run_options o;
      o.frames = 10;
      o.keep_screen = true;
      const camera_result base = run(s, "while", o);
      const camera_result r = run(fused(s, "same-frame"), "while", o);
      expect_exact_accounting(base);
      expect_exact_accounting(r);
      ASSERT_FALSE(base.screen.empty());
      ASSERT_EQ(r.screen.size(), base.screen.size());
      EXPECT_TRUE(r.screen == base.screen)
          << "differs by up to " << worst_difference(r.screen, base.screen) << " LSB";
    }
  }
}

// Frames that differ (the photograph pans, the LED blinks): the screen is the CPU pipeline of
// the frame tagged on it, corrected with the grey-world gains of the frame processed before it.
TEST(camera_fused, previous_frame_statistics_are_the_cpu_pipeline_with_the_previous_frames_gains) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = fused(small_camera(500.0, 8), "previous-frame");
  io::sensor_bridge bridge(s.sensor, test_card(300, 200));
  const unsigned bits = static_cast<unsigned>(s.sensor.format);
  const auto gains_of = [&](std::uint32_t distinct) {
    return imaging::reference::raw_isp(bridge.pixels(distinct), s.sensor.width, s.sensor.height,
                                       s.sensor.order, bits, s.sensor.black_level, true)
        .multipliers;
  };
  for (const auto mode : {"host-graph", "while", "tail", "persistent"}) {
    for (const std::uint64_t frames : {37U, 50U}) {
      SCOPED_TRACE(std::string(mode) + ", " + std::to_string(frames) + " frames");
      camera_run_options o;
      o.frames = frames;
      o.keep_screen = true;
      const camera_result r = run(s, mode, o);
      expect_exact_accounting(r);
      ASSERT_NE(r.screen_frame, 0U) << "a frame was shown";
      const auto at =
          std::find(r.processed_frames.begin(), r.processed_frames.end(), r.screen_frame);
      ASSERT_NE(at, r.processed_frames.end());
      ASSERT_NE(at, r.processed_frames.begin()) << "the shown frame had a frame before it";
      const std::uint64_t previous = *(at - 1);
      const auto want = cpu_screen_with(s, bridge, bridge.distinct_of(r.screen_frame),
                                        gains_of(bridge.distinct_of(previous)));
      ASSERT_EQ(r.screen.size(), want.size());
      EXPECT_LE(worst_difference(r.screen, want), 1)
          << "the screen is not frame " << r.screen_frame << " with frame " << previous
          << "'s gains through the CPU pipeline";
    }
  }
}

TEST(camera_fused, counts_corrupt_frames_and_never_shows_them) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = fused(small_camera(200.0), "previous-frame");
  const std::size_t line = io::csi2::line_bytes(s.sensor.format, s.sensor.width);
  // The third fault: the last line's footer CRC, the last thing the fused pass checks.
  const io::bridge_fault last_footer{io::bridge_fault::kind::flip_bits,
                                     4 + (s.sensor.height - 1) * (line + 6) + 4 + line, 0x01};
  expect_corrupt_frames_never_shown(s, last_footer, {"while", "host-graph", "tail", "persistent"});
}

TEST(camera_fused, tears_down_mid_stream_with_exact_accounting) {
  RESIDENT_REQUIRE_GPU();
  const camera_settings s = fused(small_camera(3000.0), "previous-frame");
  for (const auto mode : {"host-graph", "while", "tail", "persistent"}) {
    camera_run_options o;
    o.frames = 100'000'000;
    o.timeout = std::chrono::seconds(1);
    const camera_result r = run(s, mode, o);
    expect_exact_accounting(r);
    EXPECT_GT(r.counters.processed, 100U) << mode;
  }
}

}  // namespace
}  // namespace resident::testing
#endif
