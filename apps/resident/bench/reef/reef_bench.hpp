#pragma once
// resident bench reef: real-time (RT) loops sharing the GPU with closed-loop best-effort (BE)
// inference, DISB-style, under every co-scheduling policy in one run: RT alone, sequential,
// plain multi-stream, CUDA stream priorities, a static green-context split, reset-based
// preemption, and preemption plus dynamic kernel padding.
//
// The RT client is a resident `while` loop (emulated sensor -> MLP inference -> emulated
// actuator) whose handler raises the preempt word itself; the BE clients run an MLP or CNN
// through sched::be_runner.

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "resident/measure/receipt.hpp"

namespace resident::bench {

/// What is wrong with a reef_settings: the knob (its key in the configuration file) and a
/// message naming it.
struct reef_problem {
  std::string key;
  std::string message;
};

/// Every knob of bench reef. The command line sets the policies, the arrivals, the rate and the
/// sample counts; every knob, those included, can come from a configuration file
/// (reef_config.hpp; the defaults: bench/configs/reef.yaml).
struct reef_settings {
  std::vector<std::string> policies{"exclusive",   "sequential",      "multi-stream", "priority",
                                    "green-split", "exclusive-split", "preempt",      "preempt-pad",
                                    "preempt-sm",  "preempt-lead",    "exclusive-end"};
  std::string arrival{"periodic"};  // periodic or poisson
  double rate_hz{4000.0};           // RT requests per second
  std::int64_t samples{5000};       // measured RT requests per policy
  std::int64_t warmup{500};
  std::string be_model{"mlp"};  // mlp, mlp-fused or cnn
  int be_clients{1};            // closed-loop BE clients (one stream each)
  std::size_t be_window{1};     // BE launches in flight per client (see docs/findings.md)
  /// ... under preempt-sm, whose launches hand cut blocks back within the launch.
  std::size_t be_window_sm{2};
  /// ... under green-split, whose BE partition never holds an RT kernel: no preemption for a
  /// queued launch to delay, so two in flight as the design asks (1: 3-5% less BE throughput at
  /// 8 kHz, docs/findings.md).
  std::size_t be_window_split{2};
  /// ... and at most this many BE blocks on each RT SM at once (sched::be_runner_options::
  /// rt_sm_blocks; 0: no limit). 3 keeps one block's room for the RT loop: with four, a
  /// handler relaunched after its end marker can wait for a whole BE kernel (docs/findings.md).
  int be_rt_sm_blocks{3};
  std::int32_t be_bounded_grid{4};           // be_runner_options::bounded_grid_per_sm (0: off)
  bool be_bounded_grid_counter{false};       // ... taking work from a counter, not a stride
  bool be_checkpoint{true};                  // preempted gemm/conv2d blocks keep their partial sums
  std::uint32_t be_checkpoint_min_steps{1};  // ... when they added at least this many K-steps
  std::int32_t rt_batch{32};
  /// green-split, preempt-sm: SMs of the RT partition. 40 (five driver groups): the RT loop's
  /// in-loop p99 about 1 us lower than with 32 at 8 kHz, BE throughput within the noise
  /// (docs/findings.md, "BE on every SM the RT partition leaves").
  int split_sms{40};
  /// green-split's BE partition takes every SM the RT one leaves (split_options::rest_to_last):
  /// 92 on the H200 beside 40 RT SMs. Off: whole driver groups only (88 beside 40, as beside
  /// the 32 of before).
  bool split_be_rest{true};
  double pad_tolerance{0.05};      // padded RT kernel within this of the kernel alone
  double pad_place_wait_us{20.0};  // sched::pad_limits::place_wait_ns of the padded launches
  /// RT gemms without BE padding get placement slots (sched::placement_only): their blocks each
  /// take an SM of their own instead of doubling up on the first SMs BE blocks leave.
  bool rt_spread{true};
  /// The RT gemm launches record where their blocks landed (rt_placement in the result). Off
  /// by default: the record's atomics run on the RT kernels' own time (0.7-3.9 us of the RT
  /// body's median in bench reef, docs/findings.md). be_trace turns it on.
  bool rt_placement{false};
  std::string rt_out_copy{"memcpy"};  // the RT scores into the output port: memcpy or kernel
  /// The RT model's kernels after the first follow each other programmatically (PDL,
  /// sched::launch_dependency), so each one's launch overlaps the kernel before it. On: the
  /// body 2.4 us shorter, and no drift of the baseline after BE work (docs/findings.md).
  bool rt_pdl{true};
  /// When the RT handler raises the preempt word: "detect" (it sees a new sample, so BE blocks
  /// leave while it copies the sample in) or "after-copy" (preempt_hook::after_input).
  std::string rt_raise{"detect"};
  /// preempt-lead (periodic arrivals): the handler raises the word this long before the next
  /// sample is due (preempt_hook::lead_ns), so BE blocks leave before the sample comes. The
  /// other policies raise it when the sample comes. 10 us: long enough for the BE blocks to
  /// leave at 8 kHz (docs/findings.md, "Raising the word ahead of a periodic sample").
  double rt_raise_lead_us{10.0};
  bool rt_l2_persist{true};   // RT kernels' accesses to the RT model persist in L2
  bool rt_arena{true};        // the RT model in one allocation (off: one per buffer)
  bool rt_split_body{false};  // stamp the end of the RT compute: body = compute + egress
  bool be_trace{false};  // BE blocks trace themselves; each RT sample says whether they overlapped
  std::uint64_t poll_ns{20'000'000};
  /// A sample is disturbed when the sensor's publish, or the actuator's last poll before it saw
  /// the output, took longer (the thread lost its core; bench io's threshold).
  std::int64_t disturbance_ns{2000};
  std::uint64_t seed{7};
  bool realtime{true};
  bool progress{false};  // a line per 250 ms to the log: RT loop and BE runner counts
  std::string command;

