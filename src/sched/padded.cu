// The merged RT + BE launch of dynamic kernel padding (see resident/sched/padded.hpp).

#include <algorithm>
#include <stdexcept>
#include <string>

#include <cuda/atomic>

#include "ops/launch.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"
#include "resident/sched/be_kernels.cuh"
#include "resident/sched/padded.hpp"
#include "resident/sched/preemptible.cuh"

namespace resident::sched {

namespace {

enum : int {
  rt_next = 0,       // RT work items handed out
  be_taken = 1,      // BE blocks handed out by this launch
  blocks_done = 2,   // blocks finished (the last one resets the state)
  rt_placed = 3,     // RT blocks that have started
  claimed = 4,       // 8 words: SMs on which some block has tried for RT work
  rt_here = 12,      // 8 words: SMs an RT block runs on
  first_rt_ns = 20,  // 2 words (one 8-byte aligned u64): the first RT block's start
  last_rt_ns = 22,   // 2 words: the last RT block's start
  rt_end_ns = 24,    // 2 words: the last RT block's end
  state_words = 26
};

__device__ inline std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// The last block out of a merged launch: the placement record and the stamps (diagnostics),
/// then the launch state reset for the next launch (a captured graph replays the kernel with the
/// same arguments).
__device__ __forceinline__ void close_launch(std::uint32_t* state, const pad_job_view& job,
                                             std::uint32_t rt_count, bool record, bool stamp_starts,
                                             pad_launch_stamps* stamps) {
  const auto word = [state](int at) { return reinterpret_cast<unsigned long long*>(state + at); };
  const unsigned long long first = stamp_starts ? atomicAdd(word(first_rt_ns), 0ULL) : 0ULL;
  const unsigned long long last = stamp_starts ? atomicAdd(word(last_rt_ns), 0ULL) : 0ULL;
  if (record) {
    // Where the RT blocks landed: how many SMs, and how far apart their starts were.
    std::uint32_t sms = 0;
    for (int i = 0; i < 8; ++i) sms += __popc(atomicAdd(state + rt_here + i, 0U));
    if (sms < rt_count) atomicAdd(job.rt_crowded, 1U);
    atomicAdd(job.rt_crowded + 1, 1U);  // launches
    if (first != 0ULL && last >= first) atomicAdd(job.rt_spread_ns, last - first);
  }
  if (stamps != nullptr) {
    stamps->first_rt_start_ns = first;
    stamps->last_rt_start_ns = last;
    stamps->last_rt_end_ns = atomicAdd(word(rt_end_ns), 0ULL);
  }
  for (int i = 0; i < state_words; ++i) state[i] = 0U;
  __threadfence();
}

template <class RtArgs, class BeArgs, void (*RtBody)(const RtArgs&, be_block&),
          void (*BeBody)(const BeArgs&, be_block&)>
__global__ void __launch_bounds__(be_block_threads)
    padded_kernel(RtArgs rt, std::int32_t rt_blocks, BeArgs be, pad_job_view job,
                  std::uint32_t budget, std::uint32_t rounds, std::uint64_t place_wait_ns,
                  unsigned long long* start_stamp, pad_launch_stamps* stamps) {
  // A programmatic launch (launch_dependency) lets the next kernel be scheduled now and waits
  // for the previous one here, before anything is read: the launch state the previous merged
  // launch resets included. Both are no-ops otherwise.
  ops::detail::begin_dependent_kernel();
  __shared__ std::uint32_t role;  // RT item index, or pad_role / skip_role
  __shared__ unsigned long long be_index;
  constexpr std::uint32_t pad_role = 0xFFFFFFFEU;
  constexpr std::uint32_t skip_role = 0xFFFFFFFFU;
  std::uint32_t* state = job.launch_state;
  const auto rt_count = static_cast<std::uint32_t>(rt_blocks);
  // The placement record and the stamps are diagnostics: without them the RT blocks skip the
  // start and end stamps and the last block skips the record (RT blocks are on the loop's
  // critical path).
  const bool record = job.rt_crowded != nullptr;
  const bool stamp_starts = record || stamps != nullptr;
  if (threadIdx.x == 0) {
    // RT work goes to the first block on each SM, so no two RT blocks share an SM (nothing
    // assumes which blockIdx lands where). The others pad.
    const std::uint32_t sm = detail::current_sm();
    const std::uint32_t bit = 1U << (sm & 31U);
    std::uint32_t r = pad_role;
    if (gridDim.x == rt_count) {
      // No pad slots: every block is an RT block. One that lands on an SM another RT block
      // holds (other work fills the rest) runs there now; waiting would only delay it.
      r = atomicAdd(state + rt_next, 1U);
    } else if ((atomicOr(state + claimed + (sm >> 5), bit) & bit) == 0U) {
      const std::uint32_t w = atomicAdd(state + rt_next, 1U);
      if (w < rt_count) r = w;
    }
    if (r == pad_role) {
      // Wait until every RT item is placed; if the SMs this launch reaches are too few, take
      // what is left (progress never depends on an SM that may not come).
      cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device> placed(state[rt_placed]);
      const std::uint64_t start = now_ns();
      while (placed.load(cuda::memory_order_acquire) < rt_count) {
        if (now_ns() - start > place_wait_ns) {
          const std::uint32_t w = atomicAdd(state + rt_next, 1U);
          if (w < rt_count) {
            r = w;
            atomicAdd(job.rt_late, 1U);
          }
          break;
        }
        __nanosleep(64);
      }
    }
    if (r < rt_count) {
      const unsigned long long t = now_ns();
      if (start_stamp != nullptr) atomicCAS(start_stamp, 0ULL, t);
      if (stamp_starts) {
        auto* first = reinterpret_cast<unsigned long long*>(state + first_rt_ns);
        if (atomicCAS(first, 0ULL, t) != 0ULL) atomicMin(first, t);
        atomicMax(reinterpret_cast<unsigned long long*>(state + last_rt_ns), t);
      }
      atomicOr(state + rt_here + (sm >> 5), bit);
      __threadfence();
      atomicAdd(state + rt_placed, 1U);
    } else {
      cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device> placed(state[rt_placed]);
      while (placed.load(cuda::memory_order_acquire) < rt_count) __nanosleep(64);
      const std::uint32_t here =
          cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(state[rt_here + (sm >> 5)])
              .load(cuda::memory_order_relaxed);
      r = (here & bit) != 0U ? skip_role : pad_role;  // keep off the RT blocks' SMs
    }
    role = r;
  }
  resident::device::sync_block();
  const std::uint32_t r = role;
  resident::device::sync_block();
  if (r < rt_count) {
    be_launch_view v;
    v.done = job.rt_done;
    v.blocks = rt_blocks;
    be_block blk(v, static_cast<std::int32_t>(r));
    if (blk.begin()) RtBody(rt, blk);
  } else if (r == pad_role) {
    // BE blocks one after another while the launch's budget (and this block's rounds) last.
    for (std::uint32_t round = 0; rounds == 0 || round < rounds; ++round) {
      if (threadIdx.x == 0) {
        be_index = atomicAdd(state + be_taken, 1U) < budget ? atomicAdd(job.cursor, 1ULL) : ~0ULL;
      }
      resident::device::sync_block();
      const unsigned long long taken = be_index;
      resident::device::sync_block();
      if (taken == ~0ULL) break;
      be_launch_view v;
      v.done = job.done;
      v.runs = job.runs;
      v.blocks = job.be_blocks;
      be_block blk(
          v, static_cast<std::int32_t>(taken % static_cast<unsigned long long>(job.be_blocks)));
      if (blk.begin()) BeBody(be, blk);
    }
  }
  resident::device::sync_block();  // the whole block's work is done
  if (threadIdx.x == 0 && r < rt_count && stamps != nullptr) {
    atomicMax(reinterpret_cast<unsigned long long*>(state + rt_end_ns),
              static_cast<unsigned long long>(now_ns()));
  }
  // The last block out resets the launch's state for the next launch (a captured graph
  // replays this kernel with the same arguments).
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(state + blocks_done, 1U) == gridDim.x - 1) {
      close_launch(state, job, rt_count, record, stamp_starts, stamps);
    }
  }
}

