#pragma once
// The partition planner: does a set of GPU-resident loops, each confined to its own partition of
// SMs, meet every loop's deadline on one device, and with how few SMs each? CPU-only arithmetic
// over measured numbers; docs/plan.md has the model, the input format and a worked example.
//
// The model. Loop i runs in mode while or tail on a partition of m SMs. Its sensor releases a
// sample every T = 1/rate_hz; its body takes at most B(m) µs on m SMs, from a table of profiled
// sizes: B(m) is the entry at the largest profiled size <= m (more SMs are assumed never slower
// than fewer), and sizes below the smallest profiled one have no WCET. Two fixed overheads per
// mode: O_pass, one idle controller pass (handler, controller, loop back), and O_busy, what a busy
// iteration costs beyond its body (handler, controller, IF transition or tail launch, end marker,
// loop back). With δ the controller's idle sleep, a sample's response (release to commit) is at
// most
//
//   R(m) = max(O_pass + δ, O_busy + B(m)) + O_busy + B(m)
//
// because a sample that arrives just after the handler looked waits for the next look: at most
// one idle pass and its sleep, or, when the loop is busy with the previous sample, one whole busy
// iteration; then its own iteration runs. The bound holds only while the loop keeps up, i.e.
// O_busy + B(m) <= T; otherwise samples queue or are dropped by the policy, and m is infeasible.
// A loop is feasible on m SMs when it keeps up and R(m) <= D.
//
// The search. Candidate sizes are the multiples of the device's granularity between its minimum
// partition and its SM count. Feasibility is monotone in m for a table that never gets slower
// with more SMs, so each loop's smallest feasible size is optimal for it, and the taskset fits iff
// those sizes add up to at most the SM count. Every candidate is evaluated all the same, so a
// table that is slower at a larger size is still planned exactly.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "resident/exec/mode.hpp"

namespace resident::partition {

/// "180", "10.635", "0.5": a value in µs with three decimals at most and no trailing zeros;
/// enough for %globaltimer's 32 ns steps, short enough to read (the planner's messages).
[[nodiscard]] std::string format_us(double value);

/// An invalid taskset, overhead receipt or input file. The message names the loop or key and, for
/// files, origin:line:col.
class plan_error : public std::invalid_argument {
 public:
  explicit plan_error(const std::string& what) : std::invalid_argument(what) {}
};

/// The partitionable device. The defaults are the H200's with SM co-scheduling kept (green
/// contexts split it into groups of 8 SMs, at least 8; docs/findings.md).
struct device_spec {
  int sm_count{132};
  int granularity{8};    // partition sizes are multiples of this
  int min_partition{8};  // and at least this
  int count{1};          // identical devices the loops are spread over (1 to 64)
};

/// One mode's fixed costs, in µs, margin already applied.
struct overhead_model {
  double idle_pass_us{};   // O_pass: one idle controller pass (handler, controller, loop back)
  double busy_fixed_us{};  // O_busy: a busy iteration beyond its body
  /// Where the numbers come from, and which statistic was used: "explicit" or the receipt's
  /// file and fields, e.g. "overhead.json: idle pass = idle_iteration mean_us; ...".
  std::string source;
};

/// One GPU-resident loop. wcet_us is public and plain so a profiler can fill it in.
struct loop_spec {
  std::string name;  // unique
  double rate_hz{};  // sensor rate; the period is T = 1e6 / rate_hz µs
  double deadline_us{};
  std::uint64_t sleep_ns{0};  // δ: the controller's idle sleep, as run_options::idle_sleep_ns
  execution_mode mode{execution_mode::while_loop};  // while_loop or tail
  /// Body WCET per profiled partition size: SMs -> µs, measured from the first body kernel's
  /// start to the end marker's start (the span the overhead benchmark subtracts from a busy
  /// iteration), so that O_busy + B(m) is one whole busy iteration.
  std::map<int, double> wcet_us;
  /// A `resident bench` workload name (e.g. matmul256x2) that `resident plan --profile` runs on
  /// each partition size to measure wcet_us; empty: the table is given.
  std::string workload;

