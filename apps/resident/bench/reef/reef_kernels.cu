#include "bench/reef/reef_kernels.hpp"

#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"

namespace resident::bench {

namespace {

__global__ void rt_done_kernel(const loop_state* loop, rt_done_stamp* ring, std::uint32_t capacity,
                               const sched::be_trace* trace, const std::uint32_t* rt_crowded,
                               const unsigned long long* rt_spread_ns,
                               const sched::pad_launch_stamps* gemms, int gemm_count,
                               bool clock_probe) {
  const std::uint64_t seq = device::current_sample(loop);
  rt_done_stamp& slot = ring[seq % capacity];
  slot.ns = device::globaltimer_ns();
  if (trace != nullptr) {
    // The BE blocks update these with atomics while this runs: read them as such.
    const auto* t = const_cast<sched::be_trace*>(trace);
    slot.be_running = atomicAdd(const_cast<std::uint32_t*>(&t->running), 0U);
    slot.be_checkpoints = atomicAdd(const_cast<std::uint32_t*>(&t->checkpoints), 0U);
    slot.be_last_begin_ns = atomicAdd(
        reinterpret_cast<unsigned long long*>(const_cast<std::uint64_t*>(&t->last_begin_ns)), 0ULL);
    slot.be_last_end_ns = atomicAdd(
        reinterpret_cast<unsigned long long*>(const_cast<std::uint64_t*>(&t->last_end_ns)), 0ULL);
    slot.be_last_stop_ns = atomicAdd(
        reinterpret_cast<unsigned long long*>(const_cast<std::uint64_t*>(&t->last_stop_ns)), 0ULL);
  }
  // The merged gemm launches' last blocks add to these: read them as atomics too.
  slot.rt_crowded =
      rt_crowded == nullptr ? 0U : atomicAdd(const_cast<std::uint32_t*>(rt_crowded), 0U);
  slot.rt_spread_ns = rt_spread_ns == nullptr
                          ? 0ULL
                          : atomicAdd(const_cast<unsigned long long*>(rt_spread_ns), 0ULL);
  for (int l = 0; l < rt_stamped_gemms; ++l) {
    const bool have = gemms != nullptr && l < gemm_count;
    slot.gemm_start_ns[l] = have ? gemms[l].first_rt_start_ns : 0;
    slot.gemm_end_ns[l] = have ? gemms[l].last_rt_end_ns : 0;
  }
  slot.sm_khz = 0;
  if (clock_probe) {
    // 4 us of %globaltimer (32 ns steps: under 1% error) against the SM's cycle counter.
    const std::uint64_t t0 = device::globaltimer_ns();
    const long long c0 = clock64();
    std::uint64_t t1 = t0;
    while (t1 - t0 < 4000) t1 = device::globaltimer_ns();
    const long long c1 = clock64();
    slot.sm_khz = static_cast<std::uint32_t>(static_cast<double>(c1 - c0) * 1e6 /
                                             static_cast<double>(t1 - t0));
  }
  slot.seq = seq;
}

}  // namespace

void launch_rt_done_stamp(cudaStream_t s, const loop_state* loop, rt_done_stamp* ring,
                          std::uint32_t capacity, const sched::be_trace* trace,
                          const sched::pad_job_view& placement,
                          const sched::pad_launch_stamps* gemms, int gemm_count, bool clock_probe) {
  rt_done_kernel<<<1, 1, 0, s>>>(loop, ring, capacity, trace, placement.rt_crowded,
                                 placement.rt_spread_ns, gemms, gemm_count, clock_probe);
  RESIDENT_CUDA_CHECK_LAUNCH("rt_done_kernel");
}

}  // namespace resident::bench
