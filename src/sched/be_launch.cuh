#pragma once
// The BE kernel library's launch machinery, shared by the .cu files that define kernels
// (be_kernels.cu, be_layers.cu): argument checks, the kernel templates (a plain grid, a bounded
// stride, a work counter with hand-backs), launch() and call_for(). A .cu file declares
// run_block(const Args&, be_block&) for each of its argument types in resident::sched (found by
// argument-dependent lookup when a template is instantiated) and specializes cut_part_way for
// the GEMM-shaped ones. Internal: include only from src/sched/*.cu.

#include <algorithm>
#include <cuda/atomic>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "ops/launch.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/preemptible.cuh"

namespace resident::sched::be_detail {

// Device index math is int32 within a dimension: leave room for one more tile or chunk.
constexpr std::int64_t max_extent = std::numeric_limits<std::int32_t>::max() - be_chunk;
static_assert(be_chunk >= be_tile);

[[noreturn]] inline void reject(const char* kernel, const char* field, const std::string& why) {
  throw std::invalid_argument(std::string(kernel) + ": " + field + " " + why);
}

inline void require_pointer(const char* kernel, const char* field, const void* p) {
  if (p == nullptr) reject(kernel, field, "is null");
}

inline void require_positive(const char* kernel, const char* field, std::int64_t value) {
  if (value <= 0) reject(kernel, field, "must be > 0, got " + std::to_string(value));
}

inline void require_extent(const char* kernel, const char* field, std::int64_t value) {
  require_positive(kernel, field, value);
  if (value > max_extent) {
    reject(kernel, field,
           "is " + std::to_string(value) + ", more than " + std::to_string(max_extent));
  }
}

inline void check_activation(const char* kernel, activation act) {
  if (!valid_activation(act)) {
    reject(kernel, "act",
           "is not an activation (" + std::to_string(static_cast<std::int32_t>(act)) + ")");
  }
}

/// The geometry checks of a convolution (conv2d, conv2d_layer).
inline void check_conv2d_shape(const char* kernel, const conv2d_shape& sh) {
  require_positive(kernel, "n", sh.n);
  require_positive(kernel, "c", sh.c);
  require_positive(kernel, "h", sh.h);
  require_positive(kernel, "w", sh.w);
  require_extent(kernel, "k", sh.k);
  require_positive(kernel, "r", sh.r);
  require_positive(kernel, "s", sh.s);
  require_positive(kernel, "stride", sh.stride);
  if (sh.pad < 0) reject(kernel, "pad", "must be >= 0, got " + std::to_string(sh.pad));
  const std::int64_t padded_h = std::int64_t{sh.h} + 2 * std::int64_t{sh.pad};
  const std::int64_t padded_w = std::int64_t{sh.w} + 2 * std::int64_t{sh.pad};
  if (padded_h < sh.r) {
    reject(kernel, "r", "exceeds the padded height h + 2 pad = " + std::to_string(padded_h));
  }
  if (padded_w < sh.s) {
    reject(kernel, "s", "exceeds the padded width w + 2 pad = " + std::to_string(padded_w));
  }
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

inline std::int32_t checked_blocks(const char* kernel, std::int64_t blocks) {
  if (blocks > std::numeric_limits<std::int32_t>::max()) {
    throw std::invalid_argument(std::string(kernel) + ": " + std::to_string(blocks) +
                                " blocks do not fit one launch");
  }
  return static_cast<std::int32_t>(blocks);
}

inline void check_view(const char* kernel, const be_launch_view& v, std::int32_t blocks) {
  if (v.blocks != blocks) {
    throw std::invalid_argument(std::string(kernel) + ": the launch view covers " +
                                std::to_string(v.blocks) + " blocks, the kernel has " +
                                std::to_string(blocks));
  }
  if (v.done == nullptr) throw std::invalid_argument(std::string(kernel) + ": view.done is null");
  if (v.attempt == 0) {
    // A commit writes the attempt into its done word, and 0 reads as "not run".
    throw std::invalid_argument(std::string(kernel) + ": view.attempt must be >= 1");
  }
  if (v.first_block < 0) {
    throw std::invalid_argument(std::string(kernel) + ": view.first_block is " +
                                std::to_string(v.first_block) + "; it must be >= 0");
  }
  if (v.max_grid < 0) {
    throw std::invalid_argument(std::string(kernel) + ": view.max_grid is " +
                                std::to_string(v.max_grid) + "; it must be >= 0");
  }
  if (v.next_left != nullptr && v.next == nullptr) {
    throw std::invalid_argument(std::string(kernel) +
                                ": view.next_left is set but view.next is null");
  }
  if (v.rt_sm_load != nullptr && (v.rt_sms == nullptr || v.next == nullptr)) {
    // Only counter launches count their blocks per SM, and only on the SMs rt_sms marks.
    throw std::invalid_argument(std::string(kernel) +
                                ": view.rt_sm_load needs view.rt_sms and view.next");
  }
  if (v.rt_sm_load != nullptr && v.rt_sm_blocks == 0) {
    throw std::invalid_argument(std::string(kernel) +
                                ": view.rt_sm_blocks is 0; a launch whose blocks could run on no "
                                "RT SM would never finish on a device of RT SMs only");
  }
  if (v.handback != nullptr && (v.next == nullptr || v.next_left == nullptr)) {
    // The hand-back words are zeroed by the launch's last block, which needs next_left.
    throw std::invalid_argument(std::string(kernel) +
                                ": view.handback needs view.next and view.next_left");
  }
  if (v.saved != nullptr && v.progress == nullptr) {
    throw std::invalid_argument(std::string(kernel) +
                                ": view.saved is set but view.progress "
                                "is null");
  }
}

// A GEMM-shaped kernel checkpoints a whole tile of accumulators.
inline void check_saved(const char* kernel, const be_launch_view& v) {
  if (v.saved != nullptr && v.saved_floats < be_tile_state_floats) {
    throw std::invalid_argument(std::string(kernel) + ": view.saved_floats is " +
                                std::to_string(v.saved_floats) + ", a checkpoint needs " +
                                std::to_string(be_tile_state_floats));
  }
}

// Separate kernels per argument type, so that launches without a work counter run exactly the
// plain body (the counter loop costs registers, and fewer resident blocks per SM means more
// pending blocks to drain when the word is raised). Both are held to 64 registers, four blocks
// per SM: the checkpoint code would otherwise push conv2d to 77 and three blocks per SM.
// `Dependent`: the instantiation for programmatic launches (launch_dependency), which lets the
// next kernel be scheduled now and waits for the previous one here, before any memory is
// touched. Plain launches, every BE launch among them, get the other one: the two instructions
// do nothing there but still sit at the start of every block.
template <class Args, bool Dependent = false>
__global__ void __launch_bounds__(be_block_threads, 4) be_kernel(be_launch_view v, Args a) {
  if constexpr (Dependent) ops::detail::begin_dependent_kernel();
  be_block blk(v, be_block::grid_index(v));
  if (!blk.begin()) return;  // skipped or preempted: nothing written
  run_block(a, blk);
}

// One logical block, shared by the counter and strided loops: false when the word stopped the
// block (before or during its work) and the loop must take nothing more; true when it ran to
// the end or was already done by an earlier attempt.
template <class Args>
__device__ bool run_logical(const be_launch_view& v, const Args& a, std::int32_t logical) {
  be_block blk(v, logical, v.handback != nullptr);
  if (!blk.begin()) return !blk.stopped();  // already done (a resumed attempt), or stopped
  run_block(a, blk);
  return !blk.stopped();
}

__device__ inline cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device> device_word(
    std::uint32_t* p) {
  return cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*p);
}

// Kernels whose blocks check the word part-way (and checkpoint): only their blocks can be cut
// after they took their work. The others' blocks are short, so once taken they run to the end.
// Specialized to true where the GEMM-shaped argument types are defined (be_kernels.cu).
template <class Args>
inline constexpr bool cut_part_way = false;

// be_launch_view::handback: [0] logical blocks finished, [1] handed back, [2] hand-backs taken,
// then the entries (logical offset + 1; 0 marks an entry not written yet).
enum : int { hb_finished = 0, hb_pushed = 1, hb_popped = 2 };
constexpr std::int32_t take_wait = -1;   // nothing to take now, but a holder may hand back
constexpr std::int32_t take_leave = -2;  // every logical block is finished (or none can come)

// Thread 0: the next logical offset for this block (the counter first, then blocks handed
// back), take_wait or take_leave. `hands_back`: a block the word stops part-way gives its
// logical block back, so a block with nothing to take waits until every logical block is
// finished. The waiting costs nothing where it matters: the next launch of the stream cannot
// start before the last block of this one has finished anyway. A block that waits on a word
// an RT SM raises leaves (counter_loop), and if none is left to take a hand-back, the launch's
// last block sees it and halts the stream (be_counter_kernel).
// `step`: logical blocks one take hands out (the caller runs t, t + 1, ... below total).
__device__ inline std::int32_t take_item(const be_launch_view& v, std::int32_t total,
                                         bool hands_back, std::uint32_t step) {
  if (device_word(v.next).load(cuda::memory_order_relaxed) < static_cast<std::uint32_t>(total)) {
    const auto t = static_cast<std::int32_t>(atomicAdd(v.next, step));
    if (t < total) return t;
  }
  if (!hands_back) return take_leave;
  std::uint32_t* hb = v.handback;
  auto popped = device_word(hb + hb_popped).load(cuda::memory_order_relaxed);
  while (popped < device_word(hb + hb_pushed).load(cuda::memory_order_relaxed)) {
    if (device_word(hb + hb_popped)
            .compare_exchange_weak(popped, popped + 1U, cuda::memory_order_relaxed)) {
      // The pusher counts the entry before it writes it: wait for the write.
      auto entry = device_word(hb + handback_header_words + popped);
      std::uint32_t t = 0;
      while ((t = entry.load(cuda::memory_order_acquire)) == 0U) __nanosleep(32);
      entry.store(0U, cuda::memory_order_relaxed);  // zero again for the next launch
      return static_cast<std::int32_t>(t - 1U);
    }
  }
  return device_word(hb + hb_finished).load(cuda::memory_order_relaxed) >=
                 static_cast<std::uint32_t>(total)
             ? take_leave
             : take_wait;
}

// Thread 0, once the block's logical block is over: `stopped` part-way (hand it back, with its
// checkpoint: the release orders the block's stores before the entry) or finished.
__device__ inline void release_item(const be_launch_view& v, std::int32_t t, bool stopped) {
  std::uint32_t* hb = v.handback;
  if (stopped) {
    const std::uint32_t i = atomicAdd(hb + hb_pushed, 1U);
    device_word(hb + handback_header_words + i)
        .store(static_cast<std::uint32_t>(t) + 1U, cuda::memory_order_release);
    if (v.handbacks != nullptr) atomicAdd(v.handbacks, 1U);
  } else {
    atomicAdd(hb + hb_finished, 1U);
  }
}

// Logical blocks a short (elementwise) kernel's block takes per atomic. Each take costs the
// block an atomic round trip and two barriers before it can start, about as long as a short
// logical block itself, so taking two halves that; a block on an RT SM then runs at most two
// short blocks (a few microseconds, beside the RT block, not in its way) after the word rises.
constexpr std::uint32_t short_take = 2;

// Work taken from a counter: a block that must stop takes nothing more, so the blocks on the
// SMs that stay free finish the launch (spatial preemption leaves no stragglers). With a
// hand-back area, a block stopped part-way gives its logical block to them as well, and the
// short blocks of the other kernels run to the end once taken (they never need handing back).
template <class Args>
__device__ void counter_loop(const be_launch_view& v, const Args& a) {
  __shared__ std::int32_t item;
  const std::int32_t total = grid_blocks(v);
  const bool hands_back = v.handback != nullptr && cut_part_way<Args>;
  const std::uint32_t step = cut_part_way<Args> ? 1U : short_take;
  be_launch_view run_view = v;
  if (v.handback != nullptr && !cut_part_way<Args>) {
    run_view.preempt = nullptr;  // checked before the take: a taken short block runs
  }
  for (;;) {
    be_block probe(v, -1);
    if (probe.stop_requested()) return;
    if (threadIdx.x == 0) item = take_item(v, total, hands_back, step);
    resident::device::sync_block();
    const std::int32_t t = item;
    resident::device::sync_block();
    if (t == take_leave) return;
    if (t == take_wait) {
      __nanosleep(1000);
      continue;
    }
    if constexpr (cut_part_way<Args>) {
      const bool ran = run_logical(run_view, a, v.first_block + t);
      if (hands_back && threadIdx.x == 0) release_item(v, t, !ran);
      if (!ran) return;
    } else {
      // A stop (time-shared preemption: the word reaches begin()) leaves the rest of the take
      // undone, like the counter's untaken blocks: the halt word stops the stream and the
      // runner resubmits what the done words do not show.
      for (std::int32_t j = t; j < std::min(total, t + static_cast<std::int32_t>(step)); ++j) {
        if (!run_logical(run_view, a, v.first_block + j)) return;
      }
    }
  }
}

// be_launch_view::rt_sm_load, thread 0 at a block's start: the SM the block is counted on,
// rt_sm_uncounted (not an RT SM, or no count kept) or rt_sm_full (the block must leave).
constexpr std::int32_t rt_sm_uncounted = -1;
constexpr std::int32_t rt_sm_full = -2;
__device__ inline std::int32_t enter_rt_sm(const be_launch_view& v) {
  if (v.rt_sm_load == nullptr) return rt_sm_uncounted;
  const std::uint32_t sm = detail::current_sm();
  if (!detail::sm_marked(v.rt_sms, sm)) return rt_sm_uncounted;
  if (atomicAdd(v.rt_sm_load + sm, 1U) < v.rt_sm_blocks) return static_cast<std::int32_t>(sm);
  atomicSub(v.rt_sm_load + sm, 1U);
  return rt_sm_full;
}

template <class Args>
__global__ void __launch_bounds__(be_block_threads, 4) be_counter_kernel(be_launch_view v, Args a) {
  __shared__ std::int32_t rt_sm;
  if (threadIdx.x == 0) rt_sm = enter_rt_sm(v);
  resident::device::sync_block();
  if (rt_sm != rt_sm_full) counter_loop(v, a);
  // Whatever way the loop ended, the block leaves its SM now.
  if (threadIdx.x == 0 && rt_sm >= 0) atomicSub(v.rt_sm_load + rt_sm, 1U);
  // Only thread 0 takes work, and it has taken its last item: the last block to get here
  // leaves the words zero for the next launch.
  if (v.next_left != nullptr && threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(v.next_left, 1U) == gridDim.x - 1U) {
      __threadfence();  // every other block's hand-backs, fenced before it left, are seen here
      if (v.handback != nullptr) {
        std::uint32_t* hb = v.handback;
        const std::uint32_t pushed = device_word(hb + hb_pushed).load(cuda::memory_order_relaxed);
        const std::uint32_t popped = device_word(hb + hb_popped).load(cuda::memory_order_relaxed);
        if (popped < pushed) {
          // Handed back with nobody left to take it (every block that could was on an RT SM):
          // the launch ends short, and its stream stops until the host resubmits the rest.
          if (v.halt != nullptr) device_word(v.halt).store(1U, cuda::memory_order_relaxed);
          for (std::uint32_t i = popped; i < pushed; ++i) {
            device_word(hb + handback_header_words + i).store(0U, cuda::memory_order_relaxed);
          }
        }
        device_word(hb + hb_pushed).store(0U, cuda::memory_order_relaxed);
        device_word(hb + hb_popped).store(0U, cuda::memory_order_relaxed);
        device_word(hb + hb_finished).store(0U, cuda::memory_order_relaxed);
      }
      atomicExch(v.next, 0U);
      atomicExch(v.next_left, 0U);
      __threadfence();
    }
  }
}

