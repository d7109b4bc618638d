#pragma once
// The mailbox's device forms, block-wide: the data-ready handler's pass (choose a sample, copy it
// under the slot's sequence lock, publish it) and the egress commit (versioned, fenced output).
// The mailbox's kernels run them, and so does the persistent mode's kernel (src/exec/
// persistent_kernel.cu). Every thread of the block must call them (they hold barriers); any block
// size works. Include only from .cu files.

#include <cuda/atomic>

#include "resident/app/loop_device.cuh"
#include "resident/app/persistent_kernel.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/io/mailbox.hpp"
#include "resident/io/tagged_line.hpp"

namespace resident::io::detail {

constexpr std::size_t header_bytes = 64;

using resident::device::load_acquire_system;
using resident::device::store_relaxed_system;
using resident::device::store_release_system;

__device__ inline const std::uint64_t& slot_seq(const mailbox_view& mb, std::uint64_t seq) {
  return *reinterpret_cast<const std::uint64_t*>(mb.slots + (seq % mb.depth) * mb.slot_stride);
}

// Block-wide copy between device and host-mapped memory. Host-mapped reads use ld.global.cv
// (fetched again every time, never a stale cached line) and writes st.global.wt; 16-byte words
// when both ends allow it, then the byte tail.
template <bool FromHost>
__device__ inline void block_copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  std::size_t done = 0;
  if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15) == 0) {
    const std::size_t words = bytes / 16;
    for (std::size_t i = threadIdx.x; i < words; i += blockDim.x) {
      if constexpr (FromHost) {
        reinterpret_cast<ulonglong2*>(dst)[i] =
            __ldcv(reinterpret_cast<const ulonglong2*>(src) + i);
      } else {
        __stwt(reinterpret_cast<ulonglong2*>(dst) + i, reinterpret_cast<const ulonglong2*>(src)[i]);
      }
    }
    done = words * 16;
  }
  for (std::size_t i = done + threadIdx.x; i < bytes; i += blockDim.x) {
    if constexpr (FromHost) {
      dst[i] = static_cast<std::byte>(reinterpret_cast<const volatile unsigned char*>(src)[i]);
    } else {
      reinterpret_cast<volatile unsigned char*>(dst)[i] = static_cast<unsigned char>(src[i]);
    }
  }
}

// ---- the lines format (mailbox_format::lines; io/tagged_line.hpp) ------------------------------
// Warp 0 does the work: lanes 0-7 each load or store one word of a 64-byte line (one wide PCIe
// transaction), and the tags decide, by a vote, whether the words are one write's.

inline constexpr unsigned full_warp = 0xFFFFFFFFU;

/// Lane `lane` (< 8) of warp 0: word `lane` of the line at `line` (read again from host memory
/// every time); other lanes 0.
__device__ inline std::uint64_t load_line_word(const std::byte* line, unsigned lane) {
  if (lane >= tagged_line::words) return 0;
  return __ldcv(reinterpret_cast<const unsigned long long*>(line) + lane);
}

/// Warp 0, every lane: whether the words lanes 0-7 hold are sample `pick`'s slot line (word 0
/// is `pick`, the others carry its lap); when they are, lanes 1-7 unpack their 7 bytes into
/// `dst` (`bytes` in all).
__device__ inline bool take_slot_line(const mailbox_view& mb, std::uint64_t pick, std::uint64_t w,
                                      unsigned lane, std::byte* dst) {
  const bool mine = lane == 0                   ? w == pick
                    : lane < tagged_line::words ? tagged_line::tag_of(w) == slot_tag(pick, mb.depth)
                                                : true;
  if (!__all_sync(full_warp, mine)) return false;
  if (lane >= 1 && lane < tagged_line::words) {
    tagged_line::unpack_word(w, lane - 1, reinterpret_cast<unsigned char*>(dst), mb.input_bytes);
  }
  return true;
}

