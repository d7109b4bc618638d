#pragma once
// frame_rx's device code: the data-ready handler's pass by one thread (poll the ring for the
// frame the policy asks for, check its slot's record, hand a frame_ref to the DAG, publish),
// run by the handler kernel and by the persistent mode's kernel. Include only from .cu files.

#include <cuda/atomic>

#include "io/forms.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/app/persistent_kernel.cuh"
#include "resident/io/sensor_bridge.hpp"

namespace resident::io::detail {

/// One thread runs it. The handler only points the DAG at the slot (zero copy): the frame stays
/// where the bridge wrote it, and reconstruction checks afterwards that it was not rewritten.
__device__ inline void frame_rx_pass(const frame_ring_view& ring, loop_state* loop,
                                     frame_ref* out) {
  using resident::device::load_acquire_system;
  const auto [last, have_processed, policy, poll_ns, preempt_hooked, raise_after_input] =
      device::load_handler_words(loop);
  const std::uint64_t start = device::globaltimer_ns();
  loop->stamp_ns[static_cast<std::size_t>(stage::handler_start)] = start;
  device::note_sm(loop);
  const bool anticipating = loop->preempt.anticipates();
  std::uint64_t empty_at = 0;
  for (;;) {
    const std::uint64_t pick =
        select_frame(load_acquire_system(*ring.newest), last, have_processed, policy, ring.depth);
    if (pick == 0) {
      empty_at = device::globaltimer_ns();
      if (anticipating) device::anticipate_preempt(loop, empty_at);
      if (empty_at - start < poll_ns) continue;
      device::publish(loop, 0);  // nothing within the polling budget: the iteration idles
      device::stamp(loop, stage::handler_end);
      return;
    }
    if (pick == last) {  // a repeat: "frame" still holds the last frame's reference
      device::publish(loop, pick);
      device::stamp(loop, stage::handler_end);
      return;
    }
    const std::uint32_t slot = static_cast<std::uint32_t>(pick % ring.depth);
    const frame_record& rec = ring.records[slot];
    // Acquire pairs with the commit's release of the record's frame: the rest of the record and
    // the payload are that frame's. A different number: the bridge lapped the ring; choose again.
    if (load_acquire_system(rec.frame) != pick) continue;
    device::stamp(loop, stage::detect);
    loop->stamp_ns[static_cast<std::size_t>(stage::last_empty_poll)] = empty_at;
    if (preempt_hooked && !raise_after_input) device::raise_preempt(loop);
    if (anticipating) {
      device::note_sample_due(loop, loop->stamp_ns[static_cast<std::size_t>(stage::detect)]);
    }
    frame_ref r;
    r.packets = ring.slots + slot * ring.slot_stride;
    r.bytes = rec.bytes;
    r.frame = pick;
    r.status = rec.status;
    r.slot = slot;
    r.slot_frame = &rec.frame;
    r.frame_start_ns = rec.frame_start_ns;
    r.arrival_ns = rec.arrival_ns;
    *out = r;
    loop->stamp_ns[static_cast<std::size_t>(stage::arrival)] = r.arrival_ns;
    if (preempt_hooked && raise_after_input) device::raise_preempt(loop);
    device::publish(loop, pick);
    device::stamp(loop, stage::handler_end);
    return;
  }
}

}  // namespace resident::io::detail

namespace resident::io {

/// io.frame_rx's device form: thread 0 of block 0 runs the handler's pass.
struct frame_rx_form {
  static constexpr const char* name = "io.frame_rx";
  using args = detail::frame_rx_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    if (blockIdx.x == 0 && threadIdx.x == 0) detail::frame_rx_pass(a.ring, ctx.loop, a.out);
  }
};

}  // namespace resident::io
