// The camera-to-display application and one run of it (see camera.hpp).

#include "camera/camera.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

#include "resident/app/error.hpp"
#include "resident/cuda/device.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/imaging/png.hpp"
#include "resident/measure/statistics.hpp"
#include "resident/ops/imaging.hpp"

namespace resident::camera {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

}  // namespace

camera_app::camera_app(camera_settings s, std::shared_ptr<io::sensor_bridge> bridge,
                       std::shared_ptr<io::display> display)
    : Application("camera"),
      _settings(std::move(s)),
      _bridge(std::move(bridge)),
      _display(std::move(display)) {}

void camera_app::compose() {
  namespace im = ops::imaging;
  const auto& k = _settings.sensor;
  const auto w = static_cast<std::int64_t>(k.width);
  const auto h = static_cast<std::int64_t>(k.height);
  const auto bits = static_cast<std::int64_t>(k.format);
  const std::string order(io::to_string(k.order));
  auto rx = make_operator<io::frame_rx>("rx", _bridge);
  register_data_ready_handler(_bridge->make_handler(rx));
  if (_settings.isp == "fused") {
    auto isp = make_operator<im::camera_isp>(
        "isp", _display, arg("width", w), arg("height", h),
        arg("format", std::string(io::csi2::to_string(k.format))), arg("order", order),
        arg("black_level", static_cast<std::int64_t>(k.black_level)),
        arg("white_balance", _settings.white_balance), arg("demosaic", _settings.demosaic),
        arg("gamma", _settings.gamma), arg("statistics", _settings.statistics),
        arg("grid", _settings.isp_grid));
    add_flow(rx, isp, {{"frame", "frame"}});
    return;
  }
  auto rec = make_operator<im::csi2_reconstruct>(
      "reconstruct", arg("width", w), arg("height", h),
      arg("format", std::string(io::csi2::to_string(k.format))), arg("order", order));
  auto isp = make_operator<im::raw_isp>(
      "isp", arg("width", w), arg("height", h), arg("order", order), arg("bits", bits),
      arg("black_level", static_cast<std::int64_t>(k.black_level)),
      arg("white_balance", _settings.white_balance));
  std::shared_ptr<Operator> dem;
  if (_settings.demosaic == "npp") {
#if RESIDENT_HAVE_NPP
    dem = make_operator<im::npp_demosaic>("demosaic", arg("width", w), arg("height", h),
                                          arg("order", order));
#else
    throw config_error(
        "pipeline.demosaic 'npp': this build has no NPP (the CUDA toolkit it was "
        "built with lacks it); use malvar or bilinear");
#endif
  } else {
    dem = make_operator<im::demosaic>(
        "demosaic", arg("width", w), arg("height", h), arg("order", order), arg("bits", bits),
        arg("algorithm", _settings.demosaic), arg("output", std::string("rgba16")));
  }
  auto tx = make_operator<io::display_tx>("display", _display, arg("gamma", _settings.gamma),
                                          arg("input", std::string("rgba16")));
  add_flow(rx, rec, {{"frame", "frame"}});
  add_flow(rec, isp, {{"bayer", "in"}});
  add_flow(isp, dem, {{"out", "bayer"}});
  add_flow(dem, tx, {{"rgb", "rgb"}});
  add_flow(rec, tx, {{"integrity", "integrity"}});
}

io::rgb8_image load_photo(const std::string& name) {
  std::filesystem::path p(name);
  if (p.extension() != ".png") p = imaging::photo_dir() / (name + ".png");
  if (!std::filesystem::exists(p)) {
    throw config_error("photograph '" + name + "' not found (looked for " + p.string() +
                       "); scripts/deps fetches the photograph set, or give a PNG path");
  }
  return imaging::read_png(p);
}