/// Warp 0, every lane: the output line of commit `commit` for sample `seq`, `src` its payload
/// (output_bytes, device memory), stored by lanes 0-7 at once. No fence between the payload and
/// the numbers: each word carries the commit's tag.
__device__ inline void store_output_line(const mailbox_view& mb, std::uint64_t commit,
                                         std::uint64_t seq, const std::byte* src, unsigned lane) {
  if (lane >= tagged_line::words) return;
  const std::uint64_t w = lane == 0 ? commit
                          : lane == 1
                              ? tagged_line::tag_word(seq, commit)
                              : tagged_line::pack_word(reinterpret_cast<const unsigned char*>(src),
                                                       mb.output_bytes, lane - 2, commit);
  __stwt(reinterpret_cast<unsigned long long*>(mb.out_begin) + lane,
         static_cast<unsigned long long>(w));
}

/// The handler's pass in the lines format, warp 0 alone (the block's other threads return at
/// once; nothing here waits for them). Each poll is one round trip: lanes 0-7 read the slot
/// line of the sample after `last` while lane 8 reads the head, so a sample that came in order
/// is taken with the same read that saw it; another (newest past a gap, a slot rewritten
/// meanwhile) costs one more read of its line.
__device__ inline void mailbox_rx_line_pass(const mailbox_view& mb, loop_state* loop,
                                            std::byte* sample) {
  if (threadIdx.x >= 32) return;
  const unsigned lane = threadIdx.x;
  const auto [last, have_processed, policy, poll_ns, preempt_hooked, raise_after_input] =
      device::load_handler_words(loop);
  const std::uint64_t start = __shfl_sync(full_warp, device::globaltimer_ns(), 0);
  if (lane == 0) {
    loop->stamp_ns[static_cast<std::size_t>(stage::handler_start)] = start;
    device::note_sm(loop);
  }
  const bool anticipating = loop->preempt.anticipates();
  const std::byte* guess_line = mb.slots + ((last + 1) % mb.depth) * mb.slot_stride;
  std::uint64_t empty_at = 0;
  for (;;) {
    std::uint64_t w = load_line_word(guess_line, lane);
    if (lane == 8) w = load_acquire_system(*mb.head);
    const std::uint64_t head = __shfl_sync(full_warp, w, 8);
    const std::uint64_t pick = select_sample(head, last, have_processed, policy, mb.depth);
    if (pick == 0) {
      empty_at = __shfl_sync(full_warp, device::globaltimer_ns(), 0);
      if (anticipating && lane == 0) device::anticipate_preempt(loop, empty_at);
      if (empty_at - start < poll_ns) continue;
    }
    if (lane == 0 && pick != 0) {
      device::stamp(loop, stage::detect);
      loop->stamp_ns[static_cast<std::size_t>(stage::last_empty_poll)] = empty_at;
      if (pick != last && preempt_hooked && !raise_after_input) device::raise_preempt(loop);
      if (pick != last && anticipating) {
        device::note_sample_due(loop, loop->stamp_ns[static_cast<std::size_t>(stage::detect)]);
      }
    }
    if (pick == 0 || pick == last) {  // nothing, or a repeat: the port holds its payload
      if (lane == 0) {
        device::publish(loop, pick);
        device::stamp(loop, stage::handler_end);
      }
      return;
    }
    if (pick != last + 1) w = load_line_word(mb.slots + (pick % mb.depth) * mb.slot_stride, lane);
    if (take_slot_line(mb, pick, w, lane, sample)) {
      if (lane == 0) {
        if (preempt_hooked && raise_after_input) device::raise_preempt(loop);
        device::publish(loop, pick);
        device::stamp(loop, stage::handler_end);
      }
      return;
    }
    // Not yet whole (the head ran ahead of the line) or rewritten meanwhile: look again.
  }
}

