// resident run (see run.hpp).

#include "commands/run.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>

#include "bench/common.hpp"
#include "bench/lab/lab_pipeline.hpp"
#include "camera/camera.hpp"
#include "resident/app/application.hpp"
#include "resident/app/operator.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops.hpp"
#include "resident/ops/pipeline_config.hpp"

namespace resident::cli {

namespace {

using bench::lab_pipeline;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// The sensor's samples, and the sum each one must come out as.
struct lab_samples {
  std::vector<std::vector<float>> inputs;
  std::vector<double> expected;
};

lab_samples make_samples(const run_settings& s, double scale, double offset, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  lab_samples out;
  out.inputs.resize(static_cast<std::size_t>(s.samples));
  out.expected.resize(out.inputs.size());
  for (std::size_t i = 0; i < out.inputs.size(); ++i) {
    out.inputs[i].resize(static_cast<std::size_t>(s.elements));
    double total = 0.0;
    for (auto& v : out.inputs[i]) {
      v = dist(rng);
      const double y = scale * v + offset;
      total += y * y;
    }
    out.expected[i] = total;
  }
  return out;
}

/// One mode: releases every sample at the rate, checks every output the actuator sees, prints
/// a row. True when the mode passed.
bool run_mode(const run_settings& s, lab_pipeline& app, execution_mode mode,
              const run_options& options, const lab_samples& samples) {
  auto handle = run_async(app, mode, options);
  const std::uint64_t base = app.mailbox->published();
  std::atomic<bool> done{false};
  std::atomic<std::int64_t> checked{0};
  std::atomic<std::int64_t> wrong{0};
  std::atomic<std::int64_t> unknown{0};  // outputs naming a sample this run did not publish
  bench::stopping_thread actuator(
      [&] { done = true; },
      [&] {
        resident::io::output_stamp last = app.mailbox->latest_output();
        float out = 0.0F;
        while (!done.load()) {
          const resident::io::output_stamp got =
              app.mailbox->wait_output(last, std::as_writable_bytes(std::span(&out, 1)), 10ms);
          if (got.empty()) continue;  // a repeat (policy newest) is checked again: a new commit
          last = got;
          if (got.seq <= base || got.seq - base > samples.expected.size()) {
            ++unknown;
            continue;
          }
          const double want = samples.expected[got.seq - base - 1];
          ++checked;
          if (std::abs(out - want) > 1e-5 * std::max(1.0, std::abs(want))) ++wrong;
        }
      });
  const auto period = std::chrono::duration<double>(1.0 / s.rate_hz);
  const auto start = clock_type::now();
  for (std::size_t i = 0; i < samples.inputs.size(); ++i) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<clock_type::duration>(period * static_cast<double>(i)));
    app.mailbox->publish(std::as_bytes(std::span(samples.inputs[i])));
  }
  const std::uint64_t final_seq = app.mailbox->published();
  const auto deadline = clock_type::now() + 2s;
  while (handle->counters().last_seq < final_seq && clock_type::now() < deadline) {
    std::this_thread::sleep_for(100us);
  }
  std::this_thread::sleep_for(5ms);  // let the actuator see the final output
  const tear_down_report report = handle->tear_down();
  done = true;
  actuator.join();
  const auto& c = report.counters;
  std::printf(
      "%-10s %9lld %9llu %9llu %9llu %9lld %8lld%s%s\n", std::string(to_string(mode)).c_str(),
      static_cast<long long>(samples.inputs.size()), static_cast<unsigned long long>(c.processed),
      static_cast<unsigned long long>(c.dropped), static_cast<unsigned long long>(c.repeated),
      static_cast<long long>(checked.load()), static_cast<long long>(wrong.load()),
      report.error.empty() ? "" : "  ", report.error.c_str());
  if (!report.phases.empty()) camera::print_phase_times(report.phases);
  print_deadline_line(s, c, response_bound_text(s, mode, s.rate_hz));
  if (unknown.load() != 0) {
    std::printf("  %lld outputs named a sample this run did not publish\n",
                static_cast<long long>(unknown.load()));
  }
  const bool accounted = c.processed + c.dropped == c.last_seq - c.start_seq;
  return report.stopped && wrong.load() == 0 && unknown.load() == 0 && accounted &&
         checked.load() != 0;
}

}  // namespace

