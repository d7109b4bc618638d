// resident bench camera (see bench_camera.hpp).

#include "commands/bench_camera.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "bench/camera/camera_report.hpp"

namespace resident::cli {

namespace {

void add_lists(CLI::App& app, bench_camera_command_settings& s) {
  app.add_option("--parts", s.parts,
                 "software, photon, operators, demosaic, statistics (default: all)");
  app.add_option("--resolutions", s.resolutions, "1080p, 4k (default: both)");
  app.add_option("--formats", s.formats, "raw10, raw12 (default: both; --quick: raw12)");
  app.add_option("--contention", s.contention,
                 "none, stress: host-contention hogs on the cores not pinned (default: both; "
                 "--quick: none)");
  app.add_option("--modes", s.modes, "camera modes (default: cpu-hostmem,host-graph,while,tail)");
  app.add_option("--displays", s.displays,
                 "photon runs: vrr240-flip, vrr240-front (GPU-resident modes), fixed60-flip "
                 "(default: all)");
  app.add_option("--pipelines", s.pipelines,
                 "software runs: unfused (csi2_reconstruct, raw_isp, demosaic, display_tx), "
                 "fused (camera_isp; not in cpu-hostmem), fused-tiles (the same with one block "
                 "per tile in graph modes) (default: unfused)");
}

void add_numbers(CLI::App& app, bench::camera_bench_settings& c) {
  app.add_option("--rate", c.rate_hz, "software runs: sensor frame rate (Hz)")
      ->check(positive(100'000))
      ->capture_default_str();
  app.add_option("--frames", c.frames, "software runs: measured frames per run (--quick: 1000)")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app.add_option("--warmup", c.warmup, "software runs: frames processed before measuring")
      ->check(whole_in(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--repeats", c.repeats,
                 "runs of each target configuration (1080p raw12 and 240 Hz flip photon, while "
                 "and tail); the median judges a target (--quick: 1)")
      ->check(whole_in(1, 15))
      ->capture_default_str();
  app.add_option("--photon-seconds", c.photon_seconds,
                 "length of each photon-to-display run (--quick: 3)")
      ->check(number_in(1, 3600))
      ->capture_default_str();
  app.add_option("--operator-reps", c.operator_reps, "timed launches per operator")
      ->check(whole_in(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--operator-warmup", c.operator_warmup, "untimed launches first")
      ->check(whole_in(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--poll-ns", c.poll_ns, "handler in-kernel polling budget (GPU-resident modes)")
      ->check(whole_in(0, 10'000'000'000))
      ->capture_default_str();
  app.add_option("--photo", c.photo, "the camera's photograph (a name of the set or a PNG)")
      ->capture_default_str();
  app.add_option("--photos", c.photos, "demosaic quality: photographs of the set to use")
      ->check(whole_in(1, 64))
      ->capture_default_str();
  app.add_option("--sensor-cpu", c.sensor_cpu, "core for the sensor thread (-1: auto)")
      ->check(whole_in(-1, 4095));
  app.add_option("--loop-cpu", c.loop_cpu, "core for the CPU-driven loop thread (-1: auto)")
      ->check(whole_in(-1, 4095));
  app.add_flag("--stress-ng", c.stress_ng, "use stress-ng for the stress level");
}

}  // namespace

CLI::App* add_bench_camera_options(CLI::App& bench, bench_camera_command_settings& s) {
  auto* app = bench.add_subcommand(
      "camera",
      "the camera-to-display pipeline in every mode: software and photon-to-display latency, "
      "operator device times, demosaic against NPP; a receipt and an HTML report");
  add_lists(*app, s);
  add_numbers(*app, s.camera);
  app->add_flag("--no-fifo", s.no_fifo, "do not ask for SCHED_FIFO");
  app->add_flag("--quick", s.quick,
                "1080p and 4K RAW12, quiet, 1000 frames, 3 s photon runs, one run each (~60 s)");
  app->add_option("--out,--json", s.out, "the JSON receipt")->capture_default_str();
  app->add_option("--report", s.report, "the HTML report (in --out's folder unless it names one)")
      ->capture_default_str();
  app->add_option("--from", s.from,
                  "no run: judge the targets of this receipt (e.g. parts merged with `resident "
                  "report --merge`) again and write it to --out with its report")
      ->check(CLI::ExistingFile);
  return app;
}

command add_bench_camera_command(CLI::App& bench, const std::string& command_line) {
  auto s = std::make_shared<bench_camera_command_settings>();
  s->camera.command = command_line;
  return {add_bench_camera_options(bench, *s), [s] { return run_bench_camera(*s); }};
}

bench::camera_bench_settings bench_camera_command_settings::resolve() const {
  bench::camera_bench_settings out = camera;
  if (quick) {
    const bench::camera_bench_settings defaults;
    bench::camera_bench_settings q;
    q.make_quick();
    out.resolutions = q.resolutions;
    out.formats = q.formats;
    out.contention = q.contention;
    if (out.frames == defaults.frames) out.frames = q.frames;
    if (out.warmup == defaults.warmup) out.warmup = q.warmup;
    if (out.photon_seconds == defaults.photon_seconds) out.photon_seconds = q.photon_seconds;
    if (out.repeats == defaults.repeats) out.repeats = q.repeats;
  }
  const auto take = [](const std::string& flag, std::vector<std::string>& into) {
    if (!flag.empty()) into = split_list(flag);
  };
  take(parts, out.parts);
  take(resolutions, out.resolutions);
  take(formats, out.formats);
  take(contention, out.contention);
  take(modes, out.modes);
  take(displays, out.displays);
  take(pipelines, out.pipelines);
  out.realtime = !no_fifo;
  out.validate();
  return out;
}

std::filesystem::path bench_camera_command_settings::report_path() const {
  const std::filesystem::path r(report);
  if (r.is_absolute() || r.has_parent_path()) return r;
  return std::filesystem::path(out).parent_path() / r;
}

namespace {

void write_outputs(const measure::receipt& receipt, const bench_camera_command_settings& s) {
  const std::filesystem::path out(s.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  receipt.write(out);
  const std::filesystem::path html = s.report_path();
  if (html.has_parent_path()) std::filesystem::create_directories(html.parent_path());
  std::ofstream file(html);
  file << bench::render_camera_report(receipt);
  if (!file) throw std::runtime_error("cannot write " + html.string());
  std::printf("receipt: %s\nreport: %s\n\n%s", out.c_str(), html.c_str(),
              bench::camera_table(receipt).c_str());
}

}  // namespace

int run_bench_camera(const bench_camera_command_settings& s) {
  if (!s.from.empty()) {
    measure::receipt receipt = measure::receipt::read(s.from);
    if (receipt.benchmark != "camera") {
      throw std::invalid_argument("--from " + s.from + ": a receipt of bench " + receipt.benchmark +
                                  ", not of bench camera");
    }
    bench::record_verdicts(receipt);
    write_outputs(receipt, s);
    return 0;
  }
  const bench::camera_bench_settings camera = s.resolve();
  if (camera.needs_gpu() && !have_gpu()) return no_gpu("bench camera");
  const measure::receipt receipt = bench::run_camera_bench(camera, std::cerr);
  write_outputs(receipt, s);
  const auto failures = bench::camera_failures(receipt);
  for (const auto& f : failures) print_error("bench camera", f);
  return failures.empty() ? 0 : 1;
}

}  // namespace resident::cli
