#pragma once
// bench reef (internal to the bench): what one policy's run measured, from its samples, the
// loop's telemetry and the BE runners, into the policy's result.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/common.hpp"
#include "bench/reef/reef_bench.hpp"
#include "bench/reef/reef_model.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/measure/statistics.hpp"
#include "resident/sched/preemption.hpp"

namespace resident::bench::reef_detail {

/// The measured samples' latencies (warm-up left out) and how sure each one is.
struct rt_latencies {
  explicit rt_latencies(std::int64_t disturbance_ns) : accounting(disturbance_ns) {}
  std::vector<double> us;
  std::int64_t unobserved{0};
  std::int64_t wrong{0};
  // Which latencies the measuring threads may have stretched (the sensor slow to publish, the
  // actuator off its core), and each one's device part against the rest.
  sample_accounting accounting;
  std::vector<device_stamps> stamps;
};

/// The measured samples (after the warm-up) of a run whose sequence numbers start after `base`.
void collect_latencies(const reef_settings& s, const sample_log& samples, const run_handle& handle,
                       std::uint64_t base, std::size_t total, rt_latencies& out);

/// The device's split of each measured sample (telemetry stamps, and the done stamps of
/// rt_split_body and be_trace).
struct rt_breakdown {
  std::vector<double> preempt_us;
  std::vector<double> body_us;
  std::vector<double> to_controller_us;  // detect -> controller start
  std::vector<double> release_us;        // controller end (IF predicate set) -> body start
  std::vector<double> copy_in_us;        // detect -> handler end (the sample copied in)
  std::vector<double> handoff_us;        // handler end -> controller start
  std::vector<double> compute_us;        // body start -> RT compute done (rt_split_body)
  std::vector<double> egress_us;         // RT compute done -> commit
  std::vector<rt_sample_trace> traced;   // be_trace
  std::vector<double> word_up_us;        // the preempt word's raise -> the end marker (its clear)
  std::vector<double> raise_to_body_us;  // the raise -> body start (detect -> body start, plus
                                         // the lead where the word went up ahead of the sample)
  std::vector<double> raise_lead_us;     // the raise -> detect
};

/// The breakdown of every measured sample: the loop's stamps, and (`done` not empty) the done
/// stamps of rt_split_body and be_trace.
[[nodiscard]] rt_breakdown breakdown_of(const reef_settings& s, const run_handle& handle,
                                        const std::vector<rt_done_stamp>& done,
                                        const sample_log& samples, std::uint64_t base,
                                        std::size_t total);

/// The BE clients' side of a result: throughput of inference and of padding, each runner's
/// counts.
[[nodiscard]] nlohmann::json be_result(const reef_settings& s,
                                       const std::vector<sched::be_runner_stats>& stats,
                                       std::size_t clients, double be_seconds,
                                       std::uint64_t pad_blocks, const pad_source& pad);

/// The RT latencies and their breakdown into a new result (`trace`: the BE blocks' trace on
/// the device, or null).
[[nodiscard]] nlohmann::json rt_result(const reef_settings& s, const std::string& policy,
                                       const rt_latencies& lat, const measure::summary& sum,
                                       const tear_down_report& report, std::size_t total,
                                       std::int64_t stray, const rt_breakdown& b, bool stamp_done,
                                       const sched::be_trace* trace);

}  // namespace resident::bench::reef_detail