template <class BeArgs, void (*BeBody)(const BeArgs&, be_block&)>
void launch_merged(cudaStream_t s, const gemm_args& rt, const BeArgs& be, const pad_job& job,
                   const pad_limits& limits, unsigned long long* start_stamp,
                   pad_launch_stamps* stamps, launch_dependency d, const char* name) {
  const std::int32_t rt_blocks = gemm_blocks(rt);
  if (rt_blocks > job.view().rt_capacity) {
    throw std::invalid_argument(std::string(name) + ": the RT gemm has " +
                                std::to_string(rt_blocks) + " blocks, the pad job holds " +
                                std::to_string(job.view().rt_capacity));
  }
  if (limits.slots < 0) throw std::invalid_argument(std::string(name) + ": slots < 0");
  // With budget 0 the slots run no BE work: they only spread the RT blocks one per SM.
  const std::int32_t slots = limits.slots;
  ops::detail::launch_kernel(
      name, padded_kernel<gemm_args, BeArgs, gemm_block<gemm_loads::prefetched>, BeBody>,
      dim3(static_cast<unsigned>(rt_blocks + slots)), dim3(be_block_threads), s,
      d == launch_dependency::programmatic, rt, rt_blocks, be, job.view(), limits.budget,
      limits.rounds, limits.place_wait_ns, start_stamp, stamps);
}

}  // namespace

