#pragma once
// Dynamic kernel padding (REEF) on the GPU: a real-time (RT) kernel launched together with
// best-effort (BE) blocks that fill the block slots it leaves idle, as ONE launch. Every block
// of the merged grid takes its work from an atomic counter, RT work first: the first rt_blocks
// takers run the RT kernel's logical blocks, the rest run BE blocks taken from a pad job, up
// to the launch's budget. Nothing assumes that blockIdx maps to an SM, or that blocks start in
// index order.
//
// The pad job is a BE kernel whose logical blocks are handed out round after round by a
// device cursor (block = cursor % blocks): every take runs exactly one block, and the per-block
// run counts show it. Padding suits idempotent BE kernels (the job's blocks are re-run on the
// next round); the budget comes from sched::select_padding and measured profiles.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/sched/be_kernels.hpp"

namespace resident::sched {

/// Device-side state of one pad job and of the merged launches that feed on it.
struct pad_job_view {
  unsigned long long* cursor{nullptr};  // BE blocks handed out so far, over every launch
  /// The merged launch's own words (work counters, SM bitmaps), reset by its last block.
  std::uint32_t* launch_state{nullptr};
  std::uint32_t* done{nullptr};     // be_launch_view::done of the BE blocks (scratch)
  std::uint32_t* runs{nullptr};     // commits per BE block
  std::uint32_t* rt_done{nullptr};  // be_launch_view::done of the RT blocks (scratch)
  /// RT items a pad block took after waiting place_wait_ns, over every launch: the launch
  /// reached fewer SMs than it has RT blocks when they were dispatched.
  std::uint32_t* rt_late{nullptr};
  /// Two words: merged launches whose RT blocks ran on fewer SMs than there are RT blocks (two
  /// or more on one SM), and merged launches in all (both over every launch). Null when the
  /// job does not record placement (then rt_spread_ns is null too).
  std::uint32_t* rt_crowded{nullptr};
  /// Over every launch, the sum of (last RT block's start - first RT block's start), in ns
  /// (%globaltimer): how long an RT kernel waited for SMs after its first block started.
  unsigned long long* rt_spread_ns{nullptr};
  std::int32_t be_blocks{0};
  std::int32_t rt_capacity{0};  // rt_done words
};

/// Where the RT blocks of a pad job's merged launches landed, summed over every launch so far.
struct pad_placement {
  std::uint32_t crowded_launches{0};  // launches with two or more RT blocks on one SM
  std::uint32_t launches{0};          // merged launches that finished
  std::uint64_t spread_ns{0};         // sum of (last RT block start - first RT block start)
};

/// The pad job: owns the device words above (allocated here, never during a run).
class pad_job {
 public:
  /// `be_blocks`: the BE kernel's logical blocks; `rt_capacity`: the most RT blocks a merged
  /// launch will carry. invalid_argument when either is <= 0. `record_placement`: every merged
  /// launch records where its RT blocks landed (placement()); it costs each RT block two or
  /// three atomics and the launch's last block about ten more, on the RT kernel's own time.
  pad_job(std::int32_t be_blocks, std::int32_t rt_capacity, bool record_placement = true);

  [[nodiscard]] const pad_job_view& view() const noexcept { return _view; }
  /// BE blocks run so far (synchronous read; call with the launches' stream drained).
  [[nodiscard]] std::uint64_t taken() const;
  /// Commits per BE block (synchronous read).
  [[nodiscard]] std::vector<std::uint32_t> runs() const;
  /// pad_job_view::rt_late so far (synchronous read).
  [[nodiscard]] std::uint32_t rt_late_takes() const;
  /// pad_job_view::rt_crowded (both words) and rt_spread_ns so far (synchronous read); zeros
  /// when the job does not record placement.
  [[nodiscard]] pad_placement placement() const;
  /// Whether the job was made with record_placement.
  [[nodiscard]] bool records_placement() const noexcept { return _view.rt_crowded != nullptr; }

 private:
  device_buffer _mem;
  pad_job_view _view;
};

/// How much BE work one merged launch may carry.
struct pad_limits {
  std::int32_t slots{0};    // extra CUDA blocks beside the RT kernel's
  std::uint32_t budget{0};  // BE blocks the launch may run in all
  std::uint32_t rounds{0};  // BE blocks one pad block may run one after another (0: no cap)
  /// How long a pad block waits for the RT blocks to be placed on SMs of their own before it
  /// takes RT work that is left (nanoseconds).
  std::uint32_t place_wait_ns{20'000};
};

/// When one merged launch's RT blocks ran (%globaltimer, ns), written by its last block.
struct pad_launch_stamps {
  std::uint64_t first_rt_start_ns{0};
  std::uint64_t last_rt_start_ns{0};
  std::uint64_t last_rt_end_ns{0};
};

/// One merged launch: RT gemm `rt` (all its blocks, never preempted) padded with at most
/// `limits.budget` blocks of the pad job's BE gemm `be`. RT work goes to the first block that
/// arrives on each SM, so no two RT blocks share an SM; a pad block waits until every RT block
/// is placed, then leaves at once if it shares an SM with one, so BE blocks only fill SMs the
/// RT kernel left idle. If the launch reaches fewer SMs than it has RT blocks (other work holds
/// them), a pad block that waited limits.place_wait_ns takes the RT work left, so the launch
/// always ends (counted in pad_job::rt_late_takes). With budget == 0 the slots run no BE work
/// and only spread the RT blocks one per SM (placement_only). limits.slots == 0 launches the RT
/// kernel alone through the same kernel: then every block takes RT work at once, even two on
/// one SM (other work holds the rest), since no other block could take it sooner.
/// `start_stamp` (device memory, or null): the first RT block to start writes %globaltimer there if
/// it still holds 0 (e.g. a loop's body_start stamp). `stamps` (device memory, or null): the
/// launch's last block writes when its RT blocks started and ended there. `d`: how the launch
/// follows the previous kernel on `s` (launch_dependency; programmatic between the kernels of
/// one RT model).
void launch_padded_gemm(cudaStream_t s, const gemm_args& rt, const gemm_args& be,
                        const pad_job& job, const pad_limits& limits,
                        unsigned long long* start_stamp = nullptr,
                        pad_launch_stamps* stamps = nullptr,
                        launch_dependency d = launch_dependency::full);

/// As launch_padded_gemm, with a conv2d (implicit GEMM) pad job.
void launch_padded_gemm_conv(cudaStream_t s, const gemm_args& rt, const conv2d_args& be,
                             const pad_job& job, const pad_limits& limits,
                             unsigned long long* start_stamp = nullptr,
                             pad_launch_stamps* stamps = nullptr,
                             launch_dependency d = launch_dependency::full);

/// Merged blocks of launch_padded_gemm that fit one SM at once (its occupancy).
[[nodiscard]] int padded_gemm_blocks_per_sm();

/// Limits that pad an RT gemm of `rt_blocks` blocks with no BE work, only with enough extra
/// blocks that its RT blocks each get an SM of their own: blocks per SM * rt_blocks slots,
/// budget 0. An RT kernel launched while other work still leaves the GPU (preempted BE
/// blocks draining) would otherwise get two or more blocks on the first SMs to free up, and
/// each of them runs slower (bench reef: rt_placement).
[[nodiscard]] pad_limits placement_only(std::int32_t rt_blocks,
                                        std::uint32_t place_wait_ns = 20'000);

}  // namespace resident::sched
