#pragma once
// bench camera's stage breakdown: where each measured frame spent its time on the device clock,
// so a receipt says which stage a late frame waited in.
//
//   queue       arrival -> the handler pass that took it began (the loop was still busy with an
//               earlier frame when it landed)
//   sighting    the later of arrival and that pass's start -> the handler saw it
//   controller  seen -> the DAG released (0 stamps where a mode has no controller stamp)
//   dag         released (or seen) -> scanout buffer written: the operators and the egress
//
// Beside each of the slowest frames: the sensor thread's lateness (the emulated sensor's host
// thread, outside the loop) and the gap since the frame before it arrived (two frames landing
// together show as a short gap).
//
// Late frames: those whose arrival -> commit exceeds the median by more than late_margin_us.
// Each is filed under the stage that exceeds its own median the most, and counted as bunched
// when it landed less than half the median arrival gap after the frame before it (the sensor's
// host thread delivered two at once: a cause outside the loop).

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "camera/camera.hpp"

namespace resident::bench {

/// A frame later than the median by this much (µs) is late.
inline constexpr double late_margin_us = 20.0;

/// Per stage p50, p99 and max (µs) over the frames numbered `first_frame` and later that carry
/// arrival and commit stamps, and the `slowest` of them (arrival -> commit) with their stages:
/// {"n", "stages_us": {stage: {"p50", "p99", "max"}}, "slowest": [{"frame", "total_us",
/// "queue_us", "sighting_us", "controller_us", "dag_us", "sensor_late_us", "arrival_gap_us"}],
/// "late": {"margin_us", "threshold_us", "frames", "by_stage": {stage: count}, "bunched",
/// "sensor_late"}, "spaced": {"gap_over_us", "n", "min_us", "max_us", "jitter_us"},
/// "idle": {"n", "min_us", "max_us", "jitter_us"}}
/// ("sensor_late": late frames whose sensor thread was itself late by more than the margin;
/// "spaced": arrival -> commit over the frames that arrived more than one pipeline latency, the
/// median arrival -> commit, after the frame before them, so no earlier frame held them up; null
/// when none did; "idle": the same over the frames that landed after every earlier frame's
/// commit, the loop's own jitter with the sensor's bunching taken out; null when none did).
/// Null when no frame qualifies.
[[nodiscard]] nlohmann::json stage_breakdown(const std::vector<camera::frame_stages>& frames,
                                             std::uint64_t first_frame, std::size_t slowest = 5);

}  // namespace resident::bench
