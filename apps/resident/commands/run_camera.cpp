// resident run CAMERA.yaml: the camera-to-display pipeline in one mode or the compared four.

#include <cstdio>

#include "camera/camera.hpp"
#include "commands/run.hpp"
#include "resident/app/error.hpp"

namespace resident::cli {

int run_camera_command(const run_settings& s) {
  check_phase_times(s);
  const camera::camera_settings settings = camera::load_camera_settings(s.config);
  std::vector<camera::camera_mode> modes;
  if (s.mode == "all") {
    modes = camera::compared_camera_modes();
  } else {
    modes.push_back(camera::parse_camera_mode(s.mode));
  }
  const sample_policy policy = parse_sample_policy(s.policy);
  const capture_order capture = parse_capture_order(s.capture);
  if (s.check) {
    std::printf("resident run: %s and the options are valid\n", s.config.c_str());
    return 0;
  }
  if (!have_gpu()) return no_gpu("run");
  io::rgb8_image photo;
  try {
    photo = camera::load_photo(settings.photo);
  } catch (const config_error& e) {
    // A name of the photograph set that was never fetched (no network): the built-in test card
    // shows the pipeline just as well. A PNG path that is not there stays an error.
    if (settings.photo.ends_with(".png")) throw;
    std::fprintf(stderr, "note: %s; using the built-in test card\n", e.what());
    photo = camera::test_card(640, 480);
  }
  int failures = 0;
  for (const auto& m : modes) {
    camera::camera_run_options o;
    o.frames = static_cast<std::uint64_t>(s.frames);
    o.dump = s.dump;
    o.policy = policy;
    o.capture = capture;
    o.sensor_cpu = s.sensor_cpu;
    o.phase_times = s.phase_times;
    if (s.persistent_blocks > 0) o.persistent_blocks = s.persistent_blocks;
    if (s.poll_ns > 0) o.poll_ns = s.poll_ns;
    const camera::camera_result r = camera::run_camera(settings, m, o, photo);
    camera::print_camera_result(r);
    const bool accounted =
        r.counters.processed + r.counters.dropped == r.counters.last_seq - r.counters.start_seq;
    if (!r.error.empty() || !accounted || r.counters.processed == 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace resident::cli