io::rgb8_image test_card(std::uint32_t width, std::uint32_t height) {
  io::rgb8_image card{width, height, std::vector<std::uint8_t>(std::size_t{width} * height * 3)};
  constexpr std::uint8_t bars[7][3] = {{235, 235, 235}, {235, 235, 16}, {16, 235, 235},
                                       {16, 235, 16},   {235, 16, 235}, {235, 16, 16},
                                       {16, 16, 235}};
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      auto* px = &card.rgb[(std::size_t{y} * width + x) * 3];
      const std::uint32_t band = y * 4 / height;
      for (int c = 0; c < 3; ++c) {
        if (band < 2) {
          px[c] = bars[x * 7 / width][c];
        } else if (band == 2) {
          px[c] = ((x / 24 + y / 24) % 2) != 0 ? 200 : 40;
        } else {
          px[c] = static_cast<std::uint8_t>(c == 0   ? x * 255 / width
                                            : c == 1 ? 128
                                                     : 255 - x * 255 / width);
        }
      }
    }
  }
  return card;
}

namespace {

io::display_config display_for(const camera_settings& s, const io::sensor_bridge& b) {
  io::display_config d = s.display;
  d.width = s.sensor.width;
  d.height = s.sensor.height;
  d.probe = b.config().led;  // the photodiode sits where the LED appears on screen
  return d;
}

// Snapshots of the screen for the dumps, taken off the critical path while the loop runs.
struct screen_dumps {
  std::vector<std::vector<std::uint8_t>> shots;
  std::vector<std::uint64_t> at_processed;
};

void take_shot(io::display& d, screen_dumps& dumps, std::uint64_t processed) {
  std::vector<std::uint8_t> img(d.image_bytes());
  d.copy_front(img);
  dumps.shots.push_back(std::move(img));
  dumps.at_processed.push_back(processed);
}

void write_dumps(const std::filesystem::path& dir, const io::display& d, const screen_dumps& s,
                 camera_result& r) {
  if (s.shots.empty()) return;
  std::filesystem::create_directories(dir);
  const auto w = d.config().width;
  const auto h = d.config().height;
  const std::string stem = r.mode;
  const auto first = dir / (stem + "-first.png");
  const auto last = dir / (stem + "-last.png");
  imaging::write_png(first, w, h, std::size_t{w} * 4, s.shots.front());
  imaging::write_png(last, w, h, std::size_t{w} * 4, s.shots.back());
  std::vector<imaging::frame_view> views;
  for (const auto& shot : s.shots) views.push_back({w, h, std::size_t{w} * 4, shot});
  const auto sheet = imaging::contact_sheet(views, 4, 320);
  const auto sheet_path = dir / (stem + "-contact.png");
  imaging::write_png(sheet_path, sheet.width, sheet.height, std::size_t{sheet.width} * 4,
                     sheet.rgba);
  r.written = {first, last, sheet_path};
}

// Software latency per processed frame from the loop's telemetry: arrival -> commit, and the
// frame each sample belongs to.
void software_latency(const std::vector<telemetry_entry>& t, camera_result& r) {
  r.software_us.reserve(t.size());
  r.software_frames.reserve(t.size());
  for (const auto& e : t) {
    if (const auto us = software_latency_us(e)) {
      r.software_us.push_back(*us);
      r.software_frames.push_back(e.seq);
    }
  }
}

}  // namespace

std::optional<double> software_latency_us(const telemetry_entry& e) noexcept {
  const auto arrival = e.stamp_ns[static_cast<std::size_t>(stage::arrival)];
  const auto commit = e.stamp_ns[static_cast<std::size_t>(stage::commit)];
  if (e.repeat != 0 || arrival == 0 || commit < arrival) return std::nullopt;
  return static_cast<double>(commit - arrival) / 1000.0;
}

