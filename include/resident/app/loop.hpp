#pragma once
// What users of a loop see: the sample policies, the per-iteration telemetry stages, the
// preemption hook of a real-time loop, and the pure decision functions the loop applies. Plain
// types usable from host and device code.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace resident {

/// What a loop does when the handler reports a sample (see docs/api.md for the full table).
enum class sample_policy : std::uint32_t {
  /// Newest sample wins; unseen older samples count as dropped. When the handler re-publishes
  /// the sample already processed, the body runs on it again (counted as repeated), so an
  /// actuator keeps receiving output at the loop rate.
  newest = 0,
  /// The handler is asked for the next sample in order (last + 1); samples the source overwrote
  /// before they were taken count as dropped. Re-published samples are skipped.
  every = 1,
  /// Newest sample wins; a re-published (already processed) sample is skipped: the iteration
  /// idles. Each sample is processed at most once.
  skip_duplicate = 2,
};

/// The controller's verdict for one iteration.
struct release_decision {
  bool run{false};           // release the operator DAG this iteration
  bool repeat{false};        // the DAG re-processes the last sample
  std::uint64_t seq{0};      // the sample the DAG processes
  std::uint64_t dropped{0};  // samples skipped over by this release
};

/// Pure policy logic, shared by every mode's controller (WHILE, tail dispatcher, host modes).
/// `published` is the sample the handler reports (0: none); `last` the last one processed, or
/// the loop's start point while `have_processed` is false (then there is nothing to repeat).
__host__ __device__ constexpr release_decision decide_release(sample_policy policy,
                                                              std::uint64_t published,
                                                              std::uint64_t last,
                                                              bool have_processed) noexcept {
  // Field by field: returned as aggregates, the device code read its constants from global
  // memory (one more round trip on the controller's path).
  release_decision d;
  if (published == 0) return d;
  if (published > last) {
    d.run = true;
    d.seq = published;
    d.dropped = published - last - 1;
  } else if (policy == sample_policy::newest && have_processed) {
    d.run = true;
    d.repeat = true;
    d.seq = last;
  }
  return d;
}

/// Per-iteration device timestamps (%globaltimer, ns), one slot per stage of an iteration.
/// Framework kernels stamp their own slots; handler and egress operators may stamp theirs
/// (resident::device::stamp). The end marker files them into the telemetry ring.
enum class stage : std::uint32_t {
  handler_start = 0,     // the data-ready handler began polling
  detect = 1,            // the handler picked the sample it publishes
  controller_start = 2,  // controller (or tail dispatcher) began
  controller_end = 3,    // ... released the DAG (predicate set / tail launch issued)
  body_start = 4,        // first DAG work (stamped by operators that choose to)
  commit = 5,            // egress made the output visible to the actuator
  end_marker = 6,        // the end marker began
  handler_end = 7,       // the handler's last step (the sample copied in, or nothing to take)
  last_empty_poll = 8,   // the handler's clock after its last poll that found nothing new
  preempt_raised = 9,    // the preempt word went up for this iteration (run_options::preempt)
  arrival = 10,          // the sample's data landed, as its source stamped it (e.g. a frame's
                         // metadata record); stamped by handlers that know it
  count = 11,
};
inline constexpr std::size_t stage_count = static_cast<std::size_t>(stage::count);

/// One DAG run as the loop saw it.
struct telemetry_entry {
  std::uint64_t seq;                    // the sample processed
  std::uint64_t repeat;                 // 1 when it re-processed the last sample
  std::uint64_t stamp_ns[stage_count];  // 0 where no kernel stamped that stage
};

/// Where a loop that acts as a real-time task raises preemption (resident/sched): a word in
/// device memory that cooperating best-effort kernels poll, and a host-mapped mirror of what
/// the loop did with it, so a host scheduler learns of it without a CUDA call. The loop is the
/// only writer of both while it runs.
struct preempt_mirror {
  std::uint64_t raises;         // times the loop raised the word
  std::uint64_t clears;         // times it cleared it (raises - clears: raised now)
  std::uint64_t last_raise_ns;  // %globaltimer of the latest raise
  std::uint64_t last_clear_ns;  // %globaltimer of the latest clear
  std::uint64_t early_raises;   // raises ahead of a due sample (preempt_hook::lead_ns)
  std::uint64_t withdrawn;      // early raises cleared again because no sample came in time
};
struct preempt_hook {
  std::uint32_t* word{nullptr};     // device memory; null: the loop preempts nothing
  preempt_mirror* mirror{nullptr};  // device pointer of host-mapped memory, or null
  /// 0: the handler raises the word the moment it sees a new sample, so the best-effort blocks
  /// leave while it copies the sample in. 1: it raises it once the copy is done, so the copy
  /// does not share the memory system with the blocks leaving (their checkpoint stores).
  std::uint32_t after_input{0};
  /// A periodic sensor (sample every `period_ns`): the handler raises the word `lead_ns` before
  /// the next sample is due, so the best-effort blocks leave while nothing waits for them, not
  /// while the sample is copied in. An early raise that no sample follows by `lead_ns` after
  /// it was due is withdrawn (the word cleared, `preempt_mirror::withdrawn`), so a sensor that
  /// stops or slows holds best-effort work off for at most 2 * lead_ns. 0: raise on arrival.
  /// Resident modes only (their handler polls between samples). The mailbox's handler honours
  /// it; a custom handler calls device::anticipate_preempt in its polling loop and
  /// device::note_sample_due when it takes a sample.
  std::uint64_t period_ns{0};
  std::uint64_t lead_ns{0};
  [[nodiscard]] bool active() const noexcept { return word != nullptr; }
  [[nodiscard]] __host__ __device__ bool anticipates() const noexcept {
    return word != nullptr && lead_ns > 0;
  }
};

/// When the sample after one detected at `detect` is due, for a periodic sensor (preempt_hook
/// `period_ns`, `lead_ns`), given when this one was due (0: nothing expected). A sample on
/// time, early or up to half the lead late anchors the schedule, so it follows the drift
/// between the sensor's clock and the GPU's. A later one, by less than half a period, is a
/// sample the sensor published late (its thread lost the core): the schedule stays, so one late
/// sample does not shorten the next one's lead. Later still (missed samples, a restart): it
/// anchors anew.
__host__ __device__ constexpr std::uint64_t next_sample_due(std::uint64_t detect, std::uint64_t due,
                                                            std::uint64_t period_ns,
                                                            std::uint64_t lead_ns) noexcept {
  if (due == 0 || detect <= due + lead_ns / 2 || detect - due >= period_ns / 2) {
    return detect + period_ns;
  }
  return due + period_ns;
}

/// What an anticipating handler does with the word at time `now` while it waits for a sample
/// due at `due` (0: none expected).
enum class anticipation : std::uint32_t { wait = 0, raise = 1, withdraw = 2 };
__host__ __device__ constexpr anticipation anticipate(std::uint64_t now, std::uint64_t due,
                                                      std::uint64_t lead_ns, bool raised) noexcept {
  if (due == 0 || lead_ns == 0) return anticipation::wait;
  if (now > due + lead_ns) return anticipation::withdraw;  // the sample is late: give BE back
  if (!raised && now + lead_ns >= due) return anticipation::raise;
  return anticipation::wait;
}

/// The loop's own memory layouts (host-mapped control words, device state) are internal:
/// resident/detail/loop_state.hpp. Device code reaches them through resident/app/loop_device.cuh.
struct loop_state;

}  // namespace resident
