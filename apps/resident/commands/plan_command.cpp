#include "commands/plan_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <ostream>
#include <span>
#include <stdexcept>

#include "bench/common.hpp"
#include "bench/workloads.hpp"
#include "resident/partition/green_context.hpp"
#include "resident/partition/planner.hpp"
#include "resident/partition/planner_json.hpp"
#include "resident/resident.hpp"

namespace resident::bench {

double profile_body_us(const std::string& workload, execution_mode mode, int sms, int samples) {
  if (samples <= 0) throw std::invalid_argument("profile: samples must be positive");
  const auto co = partition::query_sm_resource(0, false);
  // Sizes off the co-scheduled grid (or below its minimum) need the finer split.
  const bool fine = sms % std::max(1, co.alignment) != 0 || sms < co.min_partition;
  const auto parts = partition::partition_set::split({sms}, {0, fine});
  io_app app(workload);
  run_options options;
  options.partition = parts->share(0);
  options.policy = sample_policy::every;
  options.telemetry_samples = static_cast<std::size_t>(samples) + 64;
  auto run = run_async(app, mode, options);
  io::mailbox& mb = app.mailbox();
  const int warmup = std::min(20, samples);
  std::array<std::byte, 8> out{};
  for (int i = 0; i < warmup + samples; ++i) {
    const std::uint64_t token = io_app::token(mb.published() + 1);
    const std::uint64_t seq = mb.publish(std::as_bytes(std::span(&token, 1)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (mb.output_seq() < seq) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("profile: " + workload + " on " + std::to_string(sms) +
                                 " SMs gave no output for sample " + std::to_string(seq));
      }
      cpu_relax();
    }
    if (mb.read_output(out).seq == seq && !app.output_matches(token, out)) {
      throw std::runtime_error("profile: " + workload + " on " + std::to_string(sms) +
                               " SMs computed a wrong output");
    }
  }
  const tear_down_report report = run->tear_down();
  if (!report.stopped || !report.error.empty()) {
    throw std::runtime_error("profile: " + workload + ": " + report.error);
  }
  double worst = 0;
  int seen = 0;
  const auto& entries = run->telemetry();
  for (std::size_t i = static_cast<std::size_t>(warmup); i < entries.size(); ++i) {
    const auto& e = entries[i];
    const std::uint64_t released = e.stamp_ns[static_cast<std::size_t>(stage::controller_end)];
    const std::uint64_t end = e.stamp_ns[static_cast<std::size_t>(stage::end_marker)];
    if (e.repeat != 0 || released == 0 || end < released) continue;
    worst = std::max(worst, static_cast<double>(end - released) / 1e3);
    ++seen;
  }
  if (seen == 0) throw std::runtime_error("profile: no telemetry for " + workload);
  return worst;
}

int run_plan(const plan_settings& settings, std::ostream& out) {
  // -1 is "not given"; anything else must be a real device size, checked before any file is read.
  if (settings.sm_count != -1 && settings.sm_count <= 0) {
    throw std::invalid_argument("--sm-count must be a positive number of SMs; got " +
                                std::to_string(settings.sm_count));
  }
  auto tasks = partition::load_taskset(settings.file);
  if (settings.sm_count > 0) tasks.device.sm_count = settings.sm_count;
  if (settings.profile) {
    if (device_count() == 0) {
      throw std::runtime_error("--profile runs the workloads on a GPU; none is usable here (" +
                               no_device_reason() + ")");
    }
    for (auto& loop : tasks.loops) {
      if (loop.workload.empty()) continue;
      loop.wcet_us.clear();
      for (const int sms : settings.profile_sizes) {
        if (sms > tasks.device.sm_count) continue;
        const double b = profile_body_us(loop.workload, loop.mode, sms, settings.profile_samples);
        loop.wcet_us[sms] = b;
        out << "profiled " << loop.name << " (" << loop.workload << ", " << to_string(loop.mode)
            << ") on " << sms << " SMs: B = " << b << " us (max of " << settings.profile_samples
            << ")\n";
      }
    }
  }
  const auto result = partition::plan(tasks);

  out << "== " << settings.file << " ==\n" << partition::render_text(result);
  if (!settings.json.empty()) {
    auto json = partition::to_json(result);
    json["benchmark"] = "plan";
    json["source"] = settings.file;
    json["sm_count_override"] =
        settings.sm_count > 0 ? nlohmann::json(settings.sm_count) : nlohmann::json();
    std::ofstream file(settings.json);
    // Names from the taskset are not checked for UTF-8: invalid bytes are written as U+FFFD.
    file << json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    if (!file) throw std::runtime_error("cannot write " + settings.json);
    out << "json: " << settings.json << '\n';
  }
  if (result.feasible) {
    out << settings.file << ": fits\n";
    return 0;
  }
  out << settings.file << ": does not fit (exit status " << plan_does_not_fit << ")\n";
  return plan_does_not_fit;
}

}  // namespace resident::bench