std::vector<frame_stages> stages_of(const std::vector<telemetry_entry>& telemetry,
                                    const std::vector<io::frame_log>& log) {
  std::map<std::uint64_t, const io::frame_log*> by_frame;
  for (const auto& f : log) by_frame[f.frame] = &f;
  const auto at = [](const telemetry_entry& e, stage s) {
    return e.stamp_ns[static_cast<std::size_t>(s)];
  };
  std::vector<frame_stages> out;
  out.reserve(telemetry.size());
  for (const auto& e : telemetry) {
    if (e.repeat != 0) continue;
    frame_stages f;
    f.frame = e.seq;
    if (const auto it = by_frame.find(e.seq); it != by_frame.end()) {
      f.sensor_start_ns = it->second->frame_start_ns;
      f.sensor_late_ns = it->second->late_ns;
    }
    f.arrival_ns = at(e, stage::arrival);
    f.handler_start_ns = at(e, stage::handler_start);
    f.detect_ns = at(e, stage::detect);
    f.release_ns = at(e, stage::controller_end);
    f.commit_ns = at(e, stage::commit);
    out.push_back(f);
  }
  return out;
}

namespace {

// Photon to display per marked frame the photodiode saw: its edge minus the LED's switch-on at
// the frame's start.
void photon_latency(const std::vector<io::photodiode_event>& edges,
                    const std::vector<io::frame_log>& log, camera_result& r) {
  std::map<std::uint64_t, std::uint64_t> start;
  for (const auto& f : log) {
    if (f.led_lit) start[f.frame] = f.frame_start_ns;
  }
  for (const auto& e : edges) {
    const auto it = start.find(e.frame);
    if (it == start.end() || e.t_ns < it->second) continue;
    r.photon_us.push_back(static_cast<double>(e.t_ns - it->second) / 1000.0);
    r.photon_frames.push_back(e.frame);
  }
}

// Stops the display engine and the sensor when it goes out of scope (idempotent).
struct stop_guard {
  stop_guard(io::display* d, io::sensor_bridge* b) : display(d), bridge(b) {}
  io::display* display;
  io::sensor_bridge* bridge;
  stop_guard(const stop_guard&) = delete;
  stop_guard& operator=(const stop_guard&) = delete;
  ~stop_guard() {
    try {
      bridge->stop();
      display->stop();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "camera: stopping the display or the sensor failed: %s\n", e.what());
    }
  }
};

void start_sensor(io::sensor_bridge& bridge, const camera_run_options& o, camera_result& r) {
  if (!o.sensor_realtime) {
    bridge.start();
    return;
  }
  // glibc threads inherit their creator's scheduling policy: the sensor thread starts with this
  // one's, which goes back to SCHED_OTHER once it runs.
  r.sensor_grant = measure::configure_current_thread(-1, true);
  bridge.start();
  (void)measure::configure_current_thread(-1, false);
}

// Which frames were shown (each once, in order) and what the sensor's log says about the run.
void collect_frames(const std::vector<io::scanout_event>& scanouts,
                    const std::vector<io::frame_log>& log, camera_result& r) {
  std::uint64_t last_frame = 0;
  for (const auto& e : scanouts) {
    if (e.frame != 0 && e.frame != last_frame) r.shown_frames.push_back(e.frame);
    last_frame = e.frame;
  }
  for (const auto& f : log) {
    if (f.frame <= r.counters.start_seq) continue;
    if (f.led_lit) ++r.marked_frames;
    if (f.faulty) r.faulty_frames.push_back(f.frame);
    if (f.late_ns > 100'000) ++r.late_sensor_frames;
  }
}

}  // namespace

