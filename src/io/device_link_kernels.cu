// The device link's kernels and device forms: the producer's publish into the consumer's ring
// (link_tx), and the consumer's handler, which is the mailbox's over the ring (link_rx).

#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/mailbox_forms.cuh"

namespace resident::io::detail {

/// Publishes `in` as the link's next sample, block-wide. Only a released iteration publishes
/// (as mailbox_tx_commit: a host-gated mode may run the egress when nothing was released); all
/// threads read the same word, so all return together. Sequence lock, writer side: the slot
/// marked busy, the payload, then the slot's stamp and the head, with system-scope order (the
/// ring is another GPU's memory).
__device__ inline void link_publish(const link_writer_view& w, loop_state* loop,
                                    const std::byte* in) {
  if (loop != nullptr && loop->released == 0U) return;
  __shared__ std::uint64_t published;
  if (threadIdx.x == 0) {
    const std::uint64_t seq = *w.next + 1;
    *w.next = seq;  // device memory of the producer, this kernel its only writer
    auto& stamp =
        *reinterpret_cast<std::uint64_t*>(w.ring + w.slots_at + (seq % w.depth) * w.slot_stride);
    store_relaxed_system(stamp, std::uint64_t{0});  // busy: a reader of the old sample retries
    __threadfence_system();
    published = seq;
  }
  resident::device::sync_block();
  const std::uint64_t seq = published;
  std::byte* slot = w.ring + w.slots_at + (seq % w.depth) * w.slot_stride;
  block_copy<false>(slot + header_bytes, in, w.bytes);
  __threadfence_system();  // every thread's payload stores before the stamps below
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    store_release_system(*reinterpret_cast<std::uint64_t*>(slot), seq);
    store_release_system(*reinterpret_cast<std::uint64_t*>(w.ring), seq);  // the head
    if (loop != nullptr) device::stamp(loop, stage::commit);
  }
}

namespace {

constexpr unsigned publish_threads = 256;

__global__ void __launch_bounds__(publish_threads)
    link_publish_kernel(link_writer_view w, loop_state* loop, const std::byte* in) {
  device::let_next_kernel_start();
  link_publish(w, loop, in);
}

}  // namespace

void launch_link_publish(const link_writer_view& w, loop_state* loop, const std::byte* in,
                         cudaStream_t s) {
  link_publish_kernel<<<1, publish_threads, 0, s>>>(w, loop, in);
  RESIDENT_CUDA_CHECK_LAUNCH("link_publish_kernel");
}

}  // namespace resident::io::detail

namespace resident::io {

/// io.link_tx's device form: block 0 publishes.
struct link_tx_form {
  static constexpr const char* name = "io.link_tx";
  struct args {
    link_writer_view link;
    const std::byte* in;
  };
  __device__ static void run(const args& a, const form_context& ctx) {
    if (blockIdx.x == 0) detail::link_publish(a.link, ctx.loop, a.in);
  }
};

std::optional<device_form> link_rx::persistent_form() const {
  return device_form::of<mailbox_rx_form>({_link->consumer_view(), bound<std::byte>("sample")},
                                          &persistent_kernels<link_tx_form>());
}

std::optional<device_form> link_tx::persistent_form() const {
  return device_form::of<link_tx_form>({_link->producer_view(), bound<const std::byte>("in")},
                                       &persistent_kernels<link_tx_form>());
}

}  // namespace resident::io