  [[nodiscard]] double period_us() const noexcept { return 1e6 / rate_hz; }
  [[nodiscard]] double sleep_us() const noexcept { return static_cast<double>(sleep_ns) / 1e3; }
};

struct taskset {
  device_spec device;
  std::map<execution_mode, overhead_model> overheads;  // every loop's mode needs one
  std::vector<loop_spec> loops;
};

/// Throws plan_error for the first mistake: a device size that is not positive; an overhead that
/// is negative or not finite; no loops; an empty or duplicate loop name; a rate or deadline that
/// is not positive and finite; a mode other than while or tail, or one the overheads do not
/// cover; an empty WCET table, a size that is not positive or a WCET that is not positive and
/// finite.
void validate(const taskset& tasks);

/// The partition sizes the device offers, ascending: multiples of granularity, >= min_partition,
/// <= sm_count. Empty when none fits.
[[nodiscard]] std::vector<int> candidate_sizes(const device_spec& device);

/// B(sm): the WCET at the largest profiled size <= sm; nullopt below the smallest profiled size.
[[nodiscard]] std::optional<double> wcet_at(const loop_spec& loop, int sm);

/// R(sm) in µs (see the file comment). plan_error when the loop has no WCET at sm. Does not check
/// that the loop keeps up: the bound means nothing when O_busy + B(sm) > T.
[[nodiscard]] double response_bound(const loop_spec& loop, const overhead_model& overhead, int sm);

/// What the waiting part of R is made of: an idle pass plus δ, or one busy iteration.
enum class wait_kind { idle_pass, busy_iteration };
[[nodiscard]] std::string_view to_string(wait_kind kind) noexcept;

/// One loop at one candidate size.
struct size_evaluation {
  int sm{};
  double wcet_us{};      // B(sm)
  double busy_us{};      // O_busy + B(sm): one busy iteration
  double response_us{};  // R(sm)
  wait_kind wait{};      // which term of the max in R won (busy on a tie)
  bool keeps_up{};       // busy_us <= T
  bool meets_deadline{};
  [[nodiscard]] bool feasible() const noexcept { return keeps_up && meets_deadline; }
};

/// Why a loop has no feasible size, in the order they are checked.
enum class loop_verdict {
  fits,             // some candidate size is feasible; sm is the smallest
  no_partition,     // the device offers no partition size at all
  no_wcet,          // the WCET table starts above the largest candidate size
  overloaded,       // at no size does a busy iteration fit in the sensor period
  misses_deadline,  // it keeps up at some size, but R > D at all of them
};
[[nodiscard]] std::string_view to_string(loop_verdict verdict) noexcept;

struct loop_plan {
  std::string name;
  execution_mode mode{};
  double period_us{};
  double deadline_us{};
  double sleep_us{};
  loop_verdict verdict{};
  /// The smallest feasible size and the numbers there; 0 when the loop does not fit.
  int sm{};
  /// The device its partition is placed on (0 to device.count - 1); -1 when it is not placed.
  int device{-1};
  double wcet_us{};
  double busy_us{};
  double response_us{};
  double slack_us{};     // D - R
  double utilization{};  // (O_busy + B) / T
  wait_kind wait{};
  std::vector<size_evaluation> sizes;  // every candidate size with a WCET, ascending
  std::string reason;                  // why it does not fit; empty when it does

  [[nodiscard]] bool feasible() const noexcept { return verdict == loop_verdict::fits; }
};

struct plan_result {
  bool feasible{};
  device_spec device;
  std::map<execution_mode, overhead_model> overheads;
  std::vector<loop_plan> loops;  // in taskset order
  /// The sum of the minimal sizes of the loops that fit on their own.
  int sm_needed{};
  /// count * sm_count - sm_needed: the SMs left over when the taskset fits, the shortfall
  /// (negated) when it is short of SMs only. Meaningless when some loop does not fit at any size.
  int sm_left{};
  /// SMs the placed partitions take on each device (device.count entries).
  std::vector<int> sm_used_by_device;
  std::vector<std::string> reasons;  // why it does not fit, one sentence each; empty when it does
};

/// Validates, then finds each loop's smallest feasible size and whether they fit together.
[[nodiscard]] plan_result plan(const taskset& tasks);

/// Reads the overheads of a receipt file for a taskset's `overheads: {receipt: ...}`: (path,
/// margin, the name the taskset gives it, the taskset's origin:line:col of that key). Receipts are
/// JSON, which the runtime does not parse: resident::lab's partition::overhead_receipt_reader
/// (resident/partition/planner_json.hpp) is the reader, and its parse_taskset and load_taskset
/// overloads pass it.
using receipt_reader = std::function<std::map<execution_mode, overhead_model>(
    const std::filesystem::path& file, double margin, const std::string& name,
    const std::string& at)>;

/// Reads a taskset (the format is in docs/plan.md):
///
///   device: {sm_count: 132, granularity: 8, min_partition: 8}   # optional
///   overheads: {receipt: overhead.json, margin: 1.2}            # or while: {idle_pass_us, ...}
///   loops:
///     - {name: camera, rate_hz: 1000, deadline_us: 300, wcet_us: {8: 180, 16: 100, 32: 60}}
///
/// A receipt path is relative to base_dir (the file's directory for load_taskset) and read by
/// read_receipt; a taskset that names a receipt when read_receipt is empty is a plan_error.
/// Unknown keys, missing keys, wrong types and invalid values are plan_errors with
/// origin:line:col.
[[nodiscard]] taskset parse_taskset(std::string_view yaml, const std::string& origin,
                                    const std::filesystem::path& base_dir,
                                    const receipt_reader& read_receipt);
[[nodiscard]] taskset load_taskset(const std::filesystem::path& file,
                                   const receipt_reader& read_receipt);

/// The device, each overhead and its source, a table of loops (SMs, B, R, D, slack,
/// utilization, the larger wait), then "fits: ..." or "does not fit:" and each reason.
[[nodiscard]] std::string render_text(const plan_result& result);

}  // namespace resident::partition