__device__ inline void mailbox_rx_pass(const mailbox_view& mb, loop_state* loop,
                                       std::byte* sample) {
  if (mb.lines) {
    mailbox_rx_line_pass(mb, loop, sample);
    return;
  }
  __shared__ std::uint64_t chosen;
  __shared__ bool consistent;
  const auto [last, have_processed, policy, poll_ns, preempt_hooked, raise_after_input] =
      device::load_handler_words(loop);
  const std::uint64_t start = threadIdx.x == 0 ? device::globaltimer_ns() : 0;
  if (threadIdx.x == 0) {
    loop->stamp_ns[static_cast<std::size_t>(stage::handler_start)] = start;
    device::note_sm(loop);
  }
  // Thread 0's clock right after its latest poll that found nothing: the read that then found
  // the sample was issued after it, so detect - empty_at bounds that one read. A long last read
  // is a slow trip to host memory; a short one after many empty polls, a write that reached
  // the GPU late.
  std::uint64_t empty_at = 0;
  const bool anticipating = loop->preempt.anticipates();
  for (;;) {
    if (threadIdx.x == 0) {
      std::uint64_t pick = 0;
      for (;;) {
        // Acquire pairs with the sensor's release of `head`: slot `pick` was complete then. Only
        // an overwrite during the copy can spoil it, which the stamp check after the copy sees.
        pick = select_sample(load_acquire_system(*mb.head), last, have_processed, policy, mb.depth);
        if (pick != 0) break;
        empty_at = device::globaltimer_ns();  // after the branch on the load: the load is done
        if (anticipating) device::anticipate_preempt(loop, empty_at);
        if (empty_at - start >= poll_ns) {
          pick = 0;  // nothing to take within the polling budget: the iteration idles
          break;
        }
      }
      chosen = pick;
    }
    resident::device::sync_block();
    const std::uint64_t pick = chosen;
    if (threadIdx.x == 0 && pick != 0) {
      device::stamp(loop, stage::detect);
      loop->stamp_ns[static_cast<std::size_t>(stage::last_empty_poll)] = empty_at;
      // A new sample: real-time work is coming, best-effort blocks should leave now (before
      // the copy, so the drain overlaps it), unless the hook asks for after the copy. With a
      // lead the word may be up already, raised for this sample before it came.
      if (pick != last) {
        if (preempt_hooked && !raise_after_input) device::raise_preempt(loop);
        if (anticipating) {
          device::note_sample_due(loop, loop->stamp_ns[static_cast<std::size_t>(stage::detect)]);
        }
      }
    }
    if (pick == 0 || pick == last) {
      // No copy for a repeat: the "sample" port still holds the last sample's payload.
      if (threadIdx.x == 0) {
        device::publish(loop, pick);
        device::stamp(loop, stage::handler_end);
      }
      // Every thread has read `chosen` before the pass ends. Each launch has shared memory of
      // its own, but compute-sanitizer's racecheck counts the launches of a loop relaunched from
      // the device (`while`, `tail`) as one, and reports the next pass's write as a race with
      // this read. An idle or repeated pass has no sample waiting on it.
      resident::device::sync_block();
      return;
    }
    const std::byte* slot = mb.slots + (pick % mb.depth) * mb.slot_stride;
    block_copy<true>(sample, slot + header_bytes, mb.input_bytes);
    // The writer's clock at the start of its write, read inside the sequence lock like the
    // payload (a device link's producer writes it before the stamp).
    const std::uint64_t arrival =
        threadIdx.x == 0 && mb.stamped_arrival
            ? *reinterpret_cast<const volatile std::uint64_t*>(slot + sizeof(std::uint64_t))
            : 0;
    // Sequence lock, reader side: every copying thread orders its own payload loads before the
    // second stamp read (its fence), and the barrier orders all of them before thread 0's read.
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
    resident::device::sync_block();
    if (threadIdx.x == 0) {
      consistent = load_acquire_system(slot_seq(mb, pick)) == pick;
      if (consistent) {
        if (mb.stamped_arrival) loop->stamp_ns[static_cast<std::size_t>(stage::arrival)] = arrival;
        if (preempt_hooked && raise_after_input) device::raise_preempt(loop);  // else at detect
        device::publish(loop, pick);
        device::stamp(loop, stage::handler_end);
      }
    }
    resident::device::sync_block();
    if (consistent) return;
    // The sensor lapped the ring and rewrote this slot while we copied it: choose again.
  }
}

