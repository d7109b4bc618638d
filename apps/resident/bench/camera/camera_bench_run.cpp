// resident bench camera: the whole run, part by part, and the receipt's settings (see
// camera_bench.hpp).

#include <chrono>
#include <cmath>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "bench/camera/camera_bench.hpp"
#include "bench/camera/camera_operators.hpp"
#include "bench/camera/camera_statistics.hpp"
#include "bench/common.hpp"
#include "resident/cuda/device.hpp"
#include "resident/imaging/png.hpp"
#include "resident/measure/contention.hpp"
#include "resident/measure/threads.hpp"

namespace resident::bench {

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool have_npp() {
#if RESIDENT_HAVE_NPP
  return true;
#else
  return false;
#endif
}

/// Runs the cases of one process: the sensor and CPU-driven loop threads on their own cores.
class camera_runner {
 public:
  camera_runner(const camera_bench_settings& s, std::map<std::string, int> cpus,
                const io::rgb8_image& photo, std::ostream& log)
      : _s(s), _cpus(std::move(cpus)), _photo(photo), _log(log) {}

  std::vector<camera_run> run(const camera_case& c) {
    std::vector<camera_run> runs;
    for (int i = 0; i < c.runs; ++i) {
      _log << "camera: " << c.part << " " << c.workload() << " / " << c.contention << " / "
           << c.mode;
      if (c.runs > 1) _log << " run " << i + 1 << "/" << c.runs;
      _log << " ..." << std::flush;
      const auto start = std::chrono::steady_clock::now();
      runs.push_back(run_once(c));
      progress(runs.back(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start));
    }
    return runs;
  }

 private:
  camera_run run_once(const camera_case& c) {
    const bool photon = c.part == "photon";
    const double rate = sensor_rate(c, _s);
    camera::camera_run_options o;
    std::uint64_t requested = 0;
    std::size_t warmup = 0;
    if (photon) {
      // One sample per marked frame: every camera_photon_distinct_frames-th frame.
      requested = static_cast<std::uint64_t>(
          std::llround(_s.photon_seconds * rate / camera_photon_distinct_frames));
      warmup = camera_photon_warmup_samples;
      o.frames = (requested + warmup) * camera_photon_distinct_frames;
    } else {
      requested = static_cast<std::uint64_t>(_s.frames);
      warmup = static_cast<std::size_t>(_s.warmup);
      // A few frames over, so a frame without a complete stamp cannot leave a run one short.
      o.frames = requested + warmup + 16;
    }
    // skip-duplicate: every new frame once, the newest when the loop fell behind (the older
    // ones count as dropped). `newest` would rerun the last frame while none is new, and a
    // frame arriving during such a rerun would wait for it.
    o.policy = sample_policy::skip_duplicate;
    o.poll_ns = _s.poll_ns;
    o.sensor_cpu = _cpus.at("sensor");
    o.sensor_realtime = _s.realtime;
    o.progress = false;
    measure::thread_grant loop_grant;
    bool loop_thread = false;
    o.on_loop_thread_start = [&] {
      loop_grant = measure::configure_current_thread(_cpus.at("loop"), _s.realtime);
      loop_thread = true;
    };
    // A CPU-driven mode may not keep up with a fast sensor (host delivery of 4K frames): it gets
    // twice the frames' period, then reports what it processed.
    o.timeout = std::chrono::seconds(
        static_cast<std::int64_t>(std::ceil(2.0 * static_cast<double>(o.frames) / rate)) + 15);
    camera_run run;
    try {
      const camera::camera_result r = camera::run_camera(
          camera_settings_for(c, _s), camera::parse_camera_mode(c.mode), o, _photo);
      run = measured_run(r, c, warmup, rate, requested);
    } catch (const std::exception& e) {
      run.requested = requested;
      run.error = e.what();
    }
    run.threads["sensor_cpu"] = _cpus.at("sensor");
    if (loop_thread) run.threads["loop"] = measure::to_json(loop_grant);
    return run;
  }

  void progress(const camera_run& run, std::chrono::duration<double> took) {
    _log << std::fixed << std::setprecision(1);
    if (!run.us.empty()) {
      const measure::summary s = measure::summarize(run.us);
      _log << " n " << s.n << ", mean " << s.mean << " us, p99 " << s.p99 << ", max " << s.max
           << ", J " << s.jitter << " us, " << run.dropped << " dropped";
      if (run.us.size() < run.requested) _log << ", short of " << run.requested << " frames";
    }
    if (!run.error.empty()) _log << " ERROR: " << run.error;
    _log << " (" << took.count() << " s)\n" << std::flush;
  }

