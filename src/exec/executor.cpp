#include <cstdio>
#include <stdexcept>
#include <string>

#include "exec/modes.hpp"
#include "resident/app/application.hpp"
#include "resident/cuda/device.hpp"
#include "resident/exec/executor.hpp"
#include "resident/exec/mode.hpp"
#include "resident/exec/run_options.hpp"
#include "resident/partition/green_context.hpp"

namespace resident {

std::string_view to_string(execution_mode m) noexcept {
  switch (m) {
    case execution_mode::eager:
      return "eager";
    case execution_mode::host_graph:
      return "host-graph";
    case execution_mode::while_loop:
      return "while";
    case execution_mode::tail:
      return "tail";
    case execution_mode::persistent:
      return "persistent";
  }
  return "unknown";
}

execution_mode parse_execution_mode(std::string_view name) {
  for (const auto m : all_execution_modes) {
    if (to_string(m) == name) return m;
  }
  if (name == to_string(execution_mode::persistent)) return execution_mode::persistent;
  throw std::invalid_argument("unknown execution mode '" + std::string(name) +
                              "'; modes: eager, host-graph, while, tail, persistent");
}

std::string_view to_string(sample_policy p) noexcept {
  switch (p) {
    case sample_policy::newest:
      return "newest";
    case sample_policy::every:
      return "every";
    case sample_policy::skip_duplicate:
      return "skip-duplicate";
  }
  return "unknown";
}

sample_policy parse_sample_policy(std::string_view name) {
  for (const auto p :
       {sample_policy::newest, sample_policy::every, sample_policy::skip_duplicate}) {
    if (to_string(p) == name) return p;
  }
  throw std::invalid_argument("unknown sample policy '" + std::string(name) +
                              "'; policies: newest, every, skip-duplicate");
}

void run_options::validate() const {
  using std::to_string;
  if (persistent_blocks < 0) {
    throw std::invalid_argument(
        "run_options::persistent_blocks must be >= 0 (0: as many as fit), "
        "got " +
        to_string(persistent_blocks));
  }
  if (policy != sample_policy::newest && policy != sample_policy::every &&
      policy != sample_policy::skip_duplicate) {
    throw std::invalid_argument("run_options: policy holds an unknown value " +
                                to_string(static_cast<unsigned>(policy)));
  }
  if (capture != capture_order::chain && capture != capture_order::forked) {
    throw std::invalid_argument("run_options: capture holds an unknown value " +
                                to_string(static_cast<unsigned>(capture)));
  }
  if (device < 0) throw std::invalid_argument("run_options: device must be >= 0");
  if (on_telemetry && telemetry_samples == 0) {
    throw std::invalid_argument(
        "run_options: on_telemetry needs telemetry_samples > 0 (the size of the device ring it "
        "is drained from)");
  }
  if (telemetry_max_age.count() < 0 || telemetry_max_age > std::chrono::minutes(1)) {
    throw std::invalid_argument(
        "run_options: telemetry_max_age must be 0 (drain when half full) to 60000 ms, got " +
        to_string(telemetry_max_age.count()) + " ms");
  }
  if (deadline.count() < 0 || deadline > std::chrono::seconds(1)) {
    throw std::invalid_argument("run_options: deadline must be 0 (none) to 1 s, got " +
                                to_string(deadline.count()) + " ns");
  }
  if (phase_times && (phase_rows < 2 || phase_rows > (1U << 20))) {
    throw std::invalid_argument("run_options: phase_rows must be 2 to 1048576, got " +
                                to_string(phase_rows));
  }
  if (partition && partition->device() != device) {
    throw std::invalid_argument("run_options: the partition belongs to device " +
                                to_string(partition->device()) + ", the run is on device " +
                                to_string(device));
  }
  if (stall_timeout.count() <= 0) {
    throw std::invalid_argument("run_options: stall_timeout must be positive");
  }
  if (preempt.lead_ns > 0) {
    if (preempt.word == nullptr) {
      throw std::invalid_argument("run_options: preempt.lead_ns is set but preempt.word is null");
    }
    if (preempt.period_ns == 0 || preempt.lead_ns >= preempt.period_ns) {
      throw std::invalid_argument("run_options: preempt.lead_ns (" + to_string(preempt.lead_ns) +
                                  " ns) needs the sensor's preempt.period_ns and must be shorter "
                                  "than it (period_ns " +
                                  to_string(preempt.period_ns) + ")");
    }
    if (poll_ns == 0) {
      // The early raise happens inside the handler's polling loop: with no polling budget every
      // idle iteration would raise the word and its controller clear it again.
      throw std::invalid_argument(
          "run_options: preempt.lead_ns (" + to_string(preempt.lead_ns) +
          " ns) needs the handler to poll between samples: set poll_ns (e.g. to the lead or "
          "more); with poll_ns 0 the word would go up and down on every idle iteration");
    }
  }
  // In long double: 2 * (idle_sleep_ns + poll_ns) can exceed 64 bits.
  const long double stall_ns = static_cast<long double>(stall_timeout.count()) * 1e6L;
  const long double quiet_ns =
      2.0L * (static_cast<long double>(idle_sleep_ns) + static_cast<long double>(poll_ns));
  if (stall_ns <= quiet_ns) {
    char quiet_ms[64];
    std::snprintf(quiet_ms, sizeof quiet_ms, "%.3Lf", quiet_ns / 1e6L);
    std::string shown(quiet_ms);  // "2000.000" -> "2000", "0.500" -> "0.5"
    shown.erase(shown.find_last_not_of('0') + 1);
    if (shown.back() == '.') shown.pop_back();
    throw std::invalid_argument(
        "run_options: stall_timeout (" + to_string(stall_timeout.count()) +
        " ms) must exceed twice the idle sleep plus the handler poll time (" + shown +
        " ms), or an idle loop would be reported as stalled");
  }
}

std::unique_ptr<Executor> make_executor(Application& app, execution_mode mode,
                                        const run_options& options) {
  options.validate();
  // Everything that needs no GPU first, so a broken application is reported as such.
  (void)app.plan();
  if (is_resident(mode) && !app.has_data_ready_handler()) {
    throw composition_error(
        std::string(to_string(mode)) + " mode needs a data-ready handler: application '" +
        app.name() +
        "' registers none (call register_data_ready_handler() in compose()); without one the "
        "GPU loop would have nothing to wait for");
  }
  if (options.phase_times && mode != execution_mode::persistent) {
    throw std::invalid_argument(std::string("run_options::phase_times: the ") +
                                std::string(to_string(mode)) +
                                " mode has no phases to time; it times persistent mode's device "
                                "forms (other modes: telemetry_samples)");
  }
  // A device this machine does not have is refused by name (without any device, the first
  // CUDA call says there is no usable GPU, as everywhere else).
  if (device_count() > 0) {
    if (const std::string why = missing_device(options.device); !why.empty()) {
      throw std::invalid_argument("run_options: device " + why);
    }
  }
  // The loop's memory, streams and graphs belong to the run's device; the caller's current
  // device is left as it was.
  const current_device_guard on_device(options.device);
  switch (mode) {
    case execution_mode::eager:
      return detail::make_eager_executor(app, options);
    case execution_mode::host_graph:
      return detail::make_host_graph_executor(app, options);
    case execution_mode::while_loop:
      return detail::make_while_executor(app, options);
    case execution_mode::tail:
      return detail::make_tail_executor(app, options);
    case execution_mode::persistent:
      return detail::make_persistent_executor(app, options);
  }
  throw std::invalid_argument("make_executor: unknown execution mode");
}

}  // namespace resident
