// The device link's kernels and device forms: the producer's publish into the consumer's ring
// (link_tx), and the consumer's handler, which is the mailbox's over the ring (link_rx).

#include <algorithm>

#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/device_link.hpp"
#include "resident/io/mailbox_forms.cuh"

namespace resident::io::detail {

/// The slot of sample `seq` in the consumer's ring.
__device__ inline std::byte* link_slot(const link_writer_view& w, std::uint64_t seq) {
  return w.ring + w.slots_at + (seq % w.depth) * w.slot_stride;
}

/// Every block of the publish: its share of `in` into the slot of the next sample. Only a
/// released iteration publishes (as mailbox_tx_commit: a host-gated mode may run the egress when
/// nothing was released); all threads read the same word. Sequence lock, writer side, kept per
/// block: the block marks the slot busy (seq 0) before any of its payload stores, so a reader
/// whose copy saw one of them sees a stamp other than the old sample's when it checks again.
/// The payload stores are fenced at system scope before the block counts itself done.
__device__ inline void link_publish_part(const link_writer_view& w, const loop_state* loop,
                                         const std::byte* in) {
  if (loop != nullptr && loop->released == 0U) return;
  // The last block of the previous publish wrote it; every block reads it before this
  // publish's last block (which counts them all first) writes the next.
  const std::uint64_t seq = *static_cast<const volatile std::uint64_t*>(w.next) + 1;
  std::byte* slot = link_slot(w, seq);
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) *w.started = device::globaltimer_ns();
    store_relaxed_system(*reinterpret_cast<std::uint64_t*>(slot), std::uint64_t{0});
    __threadfence_system();
  }
  resident::device::sync_block();
  // 16-byte aligned shares, so each block copies whole words.
  const std::size_t share = ((w.bytes + gridDim.x - 1) / gridDim.x + 15) / 16 * 16;
  const std::size_t begin = std::min<std::size_t>(blockIdx.x * share, w.bytes);
  const std::size_t end = std::min(begin + share, w.bytes);
  block_copy<false>(slot + header_bytes + begin, in + begin, end - begin);
  __threadfence_system();
}

/// The last block of the publish, thread 0, once every block's part is done: the egress start
/// into the header, then the slot's stamp and the head (system-scope release), and the
/// producer's count of what it published.
__device__ inline void link_publish_finish(const link_writer_view& w, loop_state* loop) {
  if (threadIdx.x != 0 || (loop != nullptr && loop->released == 0U)) return;
  const std::uint64_t seq = *static_cast<const volatile std::uint64_t*>(w.next) + 1;
  std::byte* slot = link_slot(w, seq);
  store_relaxed_system(*reinterpret_cast<std::uint64_t*>(slot + sizeof(std::uint64_t)),
                       *static_cast<const volatile std::uint64_t*>(w.started));
  store_release_system(*reinterpret_cast<std::uint64_t*>(slot), seq);
  store_release_system(*reinterpret_cast<std::uint64_t*>(w.ring), seq);  // the head
  *w.next = seq;
  if (loop != nullptr) device::stamp(loop, stage::commit);
}

namespace {

constexpr unsigned publish_threads = 256;
// One block's share of a publish at least this many bytes (each thread copies 16-byte words),
// and at most this many blocks: a 1080p RGBA frame (8.3 MB) takes 254 blocks, a 224x224x3
// float tensor (602 KB) 19, a small sample one.
constexpr std::size_t publish_share = std::size_t{publish_threads} * 16 * 8;
constexpr unsigned most_publish_blocks = 264;

__global__ void __launch_bounds__(publish_threads)
    link_publish_kernel(link_writer_view w, loop_state* loop, const std::byte* in) {
  device::let_next_kernel_start();
  link_publish_part(w, loop, in);
  __shared__ bool last;
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device> arrivals(*w.arrivals);
    last = arrivals.fetch_add(1U, cuda::memory_order_acq_rel) + 1U == gridDim.x;
  }
  resident::device::sync_block();
  if (!last) return;
  link_publish_finish(w, loop);
  if (threadIdx.x == 0) {
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*w.arrivals)
        .store(0U, cuda::memory_order_relaxed);
  }
}

}  // namespace

unsigned link_publish_blocks(std::size_t bytes) noexcept {
  const std::size_t blocks = (bytes + publish_share - 1) / publish_share;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, most_publish_blocks));
}

void launch_link_publish(const link_writer_view& w, loop_state* loop, const std::byte* in,
                         cudaStream_t s) {
  link_publish_kernel<<<link_publish_blocks(w.bytes), publish_threads, 0, s>>>(w, loop, in);
  RESIDENT_CUDA_CHECK_LAUNCH("link_publish_kernel");
}

}  // namespace resident::io::detail

namespace resident::io {

/// io.link_tx's device form: every block copies its share, and the last one to finish stamps
/// (one phase ending with last-block work: nothing later in the pass reads what it writes).
struct link_tx_form {
  static constexpr const char* name = "io.link_tx";
  struct args {
    link_writer_view link;
    const std::byte* in;
  };
  __device__ static void run(const args& a, const form_context& ctx) {
    detail::link_publish_part(a.link, ctx.loop, a.in);
  }
  __device__ static void finish(const args& a, const form_context& ctx) {
    detail::link_publish_finish(a.link, ctx.loop);
  }
};

std::optional<device_form> link_rx::persistent_form() const {
  return device_form::of<mailbox_rx_form>({_link->consumer_view(), bound<std::byte>("sample")},
                                          &persistent_kernels<link_tx_form>());
}

std::optional<device_form> link_tx::persistent_form() const {
  return device_form::of<link_tx_form>({_link->producer_view(), bound<const std::byte>("in")},
                                       &persistent_kernels<link_tx_form>())
      .with_phase_end(0, phase_end::last_block);
}

}  // namespace resident::io
