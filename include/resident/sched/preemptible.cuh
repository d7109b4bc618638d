#pragma once
// Device half of the preemptible-kernel contract (resident/sched/preemptible.hpp). Include
// only from .cu files.
//
//   __global__ void my_kernel(sched::be_launch_view v, my_args a) {
//     sched::be_block blk(v, sched::be_block::grid_index(v));
//     if (!blk.begin()) return;                 // skipped or preempted: nothing written
//     for (int t = 0; t < tiles; ++t) {
//       if (blk.preempted()) return;           // block-uniform; still nothing written
//                                              // (or checkpoint first: see checkpoint())
//       ... accumulate in registers / shared memory ...
//     }
//     ... write outputs ...
//     blk.commit();                             // recorded: never runs again on resume
//   }
//
// Every member is block-uniform and contains resident::device::sync_block(): call them from all
// threads of the block, never from divergent code.

#include <cuda/atomic>

#include <cstdint>

#include "resident/cuda/block_sync.cuh"
#include "resident/sched/preemptible.hpp"
#include "resident/sched/stamp_ring.cuh"

namespace resident::sched {

namespace detail {

/// The SM the calling thread runs on (the same for its block's whole life), as an index into
/// the 256-SM bitmaps and per-SM arrays of be_launch_view (rt_sms, rt_sm_load).
__device__ inline std::uint32_t current_sm() {
  std::uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm & static_cast<std::uint32_t>(rt_sm_load_words - 1);
}

/// Whether `bitmap` (bit s of word s / 32, fixed for the launch: read through the read-only
/// cache) marks SM `sm` (< rt_sm_load_words).
__device__ inline bool sm_marked(const std::uint32_t* bitmap, std::uint32_t sm) {
  return ((__ldg(bitmap + (sm >> 5)) >> (sm & 31U)) & 1U) != 0U;
}

}  // namespace detail

class be_block {
 public:
  /// The logical block a plain (non-merged) launch runs in this CUDA block.
  __device__ static std::int32_t grid_index(const be_launch_view& v) {
    return v.first_block + static_cast<std::int32_t>(blockIdx.x);
  }

  /// `hands_back`: the caller gives the logical block back to its launch if the word stops it
  /// (be_launch_view::handback), so a stop must not halt the stream.
  __device__ be_block(const be_launch_view& v, std::int32_t logical, bool hands_back = false)
      : _v(v), _index(logical), _hands_back(hands_back) {}
  /// A block that ran leaves the trace here, however it ends (commit, stop or plain return).
  __device__ ~be_block() {
    if (_traced) {
      const std::uint32_t before = atomicSub(&_v.trace->running, 1U);
      if (before == 1U && _v.activity.head != nullptr) push_stamp(_v.activity, now_ns() & ~1ULL);
      atomicMax(reinterpret_cast<unsigned long long*>(&_v.trace->last_end_ns), now_ns());
    }
  }
  be_block(const be_block&) = delete;
  be_block& operator=(const be_block&) = delete;

  [[nodiscard]] __device__ std::int32_t index() const { return _index; }

  /// Whether this block must run: false when it is outside the grid, already committed (a
  /// non-idempotent resume) or the preempt word is raised.
  [[nodiscard]] __device__ bool begin() {
    __shared__ std::uint32_t verdict;
    if (threadIdx.x == 0) {
      std::uint32_t run = _index >= 0 && _index < _v.blocks ? 1U : 0U;
      // The word first: a block that must leave does so without touching the done word, which
      // may live across PCIe.
      if (run != 0U && raised()) {
        run = 2U;
        note_exit();
        if (_v.trace != nullptr) {
          atomicAdd(&_v.trace->stops, 1U);
          atomicMax(reinterpret_cast<unsigned long long*>(&_v.trace->last_stop_ns), now_ns());
        }
      }
      if (run != 0U && _v.skip_done != 0U && load(_v.done + _index) != 0U) run = 0U;
      if (run == 1U && _v.trace != nullptr) {
        const std::uint32_t before = atomicAdd(&_v.trace->running, 1U);
        atomicMax(&_v.trace->peak_running, before + 1U);
        if (before == 0U && _v.activity.head != nullptr) push_stamp(_v.activity, now_ns() | 1ULL);
        atomicMax(reinterpret_cast<unsigned long long*>(&_v.trace->last_begin_ns), now_ns());
        _traced = true;  // thread 0 only: it alone updates the trace
      }
      verdict = run;
    }
    resident::device::sync_block();
    const std::uint32_t got = verdict;
    resident::device::sync_block();  // `verdict` may be reused by the next call
    if (got == 2U) _stopped = true;
    return got == 1U;
  }

  /// Whether the block stopped on the preempt word (in begin() or preempted()): it must
  /// return without taking more work.
  [[nodiscard]] __device__ bool stopped() const { return _stopped; }

