// Device side of the sensor bridge: the bridge's commit (the metadata record written after the
// payload, the stand-in for an RDMA write-with-immediate), the frame handler that polls those
// records, and the clock read used to map the host's clock onto the device's.

#include <cuda/atomic>

#include "resident/app/error.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/csi2.hpp"
#include "resident/io/sensor_bridge.hpp"
#include "sensor_bridge_forms.cuh"

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

// One warp; thread 0 polls (sensor_bridge_forms.cuh).
__global__ void frame_rx_kernel(frame_ring_view ring, loop_state* loop, frame_ref* out) {
  device::let_next_kernel_start();
  if (threadIdx.x == 0) frame_rx_pass(ring, loop, out);
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

namespace resident::io {

std::optional<device_form> frame_rx::persistent_form() const {
  detail::frame_rx_args a{_bridge->device_view(), bound<frame_ref>("frame")};
  if (a.ring.host_delivery != 0U) {
    throw composition_error("operator '" + name() +
                            "' (frame_rx): host delivery runs in eager mode only; persistent "
                            "mode needs device delivery");
  }
  // The bridge's commit kernel runs beside the loop, which waits for it: "as many blocks as
  // fit" leaves it room.
  return device_form::of<frame_rx_form>(a, nullptr).with_reserved_sms(bridge_reserved_sms);
}

}  // namespace resident::io