  const camera_bench_settings& _s;
  std::map<std::string, int> _cpus;
  const io::rgb8_image& _photo;
  std::ostream& _log;
};

std::vector<std::filesystem::path> quality_photos(const camera_bench_settings& s) {
  auto photos = imaging::list_photos();
  if (photos.size() < static_cast<std::size_t>(s.photos)) {
    throw std::runtime_error(
        "bench camera: the demosaic part needs " + std::to_string(s.photos) +
        " photographs, found " + std::to_string(photos.size()) + " in " +
        imaging::photo_dir().string() +
        "; scripts/deps (scripts/photos) fetches them, or leave the part out (--parts)");
  }
  photos.resize(static_cast<std::size_t>(s.photos));
  return photos;
}

/// The software and photon cases of every contention level, the hogs running under `stress`.
void run_loops(const camera_bench_settings& s, camera_runner& runner,
               const std::vector<int>& hog_cpus, measure::receipt& receipt, std::ostream& log) {
  for (const auto& level : s.contention) {
    std::vector<camera_case> cases;
    if (s.has_part("software")) cases = software_cases(s, level);
    if (s.has_part("photon")) {
      for (auto& c : photon_cases(s, level)) cases.push_back(std::move(c));
    }
    if (cases.empty()) continue;
    std::unique_ptr<measure::contention_generator> hogs;
    if (level == "stress") {
      hogs = measure::start_stress(hog_cpus, s.stress_ng, "the sensor and loop threads");
      log << "camera: contention " << hogs->description() << "\n";
    }
    for (const auto& c : cases) {
      json result = case_result(c, runner.run(c));
      if (hogs) result["contention_detail"] = hogs->to_json();
      receipt.results.push_back(std::move(result));
    }
    if (hogs) hogs->stop();
  }
}

}  // namespace

json camera_settings_json(const camera_bench_settings& s) {
  const io::sensor_config sensor;
  return {
      {"parts", s.parts},
      {"resolutions", s.resolutions},
      {"formats", s.formats},
      {"contention", s.contention},
      {"modes", s.modes},
      {"displays", s.displays},
      {"software",
       {{"rate_hz", s.rate_hz},
        {"frames_per_run", s.frames},
        {"warmup_frames", s.warmup},
        {"display", "240 Hz variable refresh, flip"},
        {"latency",
         "per processed frame, device clock (%globaltimer): the bridge's metadata record for "
         "the frame landing in GPU memory (stage::arrival) -> the egress's commit once the "
         "scanout buffer is written (stage::commit)"}}},
      {"photon",
       {{"sensor_rate_hz", camera_photon_rate_hz},
        {"seconds", s.photon_seconds},
        {"resolution", "1080p"},
        {"format", "raw12"},
        {"distinct_frames", camera_photon_distinct_frames},
        {"warmup_samples", camera_photon_warmup_samples},
        {"latency",
         "per marked frame the photodiode saw: the LED's switch-on at the frame's start (sensor "
         "thread, device clock) -> the raster reading the lit probe rows out of the scanned "
         "buffer (display engine, device clock)"}}},
      {"repeats",
       {{"runs", s.repeats},
        {"configurations",
         "software 1080p raw12 and photon vrr240-flip, while and tail, each contention level; "
         "every other configuration runs once"},
        {"aggregate", "each statistic the median over the runs; every run in the result"}}},
      {"run_limit",
       "a run stops after its frames, or after twice their period plus 15 s (a mode that cannot "
       "keep up reports fewer samples than requested_samples)"},
      {"display",
       {{"vrr240-flip", "240 Hz variable refresh (rescan at 30 Hz without flips), flip"},
        {"vrr240-front", "240 Hz variable refresh, front-buffer writes (tears)"},
        {"fixed60-flip", "fixed 60 Hz vblank grid, flip"},
        {"probe", "the photodiode over the LED marker; lit above mean luma 128"}}},
      {"policy", "skip-duplicate"},
      {"policy_why",
       "each new frame processed once, the newest when the loop fell behind (older ones "
       "counted as dropped); newest-wins would rerun the last frame while none is new, and a "
       "frame arriving during such a rerun would wait for it"},
      {"poll_ns", s.poll_ns},
      {"sensor",
       {{"bayer", "rggb"},
        {"ring_slots", 4},
        {"readout_fraction", sensor.readout_fraction},
        {"black_level", "256 at 12 bits, 64 at 10"},
        {"cast", sensor.cast},
        {"pan_step", sensor.pan_step},
        {"distinct_frames", sensor.distinct_frames},
        {"photo", s.photo}}},
      {"pipeline",
       {{"stages", "frame_rx -> csi2_reconstruct -> raw_isp -> demosaic -> display_tx"},
        {"demosaic", "malvar"},
        {"demosaic_output", "rgba16"},
        {"white_balance", "grey_world"},
        {"gamma", 2.2}}},
      {"operators",
       {{"reps", s.operator_reps},
        {"warmup", s.operator_warmup},
        {"method",
         "each operator alone between external buffers; per launch one direct submission of "
         "just that operator on its own stream between two CUDA timing events, waited for "
         "before the next; input: the photograph as the camera sees it (RAW12 RGGB, black level "
         "256, colour cast)"}}},
      {"demosaic_quality",
       {{"photos", s.photos},
        {"method",
         "photograph mosaiced RGGB at 12 bits, black level 0, no cast, size rounded down to "
         "even; demosaiced on the GPU to RGBA16 (NPP: its 12-bit scale); PSNR over every pixel "
         "and the three colours against the photograph in its 8-bit units (peak 255), outputs "
         "scaled by 255 / full scale without rounding"}}},
      {"npp", have_npp()},
      {"realtime_requested", s.realtime},
      {"stress_ng", s.stress_ng},
  };
}