__device__ inline void mailbox_tx_commit(const mailbox_view& mb, loop_state* loop,
                                         const std::byte* in) {
  // Only a released iteration commits. Every mode runs the egress only then, except the
  // host-gated ones (fusion.hpp, host_gate_decides), where this keeps a pass that released
  // nothing from publishing; every thread reads the same word, so all return together.
  // The three words are loaded together, before the branch on the first: one L2 round trip
  // on the path to the actuator instead of two.
  const std::uint32_t released = loop->released;
  const std::uint64_t seq = device::current_sample(loop);
  const std::uint64_t commits_before = threadIdx.x == 0 ? *mb.commits : 0;
  if (released == 0U) return;
  if (mb.lines) {
    // One line, stored by warp 0's lanes 0-7 at once: no begin word, no fences.
    if (threadIdx.x >= 32) return;
    const std::uint64_t commit =
        __shfl_sync(full_warp, next_commit(commits_before, mb.commit_floor), 0);
    store_output_line(mb, commit, seq, in, threadIdx.x);
    if (threadIdx.x == 0) {
      *mb.commits = commit;
      device::stamp(loop, stage::commit);
    }
    return;
  }
  // The commit number versions the output: unique per commit (device memory, this kernel is its
  // only writer), so a reader cannot mistake a repeat of the same sample, written over the
  // payload while it copied it, for the output it started reading. Above the view's floor too:
  // the newest commit published when the loop was built, host commits included.
  std::uint64_t commit = 0;  // thread 0's
  if (threadIdx.x == 0) {
    commit = next_commit(commits_before, mb.commit_floor);
    *mb.commits = commit;
    store_relaxed_system(*mb.out_begin, commit);
    __threadfence_system();  // the begin stamp lands before any payload word
  }
  if (mb.output_bytes > 0) {
    resident::device::sync_block();
    block_copy<false>(mb.out_payload, in, mb.output_bytes);
    resident::device::sync_block();
  }
  if (threadIdx.x == 0) {
    store_relaxed_system(*mb.out_seq, seq);
    __threadfence_system();
    // Release: an actuator that acquires `out_end` sees the whole payload and its sample.
    store_release_system(*mb.out_end, commit);
    device::stamp(loop, stage::commit);
  }
}

}  // namespace resident::io::detail

namespace resident::io {

/// io.mailbox_rx's device form: block 0 runs the handler's pass (the other blocks wait at the
/// barrier after it).
struct mailbox_rx_form {
  static constexpr const char* name = "io.mailbox_rx";
  struct args {
    mailbox_view mailbox;
    std::byte* sample;
  };
  __device__ static void run(const args& a, const form_context& ctx) {
    if (blockIdx.x == 0) detail::mailbox_rx_pass(a.mailbox, ctx.loop, a.sample);
  }
};

/// io.mailbox_tx's device form: block 0 commits the output.
struct mailbox_tx_form {
  static constexpr const char* name = "io.mailbox_tx";
  struct args {
    mailbox_view mailbox;
    const std::byte* in;
  };
  __device__ static void run(const args& a, const form_context& ctx) {
    if (blockIdx.x == 0) detail::mailbox_tx_commit(a.mailbox, ctx.loop, a.in);
  }
};

}  // namespace resident::io

namespace resident {

/// A persistent kernel for a DAG between the mailbox's endpoints: io.mailbox_rx's and
/// io.mailbox_tx's forms and the listed ones. Call it in the .cu file that defines the forms
/// (it instantiates the kernel there).
template <class... Forms>
[[nodiscard]] const persistent_kernel_set& persistent_kernels() {
  return persistent_kernels_of<io::mailbox_rx_form, io::mailbox_tx_form, Forms...>();
}

}  // namespace resident