pad_job::pad_job(std::int32_t be_blocks, std::int32_t rt_capacity, bool record_placement) {
  if (be_blocks <= 0 || rt_capacity <= 0) {
    throw std::invalid_argument("pad_job: be_blocks (" + std::to_string(be_blocks) +
                                ") and rt_capacity (" + std::to_string(rt_capacity) +
                                ") must be positive");
  }
  const std::size_t words = state_words + 2 * static_cast<std::size_t>(be_blocks) +
                            static_cast<std::size_t>(rt_capacity) + 3;
  // Two 8-byte counters, then the words (launch_state stays 8-byte aligned for its stamps).
  _mem = device_buffer(2 * sizeof(unsigned long long) + words * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(_mem.data(), 0, _mem.size()));
  auto* base = _mem.data_as<unsigned char>();
  _view.cursor = reinterpret_cast<unsigned long long*>(base);
  _view.rt_spread_ns = _view.cursor + 1;
  auto* words_at = reinterpret_cast<std::uint32_t*>(base + 2 * sizeof(unsigned long long));
  _view.launch_state = words_at;
  _view.done = words_at + state_words;
  _view.runs = _view.done + be_blocks;
  _view.rt_done = _view.runs + be_blocks;
  _view.rt_late = _view.rt_done + rt_capacity;
  _view.rt_crowded = _view.rt_late + 1;
  if (!record_placement) {
    _view.rt_crowded = nullptr;
    _view.rt_spread_ns = nullptr;
  }
  _view.be_blocks = be_blocks;
  _view.rt_capacity = rt_capacity;
}

std::uint64_t pad_job::taken() const {
  unsigned long long v = 0;
  RESIDENT_CUDA_TRY(cudaMemcpy(&v, _view.cursor, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

std::uint32_t pad_job::rt_late_takes() const {
  std::uint32_t v = 0;
  RESIDENT_CUDA_TRY(cudaMemcpy(&v, _view.rt_late, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

pad_placement pad_job::placement() const {
  pad_placement p;
  if (_view.rt_crowded == nullptr) return p;  // not recorded
  unsigned long long spread = 0;
  std::uint32_t words[2] = {0, 0};  // crowded, launches
  RESIDENT_CUDA_TRY(cudaMemcpy(words, _view.rt_crowded, sizeof words, cudaMemcpyDeviceToHost));
  p.crowded_launches = words[0];
  p.launches = words[1];
  RESIDENT_CUDA_TRY(cudaMemcpy(&spread, _view.rt_spread_ns, sizeof spread, cudaMemcpyDeviceToHost));
  p.spread_ns = spread;
  return p;
}

std::vector<std::uint32_t> pad_job::runs() const {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(_view.be_blocks));
  RESIDENT_CUDA_TRY(cudaMemcpy(out.data(), _view.runs, out.size() * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost));
  return out;
}

void launch_padded_gemm(cudaStream_t s, const gemm_args& rt, const gemm_args& be,
                        const pad_job& job, const pad_limits& limits,
                        unsigned long long* start_stamp, pad_launch_stamps* stamps,
                        launch_dependency d) {
  launch_merged<gemm_args, gemm_block<>>(s, rt, be, job, limits, start_stamp, stamps, d,
                                         "padded_gemm_kernel");
}

int padded_gemm_blocks_per_sm() {
  int blocks = 0;
  RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks,
      padded_kernel<gemm_args, gemm_args, gemm_block<gemm_loads::prefetched>, gemm_block<>>,
      be_block_threads, 0));
  return blocks;
}

pad_limits placement_only(std::int32_t rt_blocks, std::uint32_t place_wait_ns) {
  if (rt_blocks <= 0) {
    throw std::invalid_argument("placement_only: rt_blocks (" + std::to_string(rt_blocks) +
                                ") must be positive");
  }
  // Until every RT item is placed, only an RT block leaves an SM (the others wait), and each SM
  // runs at most one RT item, so at most blocks_per_sm + 1 blocks of the launch land on one SM.
  // rt_blocks * (blocks_per_sm + 1) blocks therefore reach at least rt_blocks SMs, whatever
  // order the SMs free up in.
  pad_limits p;
  p.slots = std::max(padded_gemm_blocks_per_sm(), 1) * rt_blocks;
  p.budget = 0;
  p.place_wait_ns = place_wait_ns;
  return p;
}

void launch_padded_gemm_conv(cudaStream_t s, const gemm_args& rt, const conv2d_args& be,
                             const pad_job& job, const pad_limits& limits,
                             unsigned long long* start_stamp, pad_launch_stamps* stamps,
                             launch_dependency d) {
  launch_merged<conv2d_args, conv2d_block>(s, rt, be, job, limits, start_stamp, stamps, d,
                                           "padded_gemm_conv_kernel");
}

}  // namespace resident::sched