camera_result run_camera(const camera_settings& s, const camera_mode& m,
                         const camera_run_options& o, const io::rgb8_image& photo) {
  camera_settings settings = s;
  settings.sensor.delivery = m.delivery;
  settings.sensor.cpu = o.sensor_cpu;
  auto bridge = std::make_shared<io::sensor_bridge>(settings.sensor, photo);
  auto display = std::make_shared<io::display>(display_for(settings, *bridge));
  camera_app app(settings, bridge, display);
  app.materialize();

  camera_result r;
  r.mode = m.name;
  run_options opts;
  opts.policy = o.policy;
  opts.capture = o.capture;
  opts.poll_ns = is_resident(m.mode) ? o.poll_ns : 0;
  if (m.mode == execution_mode::persistent) {
    opts.persistent_blocks = std::max(o.persistent_blocks, 0);  // 0: the runtime's rule
  }
  opts.phase_times = o.phase_times;
  opts.deadline = o.deadline;
  opts.phase_rows =
      static_cast<std::uint32_t>(std::clamp<std::uint64_t>(o.frames + 1, 2, 1U << 20));
  opts.on_loop_thread_start = o.on_loop_thread_start;
  const bool streaming = static_cast<bool>(o.on_telemetry);
  // Streaming: a ring the supervisor drains (every 50 ms; half of it is 1 s of frames at 4 kHz).
  opts.telemetry_samples =
      streaming ? 8192 : std::bit_ceil(std::max<std::uint64_t>(o.frames + 64, 1024));
  opts.on_telemetry = o.on_telemetry;
  const auto timeout = o.timeout.count() > 0
                           ? std::chrono::duration<double>(o.timeout)
                           : std::chrono::duration<double>(o.frames / s.sensor.rate_hz + 10.0);
  screen_dumps dumps;
  std::vector<io::scanout_event> scanouts;
  std::vector<io::photodiode_event> edges;
  std::vector<telemetry_entry> telemetry;
  if (!streaming) {
    // Touched before the run (resize, then clear keeps the capacity), so that collecting the
    // events of a long run does not grow the process while it is measured (bench soak).
    const double seconds = timeout.count();
    const auto expected = static_cast<std::size_t>(
        std::clamp(seconds * std::max(settings.display.refresh_hz, 1.0) * 1.1 + 1024.0, 0.0,
                   double(1U << 20)));
    scanouts.resize(expected);
    scanouts.clear();
    edges.resize(expected / 8 + 64);
    edges.clear();
  }
  auto drain = [&] {
    auto s1 = display->drain_scanouts();
    auto s2 = display->drain_photodiode();
    if (streaming) return;  // drained all the same: the display's own buffers stay bounded
    scanouts.insert(scanouts.end(), s1.begin(), s1.end());
    edges.insert(edges.end(), s2.begin(), s2.end());
  };
  // While the display engine runs, freeing device memory may wait for it: whatever leaves this
  // function, the display and the sensor stop before the loop's and the application's memory
  // is freed (the guards are destroyed before `app`, and before `run` in the scope below).
  const stop_guard endpoints_stopped{display.get(), bridge.get()};
  display->start();
  start_sensor(*bridge, o, r);
  {
    run_handle run(app, m.mode, opts);
    const stop_guard stopped_before_the_loop{display.get(), bridge.get()};
    const auto start = clock_type::now();
    auto next_progress = start + 1s;
    std::uint64_t next_shot = 1;
    const std::uint64_t shot_every = std::max<std::uint64_t>(o.frames / 11, 1);
    for (;;) {
      const loop_counters c = run.counters();
      if (c.processed >= o.frames || clock_type::now() - start > timeout) break;
      if (o.stop != nullptr && o.stop->load()) break;
      if (o.during) o.during(*bridge, c);
      if (o.watch) o.watch(*bridge, *display, c);
      drain();
      if (!o.dump.empty() && c.processed >= next_shot && display->counters().frames_written > 0) {
        take_shot(*display, dumps, c.processed);
        next_shot = dumps.shots.size() == 1 ? shot_every : next_shot + shot_every;
      }
      if (o.progress && clock_type::now() >= next_progress) {
        std::fprintf(stderr, "camera %s: %llu/%llu frames processed, %llu dropped\n",
                     m.name.c_str(), static_cast<unsigned long long>(c.processed),
                     static_cast<unsigned long long>(o.frames),
                     static_cast<unsigned long long>(c.dropped));
        next_progress += 1s;
      }
      std::this_thread::sleep_for(2ms);
    }
    bridge->stop();
    std::this_thread::sleep_for(20ms);  // the loop takes the frames already delivered
    const tear_down_report rep = run.tear_down();
    r.counters = rep.counters;
    r.phases = rep.phases;
    r.error = rep.error;
    if (!rep.stopped && r.error.empty()) r.error = "the loop did not stop";
    telemetry = run.telemetry();
    software_latency(telemetry, r);
    for (const auto& e : telemetry) {
      if (e.repeat == 0) r.processed_frames.push_back(e.seq);
    }
    if (!o.dump.empty()) take_shot(*display, dumps, r.counters.processed);
    if (o.keep_screen) {
      r.screen.resize(display->image_bytes());
      const std::uint32_t front = display->front();
      display->copy_buffer(front, r.screen);
      r.screen_frame = display->buffer_frame(front);
    }
    display->stop();
    drain();
  }
  r.produced = bridge->produced() - r.counters.start_seq;
  r.display = display->counters();
  const auto log = bridge->log();
  collect_frames(scanouts, log, r);
  r.displayed = r.shown_frames.size();
  photon_latency(edges, log, r);
  r.stages = stages_of(telemetry, log);
  if (!bridge->failure().empty()) r.error += (r.error.empty() ? "" : "; ") + bridge->failure();
  if (!o.dump.empty()) write_dumps(o.dump, *display, dumps, r);
  return r;
}

