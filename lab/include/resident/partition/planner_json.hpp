#pragma once
// The partition planner's JSON side (resident::lab): overheads from a `resident bench overhead`
// receipt, a taskset reader that follows `overheads: {receipt: ...}`, and a plan as JSON. The
// planner's model itself is the runtime's (resident/partition/planner.hpp).

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "resident/partition/planner.hpp"

namespace resident::partition {

/// The while and tail overheads of a `resident bench overhead` receipt, each multiplied by
/// margin: O_pass = the idle_iteration result's mean_us (it has no other statistic), O_busy =
/// busy_iteration's max_us minus body_to_end_marker's min_us (the one-kernel body's own span;
/// max - min because the extremes may come from different iterations), mean_us where those are
/// missing. A mode with none of the three results is left out; one
/// with some but not all of them, a duplicated result, a receipt of another benchmark or a
/// margin below 1 throw plan_error. `origin` names the receipt in sources and messages.
[[nodiscard]] std::map<execution_mode, overhead_model> overheads_from_receipt(
    const nlohmann::json& receipt, double margin = 1.0, const std::string& origin = "receipt");

/// Reads a receipt file with overheads_from_receipt, for parse_taskset and load_taskset.
[[nodiscard]] receipt_reader overhead_receipt_reader();

/// parse_taskset and load_taskset with overhead_receipt_reader().
[[nodiscard]] taskset parse_taskset(std::string_view yaml, const std::string& origin,
                                    const std::filesystem::path& base_dir = {});
[[nodiscard]] taskset load_taskset(const std::filesystem::path& file);

/// {feasible, device: {sm_count, granularity, min_partition}, overheads: {while: {idle_pass_us,
///  busy_fixed_us, source}}, loops: [{name, mode, verdict, sm (null when none), period_us,
///  deadline_us, sleep_us, wcet_us, busy_us, response_us, slack_us, utilization, wait, reason,
///  sizes: [{sm, wcet_us, busy_us, response_us, wait, keeps_up, meets_deadline}]}], sm_needed,
///  sm_left, reasons}. Numbers of a loop that does not fit are null.
[[nodiscard]] nlohmann::json to_json(const plan_result& result);

}  // namespace resident::partition