  void make_quick();
  /// Whether the handler raises the preempt word once the sample is copied in (rt_raise).
  [[nodiscard]] bool raises_after_copy() const { return rt_raise == "after-copy"; }
  /// The policies that run: all of `policies`, less preempt-lead under Poisson arrivals.
  [[nodiscard]] std::vector<std::string> runnable_policies() const;
  /// preempt_hook::lead_ns for a policy: the lead under preempt-lead, 0 elsewhere.
  [[nodiscard]] std::uint64_t raise_lead_ns(const std::string& policy) const;
  /// The RT sensor's period (1 / rate_hz), in ns.
  [[nodiscard]] std::uint64_t period_ns() const {
    return static_cast<std::uint64_t>(1e9 / rate_hz + 0.5);
  }
  /// Whether the RT gemm launches record their placement: rt_placement, or be_trace.
  [[nodiscard]] bool records_placement() const { return rt_placement || be_trace; }
  /// pad_place_wait_us as sched::pad_limits::place_wait_ns.
  [[nodiscard]] std::uint32_t place_wait_ns() const {
    return static_cast<std::uint32_t>(pad_place_wait_us * 1000.0);
  }
  /// The first problem of these settings, if any: an unknown name, a value out of its range,
  /// or knobs that do not go together.
  [[nodiscard]] std::optional<reef_problem> problem() const;
  /// Throws std::invalid_argument with problem()'s message.
  void validate() const;
  /// Whether a policy runs in an SM partition (green-split, exclusive-split, preempt-sm).
  [[nodiscard]] bool needs_partition() const;
  /// split_sms against the device (sm_count SMs, handed out by the driver as `groups` groups
  /// of `alignment`; groups <= 0: sm_count / alignment), for the policies in `policies` that
  /// split: the RT partition must fit, and green-split and exclusive-split must leave at least
  /// one group for their BE partition. Throws std::invalid_argument naming the numbers.
  void check_split(int sm_count, int alignment, int groups = 0) const;