void print_phase_times(const std::vector<phase_time>& phases) {
  std::printf(
      "  device time per phase of a DAG pass (%llu passes; first thread's clock, barrier "
      "to barrier), us:\n",
      static_cast<unsigned long long>(phases.front().passes));
  std::printf("    %-26s %-24s %5s %8s %8s %8s %8s\n", "operator", "form", "phase", "mean", "p50",
              "p99", "max");
  double total = 0;
  for (const phase_time& t : phases) {
    std::printf("    %-26s %-24s %5u %8.2f %8.2f %8.2f %8.2f\n", t.op.c_str(), t.form.c_str(),
                t.phase, t.mean_ns / 1e3, t.p50_ns / 1e3, t.p99_ns / 1e3, t.max_ns / 1e3);
    total += t.mean_ns;
  }
  std::printf("    %-26s %-18s %5s %8.2f\n", "(sum of means)", "", "", total / 1e3);
}

void print_camera_result(const camera_result& r) {
  const auto& c = r.counters;
  std::printf(
      "camera %s: %llu frames produced, %llu processed, %llu dropped, %llu repeated, "
      "%llu corrupt (not displayed; %llu of them rewritten in the ring while read), %llu written "
      "to the display, %llu shown\n",
      r.mode.c_str(), static_cast<unsigned long long>(r.produced),
      static_cast<unsigned long long>(c.processed), static_cast<unsigned long long>(c.dropped),
      static_cast<unsigned long long>(c.repeated),
      static_cast<unsigned long long>(r.display.corrupt_frames),
      static_cast<unsigned long long>(r.display.rewritten_frames),
      static_cast<unsigned long long>(r.display.frames_written),
      static_cast<unsigned long long>(r.displayed));
  auto line = [](const char* what, const std::vector<double>& v) {
    if (v.empty()) {
      std::printf("  %-34s no samples\n", what);
      return;
    }
    const auto s = measure::summarize(v);
    std::printf("  %-34s n %zu  mean %.1f  p50 %.1f  p99 %.1f  max %.1f  J %.1f us\n", what, s.n,
                s.mean, s.p50, s.p99, s.max, s.jitter);
  };
  line("software (arrival -> scanout written)", r.software_us);
  line("photon to display (LED -> photodiode)", r.photon_us);
  if (r.late_sensor_frames > 0) {
    std::printf("  note: the sensor thread delivered %llu frames more than 100 us late\n",
                static_cast<unsigned long long>(r.late_sensor_frames));
  }
  if (!r.phases.empty()) print_phase_times(r.phases);
  for (const auto& p : r.written) std::printf("  wrote %s\n", p.string().c_str());
  if (!r.error.empty()) std::printf("  error: %s\n", r.error.c_str());
}

}  // namespace resident::camera
