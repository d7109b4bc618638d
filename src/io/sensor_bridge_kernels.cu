// Device side of the sensor bridge: the bridge's commit (the metadata record written after the
// payload, the stand-in for an RDMA write-with-immediate), the frame handler that polls those
// records, and the clock read used to map the host's clock onto the device's.

#include <cuda/atomic>

#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/csi2.hpp"
#include "resident/io/sensor_bridge.hpp"

namespace resident::io::detail {

namespace {

using resident::device::load_acquire_system;
using resident::device::store_release_system;

// The four bytes of a short packet (frame start or end) carrying `number`.
__device__ void write_short_packet(std::uint8_t* at, csi2::data_type type, std::uint16_t number) {
  const std::uint32_t header24 = static_cast<std::uint32_t>(type) |
                                 static_cast<std::uint32_t>(number & 0xFFU) << 8 |
                                 static_cast<std::uint32_t>(number >> 8) << 16;
  at[0] = static_cast<std::uint8_t>(header24);
  at[1] = static_cast<std::uint8_t>(header24 >> 8);
  at[2] = static_cast<std::uint8_t>(header24 >> 16);
  at[3] = csi2::header_ecc(header24);
}

// One thread. Runs on the bridge's stream after the payload copy into the slot, so the payload is
// complete in device memory when it starts; the release stores order the record after it.
__global__ void bridge_commit_kernel(commit_args a) {
  const std::uint16_t number = csi2_frame_number(a.frame);
  write_short_packet(a.slot, csi2::data_type::frame_start, number);
  write_short_packet(a.slot + a.bytes - 4, csi2::data_type::frame_end, number);
  for (std::uint32_t i = 0; i < a.patches && i < max_patches; ++i) {
    if (a.patch[i].offset < a.bytes) a.slot[a.patch[i].offset] ^= a.patch[i].mask;
  }
  a.record->frame_start_ns = a.frame_start_ns;
  a.record->bytes = a.bytes;
  a.record->status = a.status;
  a.record->arrival_ns = device::globaltimer_ns();
  // Release at system scope: the loop's handler may run anywhere (another stream, a CPU-driven
  // loop reading the mirror), and it must see the payload and the record before the counters.
  store_release_system(a.record->frame, a.frame);
  store_release_system(*a.newest, a.frame);
  if (a.mirror != nullptr) store_release_system(*a.mirror, a.frame);
}

// One warp; thread 0 polls. The handler only points the DAG at the slot (zero copy): the frame
// stays where the bridge wrote it, and reconstruction checks afterwards that it was not rewritten.
__global__ void frame_rx_kernel(frame_ring_view ring, loop_state* loop, frame_ref* out) {
  device::let_next_kernel_start();
  if (threadIdx.x != 0) return;
  const std::uint64_t last = loop->last;
  const bool have_processed = loop->processed > 0;
  const sample_policy policy = loop->policy;
  const std::uint64_t poll_ns = loop->poll_ns;
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
    if (loop->preempt.after_input == 0U) device::raise_preempt(loop);
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
    if (loop->preempt.after_input != 0U) device::raise_preempt(loop);
    device::publish(loop, pick);
    device::stamp(loop, stage::handler_end);
    return;
  }
}

// Host delivery: the host chose the frame and copied it in; this only hands it to the DAG.
__global__ void frame_publish_kernel(frame_ref ref, loop_state* loop, frame_ref* out) {
  device::let_next_kernel_start();
  if (threadIdx.x != 0) return;
  const std::uint64_t now = device::globaltimer_ns();
  loop->stamp_ns[static_cast<std::size_t>(stage::handler_start)] = now;
  if (ref.frame != 0 && ref.frame != loop->last) {
    device::stamp(loop, stage::detect);
    device::raise_preempt(loop);
    *out = ref;
    loop->stamp_ns[static_cast<std::size_t>(stage::arrival)] = ref.arrival_ns;
  }
  device::publish(loop, ref.frame);
  device::stamp(loop, stage::handler_end);
}

__global__ void clock_read_kernel(std::uint64_t* out) {
  store_release_system(*out, device::globaltimer_ns());
}

}  // namespace

void launch_bridge_commit(const commit_args& a, cudaStream_t s) {
  bridge_commit_kernel<<<1, 1, 0, s>>>(a);
  RESIDENT_CUDA_CHECK_LAUNCH("bridge_commit_kernel");
}

void launch_frame_rx(const frame_ring_view& ring, loop_state* loop, frame_ref* out,
                     cudaStream_t s) {
  frame_rx_kernel<<<1, 32, 0, s>>>(ring, loop, out);
  RESIDENT_CUDA_CHECK_LAUNCH("frame_rx_kernel");
}

void launch_frame_publish(const frame_ref& ref, loop_state* loop, frame_ref* out, cudaStream_t s) {
  frame_publish_kernel<<<1, 32, 0, s>>>(ref, loop, out);
  RESIDENT_CUDA_CHECK_LAUNCH("frame_publish_kernel");
}

void launch_clock_read(std::uint64_t* out, cudaStream_t s) {
  clock_read_kernel<<<1, 1, 0, s>>>(out);
  RESIDENT_CUDA_CHECK_LAUNCH("clock_read_kernel");
}

}  // namespace resident::io::detail