measure::receipt run_camera_bench(const camera_bench_settings& s, std::ostream& log) {
  s.validate();
  if (s.needs_gpu() && device_count() == 0) {
    throw std::runtime_error("bench camera needs a CUDA GPU; none is usable here (" +
                             no_device_reason() + ")");
  }
  const auto started = std::chrono::steady_clock::now();
  const io::rgb8_image photo = camera::load_photo(s.photo);
  std::vector<std::filesystem::path> photos;
  if (s.has_part("demosaic") || s.has_part("statistics")) photos = quality_photos(s);
  const auto cpus = measure::assign_cpus({{"sensor", s.sensor_cpu}, {"loop", s.loop_cpu}});
  // Every other thread started from here on (run supervisors, CUDA's helpers, the hogs) stays
  // off the sensor's and the loop thread's cores.
  const std::vector<int> others = measure::remaining_cpus({cpus.at("sensor"), cpus.at("loop")});
  const measure::affinity_restorer restore_affinity;
  if (!others.empty() && !measure::confine_process(others)) {
    log << "camera: could not keep other threads off the pinned cores\n";
  }
  measure::receipt receipt("camera", s.command);
  describe_machine(receipt);
  receipt.settings = camera_settings_json(s);
  receipt.settings["cpus"] = cpus;
  receipt.settings["other_threads_cpus"] = others;
  if (s.has_part("operators")) {
    for (const auto& res : s.resolutions) {
      const std::uint32_t w = res == "4k" ? 3840 : 1920;
      const std::uint32_t h = res == "4k" ? 2160 : 1080;
      for (auto& r :
           time_camera_operators(res, w, h, photo, s.operator_reps, s.operator_warmup, log)) {
        receipt.results.push_back(std::move(r));
      }
    }
  }
  if (s.has_part("demosaic")) {
    for (auto& r : demosaic_quality(photos, log)) receipt.results.push_back(std::move(r));
  }
  if (s.has_part("statistics")) {
    for (const auto& path : photos) {
      json r = statistics_study(imaging::read_png(path), path.stem().string());
      log << "camera: statistics " << r["photo"].get<std::string>() << ": same-frame " << std::fixed
          << std::setprecision(2) << r["mean_same_db"].get<double>() << " dB, previous-frame "
          << r["mean_previous_db"].get<double>() << " dB (the step frame "
          << r["step_loss_db"].get<double>() << " dB lower), settled after "
          << r["settle_frames"].get<std::uint32_t>() << " frame(s)\n";
      receipt.results.push_back(std::move(r));
    }
  }
  camera_runner runner(s, cpus, photo, log);
  run_loops(s, runner, others, receipt, log);
  record_verdicts(receipt);
  const smi_reading after = read_nvidia_smi();
  if (after.sm_clock_mhz > 0) receipt.device.sm_clock_mhz_seen.push_back(after.sm_clock_mhz);
  log << "camera: done in " << std::fixed << std::setprecision(0)
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
      << " s\n";
  return receipt;
}

}  // namespace resident::bench