  /// Block-uniform: would the word stop a block here now? (Before taking work from a
  /// counter; takes no index and counts no exit.)
  [[nodiscard]] __device__ bool stop_requested() {
    if (_v.preempt == nullptr) return false;
    __shared__ std::uint32_t verdict;
    if (threadIdx.x == 0) verdict = raised() ? 1U : 0U;
    resident::device::sync_block();
    const bool stop = verdict != 0U;
    resident::device::sync_block();
    return stop;
  }

  /// Tile-boundary check: true when the word is raised (the block must return without
  /// writing its outputs).
  [[nodiscard]] __device__ bool preempted() {
    if (_v.preempt == nullptr) return false;
    __shared__ std::uint32_t verdict;
    if (threadIdx.x == 0) {
      verdict = raised() ? 1U : 0U;
      if (verdict != 0U) note_exit();
    }
    resident::device::sync_block();
    const bool stop = verdict != 0U;
    resident::device::sync_block();
    if (stop) _stopped = true;
    return stop;
  }

  /// Whether a block that stops part-way may checkpoint its partial state (the launch gave a
  /// `saved` area).
  [[nodiscard]] __device__ bool can_checkpoint() const { return _v.saved != nullptr; }

  /// Whether a block that added `steps` K-steps in this attempt should keep them.
  [[nodiscard]] __device__ bool worth_saving(std::uint32_t steps) const {
    return _v.saved != nullptr && steps > 0U && steps >= _v.min_saved_steps;
  }

  /// K-steps an earlier attempt of this logical block checkpointed (0: none, or no `saved`
  /// area). Read after begin() returned true; the same value in every thread.
  [[nodiscard]] __device__ std::uint32_t saved_steps() const {
    return _v.saved == nullptr ? 0U : load(_v.progress + _index);
  }

  /// This block's checkpoint area: `saved_floats` floats (only when can_checkpoint()).
  [[nodiscard]] __device__ float* saved_state() const {
    return _v.saved + static_cast<std::int64_t>(_index) * _v.saved_floats;
  }

  /// Block-uniform, after every thread stored its part of the state in saved_state(): the
  /// checkpoint now covers `steps` K-steps. The caller then returns (it stopped).
  __device__ void checkpoint(std::uint32_t steps) {
    resident::device::sync_block();  // every thread's part is stored before the record
    if (threadIdx.x == 0) {
      __threadfence();
      store(_v.progress + _index, steps);
      if (_v.saves != nullptr) atomicAdd(_v.saves, 1U);
      if (_v.trace != nullptr) atomicAdd(&_v.trace->checkpoints, 1U);
    }
  }

  /// After every output write of the block: records the block as committed by this attempt.
  __device__ void commit() {
    resident::device::sync_block();  // every thread's writes are issued before the record
    if (threadIdx.x == 0) {
      // Outputs before the record for any reader on the device. The host reads the records only
      // after the launch has drained, which makes everything the launch wrote visible, so no
      // system-scope fence (a round trip over PCIe, on every block's commit) is needed.
      __threadfence();
      store(_v.done + _index, _v.attempt);
      if (_v.runs != nullptr) {
        const std::uint32_t before = atomicAdd(_v.runs + _index, 1U);
        if (before != 0U && _v.skip_done != 0U && _v.repeats != nullptr) {
          atomicAdd(_v.repeats, 1U);
        }
      }
    }
  }

 private:
  __device__ static unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  __device__ bool raised() const {
    if (_v.preempt == nullptr) return false;
    if (_v.halt != nullptr && load(_v.halt) != 0U) return true;
    // Spatial: the word stops only the RT SMs, so a block elsewhere never reads it. The bitmap
    // is fixed for the launch and read through the read-only cache: the hundreds of BE blocks
    // that check at every K-step while the RT loop runs beside them add one L2 read each (the
    // halt word), not three.
    if (_v.rt_sms != nullptr && !on_rt_sm()) return false;
    return load(_v.preempt) != 0U;
  }
  __device__ bool on_rt_sm() const { return detail::sm_marked(_v.rt_sms, detail::current_sm()); }
  __device__ void note_exit() const {
    if (_v.halt != nullptr && !_hands_back) store(_v.halt, 1U);
    if (_v.exits != nullptr) atomicAdd(_v.exits, 1U);
  }
  __device__ static std::uint32_t load(const std::uint32_t* p) {
    return cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system>(
               const_cast<std::uint32_t&>(*p))
        .load(cuda::memory_order_relaxed);
  }
  __device__ static void store(std::uint32_t* p, std::uint32_t value) {
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system>(*p).store(
        value, cuda::memory_order_relaxed);
  }

  const be_launch_view& _v;
  std::int32_t _index;
  bool _hands_back{false};
  bool _stopped{false};
  bool _traced{false};
};

}  // namespace resident::sched
