#pragma once
// The host side of reset-based preemption (REEF) for one best-effort (BE) stream. BE kernels
// cooperate: each block reads a device-visible preempt word when it starts and returns at once
// when it is raised, and each launch records which of its blocks ran to the end. This queue
// decides what to launch next, and after a preemption which blocks a launch may skip when it is
// launched again, so that a resumed kernel neither loses work nor (unless it is idempotent)
// runs a block twice.
//
// No CUDA here: the caller owns the device (the preempt word, the completion records, the
// launches) and tells the queue what happened. The queue checks that the story adds up: a
// block the device reports twice for a non-idempotent kernel is a std::logic_error, so the
// device's own record proves exactness.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace resident::sched {

/// Assigned by the queue at enqueue, increasing from 0, never reused.
using launch_id = std::uint64_t;

/// What the caller launches: blocks of [0, blocks) except those in `skip`.
struct submission {
  launch_id id{};
  std::string name;
  std::int64_t blocks{};  // the launch's grid, the same on every attempt
  /// Sorted block indices that must not run on this attempt. Empty on the first attempt. A
  /// non-idempotent launch skips exactly its completed blocks; an idempotent one only the
  /// contiguous completed prefix [0, first_block), so blocks it finished after a gap re-run.
  std::vector<std::int64_t> skip;
  /// The first block that must run: every block below it is in `skip`, so the device may
  /// start its grid here and consult `skip` only above it.
  std::int64_t first_block{};
  int attempt{};  // 1 for the first submission, + 1 on every resume
};

struct be_counters {
  std::uint64_t enqueued{};
  std::uint64_t submitted{};           // launch attempts, resumes included
  std::uint64_t completed{};           // launches that finished all their blocks
  std::uint64_t preempted_launches{};  // attempts cut short with blocks left to run
  std::uint64_t resumed_launches{};    // submissions with attempt > 1
  std::uint64_t blocks_completed{};    // distinct blocks, each counted once per launch
  /// Reports of a block that had already completed. Only an idempotent launch may re-run a
  /// block, so for non-idempotent kernels this stays 0 (a re-run is a logic_error instead).
  std::uint64_t blocks_rerun{};
  std::uint64_t in_flight{};  // submitted, not yet complete or exited
  std::uint64_t pending{};    // waiting to be submitted: never submitted, or set aside
};

/// One best-effort stream. Not thread-safe: one scheduler thread drives it.
///
/// Life of a launch: enqueue -> (next_submission -> in flight -> complete, or
/// report_blocks + preempted_exit -> set aside -> resume -> next_submission ...).
///
/// Submission is FIFO by id, and a set-aside launch goes back before every launch that was
/// never submitted, in id order among set-aside ones: after a resume the first unfinished
/// kernel runs first, from its first unfinished block.
class be_queue {
 public:
  /// `window`: how many launches may be in flight at once (>= 1). A small window bounds how
  /// much BE work the device must drain on a preemption. invalid_argument when 0.
  explicit be_queue(std::size_t window = 2);

  /// Queues a launch of `blocks` blocks of kernel `name`. invalid_argument, naming the kernel,
  /// when `name` is empty or `blocks` <= 0.
  launch_id enqueue(std::string name, std::int64_t blocks, bool idempotent);

  /// The next launch to put on the device, now in flight; nullopt while preempted, when the
  /// window is full or when nothing is pending.
  [[nodiscard]] std::optional<submission> next_submission();

  /// The device's completion record for the latest attempt of launch `id`: the blocks that ran
  /// to the end. Call it before preempted_exit; it may also arrive after complete. logic_error
  /// "block B of kernel K (launch N) completed twice" for a block listed twice in the record,
  /// a block this attempt was told to skip, or, for a non-idempotent kernel, any block already
  /// reported on an earlier attempt. invalid_argument for an unknown id or an index outside
  /// the grid; logic_error for a launch never submitted.
  void report_blocks(launch_id id, const std::vector<std::int64_t>& completed_blocks);

  /// Launch `id` ran every block it was asked to and left the device. It does not mark blocks
  /// completed: only report_blocks does, so exactness is checked against the device's record,
  /// not the host's assumption. logic_error when `id` is not in flight.
  void complete(launch_id id);

  /// Raises the preempt state: nothing is submitted until resume. Returns the launches in
  /// flight, in id order; the caller raises the device preempt word, and each of them must
  /// then end in complete (it finished first) or report_blocks + preempted_exit. logic_error
  /// when already preempted.
  std::vector<launch_id> preempt();

  /// In-flight launch `id` exited early because of the preempt word. When its reports cover
  /// every block it is complete; otherwise it is set aside to resume with the rest.
  /// logic_error when not preempted or `id` is not in flight.
  void preempted_exit(launch_id id);

  /// Clears the preempt state. logic_error when not preempted, or when a launch is still in
  /// flight (every preempted launch must have drained, or the resume order would be a guess).
  void resume();

  [[nodiscard]] bool preempted() const noexcept { return _preempted; }
  [[nodiscard]] std::size_t window() const noexcept { return _window; }
  [[nodiscard]] const be_counters& counters() const noexcept { return _counters; }
  /// Whether launch `id` has finished (complete, or a preempted exit with nothing left).
  [[nodiscard]] bool finished(launch_id id) const;
  /// Blocks of launch `id` not yet reported completed.
  [[nodiscard]] std::int64_t remaining_blocks(launch_id id) const;

 private:
  enum class state { pending, in_flight, finished };

  struct launch {
    std::string name;
    std::int64_t blocks{};
    bool idempotent{};
    state where{state::pending};
    int attempts{};
    std::vector<bool> done;  // by block index, from the device's reports
    std::int64_t done_count{};
    /// The latest attempt's first_block: an idempotent launch reporting a block below it ran
    /// a block it was told to skip.
    std::int64_t first_block{};
    std::vector<std::int64_t> skip;  // the latest attempt's, for the same check
  };

  launch& at(launch_id id, const char* caller);
  [[nodiscard]] const launch& at(launch_id id, const char* caller) const;

  std::size_t _window;
  bool _preempted{false};
  std::vector<launch> _launches;  // indexed by id
  /// Ready to submit, smallest id first. One ordered set serves both orders the scheduler
  /// needs: a set-aside launch was submitted before every never-submitted one, so its id is
  /// smaller and it sorts to the front on its own.
  std::set<launch_id> _ready;
  /// At most `_window` entries: preempt and resume need not scan every launch ever enqueued
  /// (all are kept, for late reports).
  std::set<launch_id> _in_flight;
  be_counters _counters;
};

}  // namespace resident::sched