CLI::App* add_run_options(CLI::App& root, run_settings& s) {
  auto* app = root.add_subcommand(
      "run", "run the lab pipeline (affine, square, sum) between an emulated sensor and actuator");
  app->add_option("config", s.config,
                  "YAML file: operator parameters of the lab pipeline, a camera configuration, "
                  "or a pipeline file (operators by kind and their flows)")
      ->check(CLI::ExistingFile);
  app->add_option("--mode", s.mode,
                  "eager, host-graph, while, tail, persistent or all (the four "
                  "graph and host modes)")
      ->capture_default_str();
  app->add_option("--policy", s.policy, "newest, every or skip-duplicate")->capture_default_str();
  app->add_option("--capture", s.capture,
                  "capture order of the operator DAG: chain (one stream) or forked (independent "
                  "branches on forked streams)")
      ->capture_default_str();
  app->add_option("--samples", s.samples, "samples the sensor releases per mode")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app->add_option("--rate", s.rate_hz, "sensor rate in Hz")
      ->check(positive(1e6))
      ->capture_default_str();
  app->add_option("--elements", s.elements, "fp32 values per sample")
      ->check(whole_in(1, 1 << 28))
      ->capture_default_str();
  app->add_option("--sleep-ns", s.sleep_ns, "idle sleep per empty iteration (0 spins)")
      ->check(whole_in(0, 1'000'000'000))
      ->capture_default_str();
  app->add_option("--poll-ns", s.poll_ns, "in-kernel polling budget of the handler")
      ->check(whole_in(0, 10'000'000'000))
      ->capture_default_str();
  app->add_option("--dot", s.dot, "write the built CUDA graph as Graphviz DOT");
  app->add_flag("--no-fuse", s.no_fuse,
                "keep the separate controller and end-marker kernels (no fused iteration)");
  app->add_option("--persistent-blocks", s.persistent_blocks,
                  "persistent mode: blocks of its kernel (0: as many as fit at once; default 1 "
                  "for the lab pipeline, as many as fit but 4 SMs' worth for a camera)")
      ->check(whole_in(0, 1 << 20));
  app->add_option("--frames", s.frames, "camera configurations: frames to process per mode")
      ->check(whole_in(1, 100'000'000))
      ->capture_default_str();
  app->add_option("--dump", s.dump,
                  "camera configurations: write the first and last frames and a contact sheet "
                  "(PNG) into this folder");
  app->add_option("--sensor-cpu", s.sensor_cpu, "camera configurations: pin the sensor thread")
      ->check(whole_in(-1, 4096));
  app->add_flag("--phase-times", s.phase_times,
                "persistent mode: print the device time of each phase of a DAG pass (per device "
                "form and barrier)");
  app->add_option("--deadline-us", s.deadline_us,
                  "the loop's deadline: misses of release -> commit are counted (0: none)")
      ->check(number_in(0, 1e6))
      ->capture_default_str();
  app->add_option("--wcet-us", s.wcet_us,
                  "the body's worst-case time, for the timing model's response bound")
      ->check(number_in(0, 1e9));
  app->add_option("--overheads", s.overheads,
                  "a bench overhead receipt for the bound (default: bench/results/h200/"
                  "overhead.json when present)");
  app->add_flag("--check", s.check,
                "check the configuration and options (no GPU needed), run nothing");
  app->parse_complete_callback([app, &s] {
    s.given.clear();
    for (const CLI::Option* o : app->get_options()) {
      if (o->count() > 0 && !o->get_lnames().empty()) s.given.insert("--" + o->get_lnames()[0]);
    }
  });
  return app;
}

command add_run_command(CLI::App& root) {
  auto s = std::make_shared<run_settings>();
  return {add_run_options(root, *s), [s] { return run_run(*s); }};
}

void check_phase_times(const run_settings& s) {
  if (s.phase_times && s.mode != "persistent") {
    throw std::invalid_argument(
        "--phase-times times the phases of persistent mode's kernel; use "
        "it with --mode persistent (the mode is '" +
        s.mode + "')");
  }
}

run_options mailbox_run_options(const run_settings& s) {
  run_options o;
  o.policy = parse_sample_policy(s.policy);
  o.capture = parse_capture_order(s.capture);
  o.idle_sleep_ns = s.sleep_ns;
  o.poll_ns = s.poll_ns;
  o.fuse = !s.no_fuse;
  o.persistent_blocks = s.persistent_blocks < 0 ? 1 : s.persistent_blocks;
  o.phase_times = s.phase_times;
  o.deadline = std::chrono::nanoseconds(std::llround(s.deadline_us * 1e3));
  o.validate();
  if (!s.dot.empty()) o.dot_path = s.dot;
  return o;
}

checked_run check_run(const run_settings& s) {
  check_phase_times(s);
  check_options_apply(s, false);
  check_run_paths_and_cpu(s);
  check_deadline_options(s);
  checked_run out;
  if (s.mode == "all") {
    out.modes.assign(all_execution_modes.begin(), all_execution_modes.end());
  } else {
    out.modes.push_back(parse_execution_mode(s.mode));
  }
  out.options = mailbox_run_options(s);
  lab_pipeline check(s.elements, false);
  if (!s.config.empty()) check.load_config(s.config);
  (void)check.plan();
  return out;
}

int run_run(const run_settings& given) {
  if (!given.config.empty() && camera::is_camera_config(given.config)) {
    return run_camera_command(given);
  }
  if (!given.config.empty() && ops::is_pipeline_config(given.config)) {
    return run_pipeline_command(given);
  }
  const run_settings s = with_loop_section(given);
  const checked_run checked = check_run(s);
  if (s.check) {
    std::printf("resident run: %s and the options are valid\n",
                s.config.empty() ? "the pipeline" : s.config.c_str());
    return 0;
  }
  if (!have_gpu()) return no_gpu("run");

  lab_pipeline app(s.elements, true);
  if (!s.config.empty()) app.load_config(s.config);
  (void)app.plan();
  // The reference follows whatever scale and offset the configuration gave the affine step.
  std::mt19937 rng(12345);
  const double scale = app.affine->scale();
  const double offset = app.affine->offset();
  int failures = 0;
  std::printf("%-10s %9s %9s %9s %9s %9s %8s\n", "mode", "released", "processed", "dropped",
              "repeated", "checked", "wrong");
  for (const auto mode : checked.modes) {
    const lab_samples samples = make_samples(s, scale, offset, rng);
    if (!run_mode(s, app, mode, checked.options, samples)) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace resident::cli
