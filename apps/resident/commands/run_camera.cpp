// resident run CAMERA.yaml: the camera-to-display pipeline in one mode or the compared four.

#include <cmath>
#include <cstdio>

#include "camera/camera.hpp"
#include "commands/run.hpp"
#include "resident/app/error.hpp"

namespace resident::cli {

namespace {

/// The photograph the run shows: a PNG path must be there and decode; a name of the photograph
/// set that was never fetched (no network) falls back to the built-in test card, which shows
/// the pipeline just as well.
io::rgb8_image photo_for(const camera::camera_settings& settings) {
  try {
    return camera::load_photo(settings.photo);
  } catch (const config_error& e) {
    if (settings.photo.ends_with(".png")) throw;
    std::fprintf(stderr, "note: %s; using the built-in test card\n", e.what());
    return camera::test_card(640, 480);
  } catch (const std::exception& e) {
    throw config_error(settings.photo + ": cannot read the photograph: " + e.what());
  }
}

}  // namespace

int run_camera_command(const run_settings& s) {
  check_phase_times(s);
  check_deadline_options(s);
  check_options_apply(s, true);
  check_run_paths_and_cpu(s);
  const camera::camera_settings settings = camera::load_camera_settings(s.config);
  // The command line's --deadline-us and --wcet-us override the file's loop section.
  run_settings effective = s;
  if (!s.given.contains("--deadline-us")) effective.deadline_us = settings.deadline_us;
  if (!s.given.contains("--wcet-us")) effective.wcet_us = settings.wcet_us;
  std::vector<camera::camera_mode> modes;
  if (s.mode == "all") {
    modes = camera::compared_camera_modes();
  } else {
    modes.push_back(camera::parse_camera_mode(s.mode));
  }
  const sample_policy policy = parse_sample_policy(s.policy);
  const capture_order capture = parse_capture_order(s.capture);
  const io::rgb8_image photo = photo_for(settings);
  if (s.check) {
    std::printf("resident run: %s and the options are valid\n", s.config.c_str());
    return 0;
  }
  if (!have_gpu()) return no_gpu("run");
  int failures = 0;
  for (const auto& m : modes) {
    camera::camera_run_options o;
    o.frames = static_cast<std::uint64_t>(s.frames);
    o.dump = s.dump;
    o.policy = policy;
    o.capture = capture;
    o.sensor_cpu = s.sensor_cpu;
    o.phase_times = s.phase_times;
    o.deadline = std::chrono::nanoseconds(std::llround(effective.deadline_us * 1e3));
    if (s.persistent_blocks > 0) o.persistent_blocks = s.persistent_blocks;
    if (s.poll_ns > 0) o.poll_ns = s.poll_ns;
    const camera::camera_result r = camera::run_camera(settings, m, o, photo);
    camera::print_camera_result(r);
    print_deadline_line(effective, r.counters,
                        response_bound_text(effective, m.mode, settings.sensor.rate_hz));
    const bool accounted =
        r.counters.processed + r.counters.dropped == r.counters.last_seq - r.counters.start_seq;
    if (!r.error.empty() || !accounted || r.counters.processed == 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace resident::cli