// A bounded grid without a counter: grid block i runs logical blocks i, i + grid, ... and
// stops at the first one the word stops. Time-shared preemption stops every block anyway, so
// nothing is left for a counter to hand out, and there is no counter to reset.
template <class Args>
__global__ void __launch_bounds__(be_block_threads, 4) be_strided_kernel(be_launch_view v, Args a) {
  const std::int32_t total = grid_blocks(v);
  for (auto t = static_cast<std::int32_t>(blockIdx.x); t < total;
       t += static_cast<std::int32_t>(gridDim.x)) {
    if (!run_logical(v, a, v.first_block + t)) return;
  }
}

template <class Args>
void load_kernels_of(const char* name) {
  load_kernel(be_kernel<Args>, name);
  load_kernel(be_kernel<Args, true>, name);
  load_kernel(be_strided_kernel<Args>, name);
  load_kernel(be_counter_kernel<Args>, name);
}

template <class Args>
void launch(const char* kernel, cudaStream_t s, const be_launch_view& v, const Args& a,
            std::int32_t blocks, launch_dependency d = launch_dependency::full) {
  check_view(kernel, v, blocks);
  std::int32_t grid = grid_blocks(v);
  if (grid == 0) return;
  if (d == launch_dependency::programmatic) {
    if (v.next != nullptr || (v.max_grid > 0 && grid > v.max_grid)) {
      throw std::invalid_argument(std::string(kernel) +
                                  ": a programmatic launch takes only a plain grid (the view has "
                                  "a work counter or a max_grid stride)");
    }
    ops::detail::launch_kernel(kernel, be_kernel<Args, true>, dim3(static_cast<unsigned>(grid)),
                               dim3(be_block_threads), s, true, v, a);
    return;
  }
  if (v.next == nullptr && v.max_grid > 0 && grid > v.max_grid) {
    be_strided_kernel<Args><<<v.max_grid, be_block_threads, 0, s>>>(v, a);
  } else if (v.next == nullptr) {
    be_kernel<Args><<<grid, be_block_threads, 0, s>>>(v, a);
  } else {
    if (v.max_grid > 0) grid = std::min(grid, v.max_grid);
    if (v.handback != nullptr && v.handback_capacity < grid) {
      throw std::invalid_argument(std::string(kernel) + ": view.handback holds " +
                                  std::to_string(v.handback_capacity) + " entries, the grid has " +
                                  std::to_string(grid) + " blocks");
    }
    be_counter_kernel<Args><<<grid, be_block_threads, 0, s>>>(v, a);
  }
  RESIDENT_CUDA_CHECK_LAUNCH(kernel);
}

template <class Args>
be_call call_for(std::string name, const Args& a, std::int32_t blocks, bool idempotent,
                 void (*launcher)(cudaStream_t, const be_launch_view&, const Args&),
                 std::int32_t saved_floats = 0) {
  return {std::move(name), blocks, idempotent, saved_floats,
          [a, launcher](cudaStream_t s, const be_launch_view& v) { launcher(s, v, a); }};
}

}  // namespace resident::sched::be_detail
