// resident run PIPELINE.yaml: a pipeline described by operator kinds (resident/ops/
// pipeline_config.hpp), fed one sample at a time in each mode, its outputs compared across modes.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "commands/run.hpp"
#include "resident/app/error.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops/catalog.hpp"
#include "resident/ops/pipeline_config.hpp"

namespace resident::cli {

namespace {

using namespace std::chrono_literals;

/// Options that mean nothing to a pipeline file: std::invalid_argument naming the first given.
void check_pipeline_options(const run_settings& s, bool all_have_forms) {
  const std::map<std::string, std::string> not_here{
      {"--rate",
       "a pipeline file is fed one sample at a time (each output awaited), not at a rate"},
      {"--elements", "the pipeline file sizes its samples (mailbox.input_bytes) and operators"},
      {"--frames", "it is for camera configurations"},
      {"--dump", "it is for camera configurations"},
      {"--sensor-cpu", "it is for camera configurations"},
      {"--wcet-us", "a response bound needs a sensor rate, and a pipeline file has none"},
      {"--overheads", "a response bound needs a sensor rate, and a pipeline file has none"}};
  for (const auto& [flag, why] : not_here) {
    if (s.given.contains(flag)) {
      throw std::invalid_argument(flag + " does not apply: this is a pipeline file; " + why);
    }
  }
  const bool persistent = s.mode == "persistent" || (s.mode == "all" && all_have_forms);
  if (s.persistent_blocks >= 0 && !persistent) {
    throw std::invalid_argument(
        "--persistent-blocks does not apply: it sizes persistent mode's "
        "kernel, and the mode is '" +
        s.mode + "'" +
        (s.mode == "all" ? " without persistent (an operator of the file "
                           "has no device form)"
                         : ""));
  }
  if (s.no_fuse && s.mode == "persistent") {
    throw std::invalid_argument(
        "--no-fuse does not apply: persistent mode runs no separate "
        "controller or end-marker kernels to keep");
  }
  if (s.given.contains("--poll-ns") && (s.mode == "eager" || s.mode == "host-graph")) {
    throw std::invalid_argument("--poll-ns does not apply: the mode '" + s.mode +
                                "' polls on the host");
  }
  if (s.wcet_us > 0) {
    throw std::invalid_argument(s.config +
                                ": loop.wcet_us does not apply: a response bound "
                                "needs a sensor rate, and a pipeline file is fed one sample at "
                                "a time");
  }
}

/// The sensor's samples: fp32 values in [-1, 1) where the sample is whole floats, else bytes;
/// different from sample to sample, the same in every mode.
std::vector<std::vector<std::byte>> make_inputs(std::size_t count, std::size_t bytes) {
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  std::vector<std::vector<std::byte>> out(count, std::vector<std::byte>(bytes));
  for (auto& sample : out) {
    if (bytes % sizeof(float) == 0) {
      for (std::size_t i = 0; i < bytes; i += sizeof(float)) {
        const float v = value(rng);
        std::memcpy(sample.data() + i, &v, sizeof v);
      }
    } else {
      for (auto& b : sample) b = static_cast<std::byte>(rng() & 0xFFU);
    }
  }
  return out;
}

struct mode_outcome {
  std::vector<std::vector<std::byte>> outputs;  // one per sample, in order
  std::uint64_t missing{0};                     // samples whose output never came
  bool passed{false};
};

/// One mode: each sample published, its output awaited (2 s at most) and kept.
mode_outcome run_pipeline_mode(const run_settings& s, ops::yaml_pipeline& app, execution_mode mode,
                               const run_options& options,
                               const std::vector<std::vector<std::byte>>& inputs) {
  io::mailbox& mb = *app.mailbox();
  auto handle = run_async(app, mode, options);
  mode_outcome o;
  io::output_stamp last = mb.latest_output();
  std::vector<std::byte> out(mb.settings().output_bytes);
  for (const auto& in : inputs) {
    const std::uint64_t seq = mb.publish(in);
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    bool got_it = false;
    while (!got_it && std::chrono::steady_clock::now() < give_up) {
      const io::output_stamp got = mb.wait_output(last, out, 50ms);
      if (got.empty()) continue;
      last = got;
      got_it = got.seq == seq;
    }
    if (got_it) {
      o.outputs.push_back(out);
    } else {
      ++o.missing;
      o.outputs.emplace_back();
    }
  }
  const tear_down_report report = handle->tear_down();
  const auto& c = report.counters;
  const bool accounted = c.processed + c.dropped == c.last_seq - c.start_seq;
  o.passed = report.stopped && report.error.empty() && accounted && o.missing == 0;
  std::printf("%-10s %9zu %9llu %9llu %9llu%s%s\n", std::string(to_string(mode)).c_str(),
              inputs.size(), static_cast<unsigned long long>(c.processed),
              static_cast<unsigned long long>(c.dropped),
              static_cast<unsigned long long>(o.missing), report.error.empty() ? "" : "  ",
              report.error.c_str());
  print_deadline_line(s, c, "no bound: a pipeline file is fed one sample at a time");
  return o;
}

}  // namespace

int run_pipeline_command(const run_settings& given) {
  const run_settings s = with_loop_section(given);
  const ops::pipeline_description d = ops::parse_pipeline_file(s.config);
  // `all` is every mode the file's operators allow: persistent too where each kind offers a
  // device form (the catalog says which).
  const bool all_have_forms =
      std::all_of(d.operators.begin(), d.operators.end(),
                  [](const auto& op) { return ops::operator_kind_named(op.kind).device_form; });
  check_pipeline_options(s, all_have_forms);
  check_phase_times(s);
  check_run_paths_and_cpu(s);
  ops::check_pipeline(d);
  const bool has_tx = std::any_of(d.operators.begin(), d.operators.end(),
                                  [](const auto& op) { return op.kind == "io.mailbox_tx"; });
  if (d.handler.empty() || !has_tx || d.mailbox->output_bytes == 0) {
    throw config_error(s.config +
                       ": resident run feeds the pipeline through its mailbox: it "
                       "needs an io.mailbox_rx (the sensor's end), an io.mailbox_tx "
                       "(the actuator's) and mailbox.output_bytes of at least 1");
  }
  std::vector<execution_mode> modes{parse_execution_mode(s.mode == "all" ? "eager" : s.mode)};
  if (s.mode == "all") {
    modes.assign(all_execution_modes.begin(), all_execution_modes.end());
    if (all_have_forms) modes.push_back(execution_mode::persistent);
  }
  const run_options options = mailbox_run_options(s);
  if (s.check) {
    std::printf(
        "resident run: %s: %zu operators, %zu flows, handler '%s': valid, and the "
        "options too\n",
        s.config.c_str(), d.operators.size(), d.flows.size(), d.handler.c_str());
    return 0;
  }
  if (!have_gpu()) return no_gpu("run");

  ops::yaml_pipeline app(d);
  const auto inputs = make_inputs(static_cast<std::size_t>(s.samples), d.mailbox->input_bytes);
  std::printf("%-10s %9s %9s %9s %9s\n", "mode", "released", "processed", "dropped", "missing");
  std::vector<mode_outcome> outcomes;
  for (const execution_mode mode : modes) {
    outcomes.push_back(run_pipeline_mode(s, app, mode, options, inputs));
  }
  int failures = 0;
  for (std::size_t m = 0; m < modes.size(); ++m) {
    if (!outcomes[m].passed) ++failures;
    if (m == 0) continue;
    const bool same = outcomes[m].outputs == outcomes[0].outputs;
    std::printf("%s: %s outputs as %s\n", std::string(to_string(modes[m])).c_str(),
                same ? "the same" : "DIFFERENT", std::string(to_string(modes[0])).c_str());
    if (!same) ++failures;
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace resident::cli
