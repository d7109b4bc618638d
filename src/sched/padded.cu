// The merged RT + BE launch of dynamic kernel padding (see resident/sched/padded.hpp).

#include <stdexcept>
#include <string>

#include <cuda/atomic>

#include "resident/cuda/error.hpp"
#include "resident/sched/be_kernels.cuh"
#include "resident/sched/padded.hpp"
#include "resident/sched/preemptible.cuh"

namespace resident::sched {

namespace {

enum : int {
  next_item = 0,
  be_taken = 1,
  blocks_done = 2,
  rt_placed = 3,
  sm_mask = 4,  // 8 words: 256 SMs
  state_words = 12
};

__device__ inline std::uint32_t current_sm() {
  std::uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm & 255U;
}

template <class RtArgs, class BeArgs, void (*RtBody)(const RtArgs&, be_block&),
          void (*BeBody)(const BeArgs&, be_block&)>
__global__ void __launch_bounds__(be_block_threads)
    padded_kernel(RtArgs rt, std::int32_t rt_blocks, BeArgs be, pad_job_view job,
                  std::uint32_t budget, std::uint32_t rounds, unsigned long long* start_stamp) {
  __shared__ std::uint32_t item;
  __shared__ unsigned long long be_index;
  std::uint32_t* state = job.launch_state;
  // RT work first, by arrival order at the counter rather than by blockIdx.
  if (threadIdx.x == 0) item = atomicAdd(state + next_item, 1U);
  __syncthreads();
  const std::uint32_t w = item;
  __syncthreads();
  if (w < static_cast<std::uint32_t>(rt_blocks)) {
    if (threadIdx.x == 0) {
      if (start_stamp != nullptr) {
        unsigned long long now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        atomicCAS(start_stamp, 0ULL, now);
      }
      const std::uint32_t sm = current_sm();
      atomicOr(state + sm_mask + (sm >> 5), 1U << (sm & 31U));
      __threadfence();
      atomicAdd(state + rt_placed, 1U);
    }
    be_launch_view v;
    v.done = job.rt_done;
    v.blocks = rt_blocks;
    be_block blk(v, static_cast<std::int32_t>(w));
    if (blk.begin()) RtBody(rt, blk);
  } else {
    // A pad block. It keeps off the SMs the RT kernel runs on: every RT block is resident
    // (each took its item before this block did), so waiting for them to be placed ends.
    if (threadIdx.x == 0) {
      cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device> placed(state[rt_placed]);
      while (placed.load(cuda::memory_order_acquire) < static_cast<std::uint32_t>(rt_blocks)) {
        __nanosleep(64);
      }
      const std::uint32_t sm = current_sm();
      const std::uint32_t mask =
          cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(state[sm_mask + (sm >> 5)])
              .load(cuda::memory_order_relaxed);
      item = (mask >> (sm & 31U)) & 1U;  // 1: an RT block shares this SM
    }
    __syncthreads();
    const bool shared_sm = item != 0U;
    __syncthreads();
    // BE blocks one after another while the launch's budget (and this block's rounds) last.
    for (std::uint32_t round = 0; !shared_sm && (rounds == 0 || round < rounds); ++round) {
      if (threadIdx.x == 0) {
        be_index = atomicAdd(state + be_taken, 1U) < budget ? atomicAdd(job.cursor, 1ULL) : ~0ULL;
      }
      __syncthreads();
      const unsigned long long taken = be_index;
      __syncthreads();
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
  // The last block out resets the launch's counters for the next launch (a captured graph
  // replays this kernel with the same arguments).
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(state + blocks_done, 1U) == gridDim.x - 1) {
      for (int i = 0; i < state_words; ++i) state[i] = 0U;
      __threadfence();
    }
  }
}

template <class BeArgs, void (*BeBody)(const BeArgs&, be_block&)>
void launch_merged(cudaStream_t s, const gemm_args& rt, const BeArgs& be, const pad_job& job,
                   const pad_limits& limits, unsigned long long* start_stamp, const char* name) {
  const std::int32_t rt_blocks = gemm_blocks(rt);
  if (rt_blocks > job.view().rt_capacity) {
    throw std::invalid_argument(std::string(name) + ": the RT gemm has " +
                                std::to_string(rt_blocks) + " blocks, the pad job holds " +
                                std::to_string(job.view().rt_capacity));
  }
  if (limits.slots < 0) throw std::invalid_argument(std::string(name) + ": slots < 0");
  const std::int32_t slots = limits.budget == 0 ? 0 : limits.slots;
  padded_kernel<gemm_args, BeArgs, gemm_block, BeBody>
      <<<rt_blocks + slots, be_block_threads, 0, s>>>(rt, rt_blocks, be, job.view(), limits.budget,
                                                      limits.rounds, start_stamp);
  RESIDENT_CUDA_CHECK_LAUNCH(name);
}

}  // namespace

pad_job::pad_job(std::int32_t be_blocks, std::int32_t rt_capacity) {
  if (be_blocks <= 0 || rt_capacity <= 0) {
    throw std::invalid_argument("pad_job: be_blocks (" + std::to_string(be_blocks) +
                                ") and rt_capacity (" + std::to_string(rt_capacity) +
                                ") must be positive");
  }
  const std::size_t words =
      state_words + 2 * static_cast<std::size_t>(be_blocks) + static_cast<std::size_t>(rt_capacity);
  _mem = device_buffer(sizeof(unsigned long long) + words * sizeof(std::uint32_t));
  RESIDENT_CUDA_TRY(cudaMemset(_mem.data(), 0, _mem.size()));
  auto* base = _mem.data_as<unsigned char>();
  _view.cursor = reinterpret_cast<unsigned long long*>(base);
  auto* words_at = reinterpret_cast<std::uint32_t*>(base + sizeof(unsigned long long));
  _view.launch_state = words_at;
  _view.done = words_at + state_words;
  _view.runs = _view.done + be_blocks;
  _view.rt_done = _view.runs + be_blocks;
  _view.be_blocks = be_blocks;
  _view.rt_capacity = rt_capacity;
}

std::uint64_t pad_job::taken() const {
  unsigned long long v = 0;
  RESIDENT_CUDA_TRY(cudaMemcpy(&v, _view.cursor, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

std::vector<std::uint32_t> pad_job::runs() const {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(_view.be_blocks));
  RESIDENT_CUDA_TRY(cudaMemcpy(out.data(), _view.runs, out.size() * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost));
  return out;
}

void launch_padded_gemm(cudaStream_t s, const gemm_args& rt, const gemm_args& be,
                        const pad_job& job, const pad_limits& limits,
                        unsigned long long* start_stamp) {
  launch_merged<gemm_args, gemm_block>(s, rt, be, job, limits, start_stamp, "padded_gemm_kernel");
}

int padded_gemm_blocks_per_sm() {
  int blocks = 0;
  RESIDENT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, padded_kernel<gemm_args, gemm_args, gemm_block, gemm_block>, be_block_threads, 0));
  return blocks;
}

void launch_padded_gemm_conv(cudaStream_t s, const gemm_args& rt, const conv2d_args& be,
                             const pad_job& job, const pad_limits& limits,
                             unsigned long long* start_stamp) {
  launch_merged<conv2d_args, conv2d_block>(s, rt, be, job, limits, start_stamp,
                                           "padded_gemm_conv_kernel");
}

}  // namespace resident::sched