 private:
  [[nodiscard]] std::optional<reef_problem> choice_problem() const;
  [[nodiscard]] std::optional<reef_problem> range_problem() const;
};

/// One RT sample as be_trace sees it (device %globaltimer, ns; host latency in us).
struct rt_sample_trace {
  double latency_us{-1};  // sensor -> actuator; negative: not observed
  std::uint64_t body_start{0};
  std::uint64_t compute_end{0};  // the RT compute's last kernel done
  std::uint64_t commit{0};
  std::uint32_t be_running{0};      // BE blocks running at compute_end
  std::uint64_t be_last_begin{0};   // latest BE block begin before compute_end
  std::uint64_t be_last_end{0};     // latest BE block end before compute_end
  std::uint64_t be_last_stop{0};    // latest BE block turned away by the word before compute_end
  std::uint32_t sm_khz{0};          // SM clock right after the compute (0: not measured)
  std::uint32_t be_checkpoints{0};  // BE checkpoints stored so far, at compute_end (cumulative)
  /// The RT gemms' placement so far, at compute_end (cumulative, sched::pad_placement): merged
  /// launches whose RT blocks doubled up on an SM, and the sum of their RT blocks' start spread.
  std::uint32_t rt_crowded{0};
  std::uint64_t rt_spread_ns{0};
  /// Each RT gemm layer's launch in this body: first RT block's start, last RT block's end (0:
  /// not stamped).
  std::array<std::uint64_t, 3> gemm_start{};
  std::array<std::uint64_t, 3> gemm_end{};
};

/// Whether BE blocks shared the GPU with each RT body (began in it, ended in it, or were
/// still running at its compute's end) or reached an SM in it only to be turned away by the
/// word; the RT body's summary for each kind and for bodies with neither; how far into the
/// body the last BE block ran; and how many of the slowest 1% of bodies and of latencies had
/// each.
[[nodiscard]] nlohmann::json be_overlap(const std::vector<rt_sample_trace>& samples);

/// What the BE work left just before each RT body that no BE block overlapped: how many
/// checkpoints BE blocks stored since the previous sample's compute (most of them when this
/// sample raised the word), and how long before the body the last BE block left (ended, or was
/// turned away). For the slowest 1% of those bodies against the rest: if checkpoint stores
/// slowed the body that follows, the slow ones would follow more stores, or follow them closer.
/// `samples` in sample order.
[[nodiscard]] nlohmann::json before_body(const std::vector<rt_sample_trace>& samples);

/// Where each body's RT gemm blocks landed (every traced sample): the slowest 1% of bodies
/// against the rest, by the start spread of their RT gemm blocks (last RT block's start - first,
/// summed over the body's gemms) and by how many had a gemm whose RT blocks doubled up on an SM.
/// An RT kernel that starts while BE blocks still hold most SMs gets its blocks late, or two to
/// an SM. `samples` in sample order; each difference is taken against the sample before.
[[nodiscard]] nlohmann::json rt_placement(const std::vector<rt_sample_trace>& samples);

/// Where each RT compute's time went (every traced sample): the slowest 1% of computes against
/// the rest, by segment: each RT gemm launch (first RT block's start -> last RT block's end),
/// the kernels between two gemms (bias/activation), and the last gemm's end -> the compute's
/// end (bias, fill, row sum). The segments add up to the compute.
[[nodiscard]] nlohmann::json rt_compute_split(const std::vector<rt_sample_trace>& samples);

/// The SM clock right after each RT compute (be_trace, every policy): its range, and the
/// slowest 1% of computes against the rest (time, clock, and time x clock: the cycles they
/// would take at that clock).
[[nodiscard]] nlohmann::json rt_clock(const std::vector<rt_sample_trace>& samples);

/// The policy names bench reef knows, in its default order.
[[nodiscard]] const std::vector<std::string>& reef_policies();

[[nodiscard]] measure::receipt run_reef_bench(const reef_settings& settings, std::ostream& log);
[[nodiscard]] std::string reef_table(const measure::receipt& receipt);
/// The targets evaluated on a receipt's results, each {name, value, target, met}.
[[nodiscard]] nlohmann::json reef_targets(const nlohmann::json& results);
/// Adds each result's ratios to the baselines: RT mean, p99 and max over `exclusive`, the
/// undisturbed p99 over exclusive's, p99 over `exclusive-end` (the baseline measured last), BE
/// GFLOP/s over `sequential`, for those present.
void reef_ratios(nlohmann::json& results);

}  // namespace resident::bench
