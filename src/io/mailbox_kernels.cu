// Device side of the mailbox: the data-ready handler kernel and the egress kernel.
// Both are one block; thread 0 makes the decisions, all threads copy the payload (reads of
// host-mapped memory are PCIe round trips, so issuing them in parallel matters).

#include <cuda/atomic>

#include <algorithm>

#include "resident/app/loop_control.cuh"
#include "resident/io/mailbox_forms.cuh"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/mailbox.hpp"

namespace resident::io::detail {

namespace {

constexpr int max_threads = 1024;
// Enough threads for one 16-byte word each, up to a full block: reads of host-mapped memory
// are PCIe round trips, so the copy's speed is the number of reads in flight.
unsigned threads_for(std::size_t bytes) {
  const std::size_t words = (bytes + 15) / 16;
  const std::size_t warps = (words + 31) / 32;
  return static_cast<unsigned>(std::clamp<std::size_t>(warps * 32, 32, max_threads));
}

// Fused iteration (run_options::fuse): the executor sets fuse_controller when this kernel is the
// whole handler, and fuse_end_marker when the tx kernel is the DAG's only sink; thread 0 then runs
// the framework step here instead of in a kernel of its own. `Tail`: the instantiation for
// device-launched graphs, whose steps tail-launch the next graph (see loop_control.cuh for why a
// kernel that does so must never be launched from the host).
template <bool Tail>
__global__ void __launch_bounds__(max_threads)
    mailbox_rx_kernel(mailbox_view mb, loop_state* loop, std::byte* sample) {
  device::let_next_kernel_start();
  const bool fused = loop->fuse_controller != 0U;
  // Fused: the controller's early read of the tear-down word goes out now, so its PCIe round
  // trip overlaps the polling below instead of following it.
  device::early_read ahead;
  if (fused && threadIdx.x == 0) ahead = device::read_ahead(loop);
  mailbox_rx_pass(mb, loop, sample);
  if (fused && threadIdx.x == 0) device::controller_decide<Tail>(loop, ahead);
}

template <bool Tail>
__global__ void __launch_bounds__(max_threads)
    mailbox_tx_kernel(mailbox_view mb, loop_state* loop, const std::byte* in) {
  device::let_next_kernel_start();
  mailbox_tx_commit(mb, loop, in);
  if (threadIdx.x == 0 && loop->fuse_end_marker != 0U) device::end_marker_step<Tail>(loop);
}

}  // namespace

void launch_mailbox_rx(const mailbox_view& mb, loop_state* loop, std::byte* sample,
                       cudaStream_t s, bool device_launched) {
  const unsigned threads = threads_for(mb.input_bytes);
  if (device_launched) {
    mailbox_rx_kernel<true><<<1, threads, 0, s>>>(mb, loop, sample);
  } else {
    mailbox_rx_kernel<false><<<1, threads, 0, s>>>(mb, loop, sample);
  }
  RESIDENT_CUDA_CHECK_LAUNCH("mailbox_rx_kernel");
}

void launch_mailbox_tx(const mailbox_view& mb, loop_state* loop, const std::byte* in,
                       cudaStream_t s, bool device_launched) {
  const unsigned threads = threads_for(mb.output_bytes);
  if (device_launched) {
    mailbox_tx_kernel<true><<<1, threads, 0, s>>>(mb, loop, in);
  } else {
    mailbox_tx_kernel<false><<<1, threads, 0, s>>>(mb, loop, in);
  }
  RESIDENT_CUDA_CHECK_LAUNCH("mailbox_tx_kernel");
}

}  // namespace resident::io::detail

namespace resident::io {

std::optional<device_form> mailbox_rx::persistent_form() const {
  return device_form::of<mailbox_rx_form>({_mailbox->device_view(), bound<std::byte>("sample")},
                                          &persistent_kernels<>());
}

std::optional<device_form> mailbox_tx::persistent_form() const {
  return device_form::of<mailbox_tx_form>({_mailbox->device_view(), bound<const std::byte>("in")},
                                          &persistent_kernels<>());
}

}  // namespace resident::io
