#pragma once
// The contract between a cooperating best-effort (BE) kernel and the host scheduler, usable
// from host and device code. The device half (resident/sched/preemptible.cuh) implements it.
//
// A BE launch covers `blocks` logical blocks. Every logical block either runs to its commit
// point, or returns before it has written anything: it reads the preempt word when it starts
// and, in long blocks, at tile boundaries, and writes its outputs only after the last check.
// A committed block writes the attempt number into its `done` word. The host reads the words
// only after the launch drained (be_runner copies them back on the launch's stream), so it
// knows exactly which blocks ran and can resume the launch from the rest (sched::be_queue
// keeps that bookkeeping). Reading them while the launch runs is outside the contract: a
// commit orders its outputs before its record only at device scope.

#include <cstdint>

#include "resident/sched/stamp_ring_view.hpp"

namespace resident::sched {

/// Every library BE kernel runs blocks of this many threads, so any two of them can share one
/// merged (padded) launch.
inline constexpr int be_block_threads = 256;

/// Diagnostics: when BE blocks were on the GPU, on its own clock. Device memory, zeroed before
/// use; the launches that point at it (of one BE client or several) update it with atomics.
/// Real-time work that reads it (e.g. at the end of its kernels) learns whether BE blocks
/// shared the GPU with it.
struct be_trace {
  /// Logical blocks between a begin() that let them run and their end (commit or stop).
  std::uint32_t running{0};
  /// Blocks begin() turned away because the preempt word was raised: they reached an SM,
  /// read the word and left at once.
  std::uint32_t stops{0};
  std::uint64_t last_begin_ns{0};  // %globaltimer at the latest begin() that let its block run
  std::uint64_t last_end_ns{0};    // %globaltimer at the latest end of such a block
  std::uint64_t last_stop_ns{0};   // %globaltimer at the latest begin() that turned one away
  /// Blocks that stored a checkpoint of their partial state and stopped (the runner's count).
  std::uint32_t checkpoints{0};
  /// The most logical blocks running at once (`running`'s highest value).
  std::uint32_t peak_running{0};
};

/// The device's view of one attempt of one BE launch. Plain data: passed by value to kernels.
struct be_launch_view {
  /// The preempt word (device or host-mapped memory); nonzero: stop. Null: the launch is not
  /// preemptible and runs every block (policies without preemption).
  const std::uint32_t* preempt{nullptr};
  /// Device-memory word shared by every launch of one BE stream, or null. The first block that
  /// stops on the preempt word sets it, and every block of the stream stops on it too: a later
  /// launch must not run on the unfinished output of a preempted one, even when the preempt
  /// word is already clear again by the time it starts. The host clears it, stream-ordered,
  /// before resubmitting.
  std::uint32_t* halt{nullptr};
  /// Spatial preemption: a bitmap (8 words, bit s = SM s, device memory) of the SMs real-time
  /// work runs on, or null. When set, the preempt word stops only blocks on those SMs; the
  /// others run on.
  const std::uint32_t* rt_sms{nullptr};
  /// Device word, zero before the launch, or null. When set, blocks take their logical blocks
  /// from this counter (first_block + taken, up to the grid) instead of from blockIdx, and a
  /// block the word stops takes nothing more: with rt_sms, the blocks on the other SMs finish
  /// the launch.
  std::uint32_t* next{nullptr};
  /// With `next`: a device word, zero before the launch, that counts the blocks that have
  /// left. The last one to leave sets both words back to zero, so the next launch can use them
  /// without a memset in between. Null: whoever launches resets `next` itself.
  std::uint32_t* next_left{nullptr};
  /// At most this many blocks on the grid (0: one per logical block). They loop over the
  /// logical blocks, so a raised word waits only for the blocks on the SMs, not for thousands
  /// of queued short blocks that each start, see the word and leave. With `next` they take the
  /// logical blocks from the counter; without, grid block i runs i, i + max_grid, ... (library
  /// kernels; a block the word stops takes nothing more either way).
  std::int32_t max_grid{0};
  /// Hand-back area of a counter launch (needs `next` and `next_left`), or null. Device words,
  /// zero before the launch: [0] logical blocks finished, [1] logical blocks handed back,
  /// [2] hand-backs taken, then `handback_capacity` entries. A gemm or conv2d block the word
  /// stops part way (spatial preemption: an RT SM) hands its logical block back instead of
  /// leaving a hole, and the blocks on the other SMs take it once the counter has run out: they
  /// leave only when every logical block is finished, so the launch finishes without the host.
  /// (Short blocks of the other library kernels check the word only before they take a logical
  /// block, then run it to the end.) If every block that could take it has left (all were on RT
  /// SMs), the launch's last block sets `halt`, so the stream stops as it would without a
  /// hand-back, and zeroes the words for the next launch. Library kernels honour it; a custom
  /// kernel that ignores it stops its stream through `halt` on every cut (correct, but slower).
  std::uint32_t* handback{nullptr};
  /// Entries of `handback`: at least the launch's grid (each cut ends its CUDA block).
  std::int32_t handback_capacity{0};
  /// Room for real-time work on the RT SMs (needs `rt_sms` and `next`): one word per SM id
  /// (rt_sm_load_words, device memory, zero while no BE block is on the SM), shared by every
  /// BE launch beside the same real-time loop, or null. A block that starts on an RT SM
  /// already holding `rt_sm_blocks` BE blocks leaves at once and takes nothing, so while the
  /// word is clear BE work fills the RT SMs only up to that, and the loop's own blocks (its
  /// handler's relaunch, each kernel's first blocks) always find room there. Without it four BE
  /// blocks fill an SM's registers, and a handler relaunched after its end marker can wait
  /// for a whole BE kernel.
  std::uint32_t* rt_sm_load{nullptr};
  /// BE blocks an RT SM may hold at once (with `rt_sm_load`): at least 1.
  std::uint32_t rt_sm_blocks{0};
  /// Logical blocks handed back (any attempt). Null: not counted.
  std::uint32_t* handbacks{nullptr};
  /// One word per logical block (device or host-mapped memory): 0 until the block commits,
  /// then the attempt that committed it. Read it only after the launch drained. Required.
  std::uint32_t* done{nullptr};
  /// One word per logical block: commits of that block over every attempt (evidence that no
  /// block of a non-idempotent kernel ran twice). Null: not counted. Device memory is the fast
  /// choice: these are atomics, and atomics on host-mapped memory cross PCIe one at a time.
  std::uint32_t* runs{nullptr};
  /// Commits, in a skip_done launch, of a block whose runs word was already set: a block of a
  /// non-idempotent kernel that ran twice (must stay 0). Needs `runs`. Null: not counted.
  std::uint32_t* repeats{nullptr};
  /// Blocks that returned because of the preempt word (any attempt). Null: not counted.
  /// Device memory, for the reason above: hundreds of blocks leave at once.
  std::uint32_t* exits{nullptr};
  /// Checkpoints (GEMM-shaped kernels): `saved_floats` floats per logical block of device
  /// memory, or null. A block the word stops part-way through its reduction stores its partial
  /// accumulators there and the K-steps they cover in `progress`; a later attempt of the same
  /// logical block loads them and goes on from that step. The outputs are still written only
  /// at the commit, so a checkpoint never makes a block visible twice, and a preempted block
  /// loses at most the step it was in. Null: a stopped block starts over.
  float* saved{nullptr};
  /// One word per logical block (device memory, zero before the first attempt): K-steps held
  /// in `saved` (0: none). Required with `saved`.
  std::uint32_t* progress{nullptr};
  /// Checkpoints written (any attempt). Null: not counted.
  std::uint32_t* saves{nullptr};
  std::int32_t saved_floats{0};  // floats of state per logical block in `saved`
  /// A stopped block keeps its sums only when this attempt added at least this many K-steps
  /// (fewer: it leaves at once, dropping them). Trades the work a preemption throws away
  /// against how long cut blocks take to leave. 0 counts as 1.
  std::uint32_t min_saved_steps{1};
  std::uint32_t attempt{1};     // 1 on the first submission, +1 on every resume
  std::int32_t first_block{0};  // grid block 0 runs logical block first_block
  std::int32_t blocks{0};       // logical blocks of the launch (its full grid)
  /// 1: a block whose done word is already set returns at once (exact resume of a
  /// non-idempotent launch: the done words are the skip set). 0: only first_block skips
  /// (idempotent launches, cheaper: no extra load per block). A first attempt has nothing done
  /// yet and may leave it 0 either way.
  std::uint32_t skip_done{0};
  /// Where the blocks that run record themselves (diagnostics), or null: not traced.
  be_trace* trace{nullptr};
  /// Diagnostics, with `trace`: a stamp whenever trace->running leaves 0 (BE blocks came onto
  /// the GPU; the stamp's bit 0 set) and whenever it returns to 0 (the last running block left;
  /// bit 0 clear). With the real-time loop's raise stamps it gives each raise's preemption
  /// latency: how long BE blocks stayed on the GPU after it. Inactive: not recorded.
  stamp_ring_view activity{};
};

/// Words of a be_launch_view::rt_sm_load array: one per SM id the rt_sms bitmap can mark.
inline constexpr std::int32_t rt_sm_load_words = 256;

/// Words of a be_launch_view::handback area with room for `capacity` entries.
inline constexpr std::int32_t handback_header_words = 3;
[[nodiscard]] constexpr std::int64_t handback_words(std::int32_t capacity) noexcept {
  return handback_header_words + static_cast<std::int64_t>(capacity);
}

/// Blocks a launch of this attempt puts on the grid.
[[nodiscard]] constexpr std::int32_t grid_blocks(const be_launch_view& v) noexcept {
  return v.blocks > v.first_block ? v.blocks - v.first_block : 0;
}

}  // namespace resident::sched
