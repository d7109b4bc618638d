#pragma once
// Device helpers of bench reef that are not part of the library.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "resident/detail/loop_state.hpp"  // the bench stamps loop telemetry slots directly
#include "resident/sched/padded.hpp"
#include "resident/sched/preemptible.hpp"

namespace resident::bench {

/// RT gemm layers whose launch times a stamp carries.
inline constexpr int rt_stamped_gemms = 3;

/// When the RT op's last compute kernel finished, for one sample (bench reef rt_split_body),
/// and what the BE blocks' trace said then (bench reef be_trace; zeros without it).
struct rt_done_stamp {
  std::uint64_t seq;
  std::uint64_t ns;  // %globaltimer
  std::uint64_t be_last_begin_ns;
  std::uint64_t be_last_end_ns;
  std::uint64_t be_last_stop_ns;
  std::uint32_t be_running;
  std::uint32_t sm_khz;          // the SM clock just after the compute (be_trace), 0 without
  std::uint32_t be_checkpoints;  // BE checkpoints stored so far (cumulative)
  std::uint32_t rt_crowded;      // sched::pad_job_view::rt_crowded so far (cumulative)
  std::uint64_t rt_spread_ns;    // sched::pad_job_view::rt_spread_ns so far (cumulative)
  /// Each RT gemm layer's launch in this sample: first RT block's start, last RT block's end.
  std::uint64_t gemm_start_ns[rt_stamped_gemms];
  std::uint64_t gemm_end_ns[rt_stamped_gemms];
};

/// One thread stamps ring[seq % capacity] = {seq, now, trace, placement} for the loop's current
/// sample: the end of the RT compute, before the output copy and the mailbox's egress. `trace`
/// may be null; `placement` is the RT gemms' pad job (its crowding and spread counters);
/// `gemms` (device, `gemm_count` of them, or null) the RT gemm launches' own stamps. With
/// `clock_probe`, it then counts SM cycles over a few microseconds of %globaltimer to give the SM
/// clock at that moment (the probe lies after the stamp, inside the egress).
void launch_rt_done_stamp(cudaStream_t s, const loop_state* loop, rt_done_stamp* ring,
                          std::uint32_t capacity, const sched::be_trace* trace,
                          const sched::pad_job_view& placement,
                          const sched::pad_launch_stamps* gemms, int gemm_count, bool clock_probe);

}  // namespace resident::bench
