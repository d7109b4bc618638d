// Device side of the emulated display: the engine kernel (one persistent block on its own
// stream: vblank clock, flip latch, raster and photodiode) and the egress kernel (gamma
// encoding into a scanout buffer, then one thread tags the buffer and requests the flip).
//
// The engine and the egress share the flip word in device memory and change it only by
// compare-and-swap, so a flip is either latched by the engine or withdrawn by the egress, never
// both. The host talks to the engine through host-mapped words with one writer each.

#include <cuda/atomic>

#include <algorithm>
#include <cstdint>

#include "display_forms.cuh"
#include "resident/app/error.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/cuda/block_sync.cuh"
#include "resident/cuda/error.hpp"
#include "resident/io/display.hpp"

namespace resident::io::detail {

namespace {

using namespace display_form;  // NOLINT: the egress device code (display_forms.cuh)
using resident::device::load_acquire_system;
using resident::device::store_relaxed_system;
using resident::device::store_release_system;

constexpr int engine_threads = 256;
constexpr int egress_threads = 256;
constexpr int egress_blocks_per_sm = 4;
// The engine's sleeps are sliced so that a stop request takes effect within this.
constexpr std::uint64_t stop_slice_ns = 50'000;
// How often a variable-refresh panel looks for a flip once it may start a scanout.
constexpr unsigned vrr_poll_ns = 200;

struct engine_params {
  std::uint64_t period_ns;      // 1 / refresh_hz: the scan time and the minimum period
  std::uint64_t max_period_ns;  // 1 / min_refresh_hz (variable refresh)
  bool variable;
  bool flip_mode;
  led_marker probe;
  std::uint32_t threshold;
  std::uint32_t event_capacity;
};

// ---- engine --------------------------------------------------------------------------------

// A stop request takes effect at once, unless a test injected display_fault::ignore_stop: then
// only stop_hold_ns after the engine first saw it (an engine that does not stop in time).
__device__ bool stop_requested(display_host_words* host) {
  if (load_acquire_system(host->stop) == 0U) return false;
  const std::uint64_t hold = load_acquire_system(host->stop_hold_ns);
  if (hold == 0) return true;
  const std::uint64_t now = globaltimer_ns();
  auto* seen = static_cast<volatile std::uint64_t*>(&host->stop_seen_ns);
  if (*seen == 0) *seen = now;
  return now - *seen >= hold;
}

// Sleeps until `until` (device clock) in slices; false when a stop request came first.
__device__ bool sleep_until(std::uint64_t until, display_host_words* host) {
  for (;;) {
    if (stop_requested(host)) return false;
    const std::uint64_t now = globaltimer_ns();
    if (now >= until) return true;
    resident::device::sleep_ns(until - now < stop_slice_ns ? until - now : stop_slice_ns);
  }
}

// Appends `e` to a host-mapped ring the host drains. The release store of the write index
// (system scope) orders the entry's stores before it, so the host never reads a half entry.
template <class E>
__device__ void push_event(E* ring, std::uint32_t capacity, std::uint64_t& written,
                           std::uint64_t* written_word, const std::uint64_t& read_word,
                           display_host_words* host, std::uint64_t& dropped, const E& e) {
  if (written - load_acquire_system(read_word) >= capacity) {
    store_relaxed_system(host->events_dropped, ++dropped);
    return;
  }
  ring[written % capacity] = e;
  ++written;
  store_release_system(*written_word, written);
}

// When the next scanout starts (thread 0). Fixed: the next point of the vblank grid after
// `last`. Variable: as soon as a flip is pending and a minimum period has passed, else after
// the maximum period. Returns 0 when a stop request came first.
__device__ std::uint64_t wait_next_scanout(const engine_params& p, std::uint64_t grid0,
                                           std::uint64_t last, const display_shared* shared,
                                           display_host_words* host) {
  if (!p.variable) {
    std::uint64_t next = last + p.period_ns;
    const std::uint64_t now = globaltimer_ns();
    if (now > next) next = grid0 + ((now - grid0) / p.period_ns + 1) * p.period_ns;  // missed
    return sleep_until(next, host) ? next : 0;
  }
  const std::uint64_t earliest = last + p.period_ns;
  const std::uint64_t rescan = last + p.max_period_ns;
  if (!sleep_until(earliest, host)) return 0;
  for (std::uint32_t polls = 0;; ++polls) {
    const std::uint64_t now = globaltimer_ns();
    // Acquire: a pending flip's pixels and tag were published before it.
    const auto w =
        flip_ref(const_cast<unsigned long long&>(shared->flip)).load(cuda::memory_order_acquire);
    if (flip_pending(w)) return now > earliest ? now : earliest;
    if (now >= rescan) return rescan;
    if ((polls & 255U) == 0 && stop_requested(host)) return 0;
    __nanosleep(vrr_poll_ns);
  }
}

// Takes a pending flip at a scanout start (thread 0): the buffer to show and, when a flip was
// latched, its request time.
__device__ std::uint32_t latch_flip(const engine_params& p, display_shared* shared,
                                    std::uint64_t& request_ns, bool& latched) {
  flip_ref flip(shared->flip);
  unsigned long long w = flip.load(cuda::memory_order_acquire);
  latched = false;
  request_ns = 0;
  while (flip_pending(w)) {
    // Front-buffer mode: the request only asks for a scanout; the buffer stays.
    const std::uint32_t show = p.flip_mode ? flip_target(w) : flip_front(w);
    if (flip.compare_exchange_weak(w, flip_word(show, false, 0), cuda::memory_order_acq_rel,
                                   cuda::memory_order_acquire)) {
      latched = true;
      request_ns = *const_cast<volatile std::uint64_t*>(&shared->request_ns[flip_target(w)]);
      return show;
    }
    // The egress withdrew the flip meanwhile (or changed nothing): look again.
  }
  return flip_front(w);
}

// Mean luma (Rec. 709 weights in 256ths) of the probe rectangle of `buffer`, read from memory
// at the moment of the call (ld.global.cv: no stale cached line). Every thread calls it.
__device__ std::uint64_t probe_luma_sum(const display_view& v, std::uint32_t buffer,
                                        const led_marker& probe) {
  __shared__ unsigned long long sum;
  if (threadIdx.x == 0) sum = 0;
  resident::device::sync_block();
  const std::uint8_t* base = v.buffers[buffer];
  const std::uint32_t n = probe.width * probe.height;
  unsigned long long mine = 0;
  for (std::uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const std::uint32_t x = probe.x + i % probe.width;
    const std::uint32_t y = probe.y + i / probe.width;
    const unsigned px =
        __ldcv(reinterpret_cast<const unsigned*>(base + std::size_t{y} * v.pitch) + x);
    const unsigned r = px & 0xFFU;
    const unsigned g = (px >> 8) & 0xFFU;
    const unsigned b = (px >> 16) & 0xFFU;
    mine += (54U * r + 183U * g + 19U * b + 128U) >> 8;
  }
  atomicAdd(&sum, mine);
  resident::device::sync_block();
  return sum;
}

__global__ void __launch_bounds__(engine_threads)
    display_engine_kernel(display_view v, engine_params p, display_host_words* host,
                          scanout_event* scanouts, photodiode_event* photodiode) {
  __shared__ int command;  // 0: stop, 1: read the probe, 2: no probe
  __shared__ std::uint32_t shown;
  // Thread 0's state across scanouts.
  std::uint64_t scan_written = host->scanouts_written;
  std::uint64_t pd_written = host->photodiode_written;
  std::uint64_t dropped = host->events_dropped;
  std::uint64_t count = host->scanouts;
  std::uint64_t latched_count = host->flips_latched;
  std::uint64_t grid0 = 0;
  std::uint64_t last = 0;
  std::uint64_t probe_time = 0;
  bool lit = false;
  bool first = true;
  if (threadIdx.x == 0) store_release_system(host->started, std::uint64_t{1});
  for (;;) {
    if (threadIdx.x == 0) {
      command = 0;
      // The first scanout starts at once; it anchors the fixed grid.
      const std::uint64_t start =
          first ? (grid0 = globaltimer_ns()) : wait_next_scanout(p, grid0, last, v.shared, host);
      first = false;
      if (start != 0) {
        last = start;
        std::uint64_t request_ns = 0;
        bool latched = false;
        shown = latch_flip(p, v.shared, request_ns, latched);
        const std::uint64_t frame = *const_cast<volatile std::uint64_t*>(&v.shared->tag[shown]);
        push_event(scanouts, p.event_capacity, scan_written, &host->scanouts_written,
                   host->scanouts_read, host, dropped,
                   scanout_event{start, frame, request_ns, shown, latched ? 1U : 0U});
        store_relaxed_system(host->scanouts, ++count);
        if (latched) store_relaxed_system(host->flips_latched, ++latched_count);
        command = 2;
        if (p.probe.width != 0) {
          // The raster reaches the probe's first row at its line time.
          probe_time = start + p.period_ns * p.probe.y / v.height;
          command = sleep_until(probe_time, host) ? 1 : 0;
          probe_time = globaltimer_ns();
        }
      }
    }
    resident::device::sync_block();
    if (command == 0) break;
    if (command == 1) {
      const std::uint64_t sum = probe_luma_sum(v, shown, p.probe);
      if (threadIdx.x == 0) {
        const bool now_lit = sum > std::uint64_t{p.threshold} * p.probe.width * p.probe.height;
        if (now_lit && !lit) {
          // The tag as of the read: in front-buffer mode the egress may have rewritten the
          // buffer (pixels, then tag) since the scanout began.
          const std::uint64_t frame = *const_cast<volatile std::uint64_t*>(&v.shared->tag[shown]);
          push_event(photodiode, p.event_capacity, pd_written, &host->photodiode_written,
                     host->photodiode_read, host, dropped, photodiode_event{probe_time, frame});
        }
        lit = now_lit;
      }
    }
    resident::device::sync_block();
  }
}

template <bool Rgba16>
__global__ void __launch_bounds__(egress_threads)
    display_tx_kernel(display_view v, const void* rgb, const std::uint8_t* lut,
                      const frame_integrity* integrity, loop_state* loop) {
  resident::device::let_next_kernel_start();
  resident::device::wait_for_previous_kernels();
  __shared__ bool ok;
  __shared__ bool last;
  __shared__ std::uint32_t target;
  display_shared* sh = v.shared;
  if (threadIdx.x == 0) {
    ok = integrity->ok();
    if (ok) target = choose_target_once(v);
  }
  resident::device::sync_block();
  if (ok) {
    encode_pixels<Rgba16>(rgb, v.buffers[target], std::size_t{v.width} * v.height, lut);
  }
  resident::device::sync_block();
  if (threadIdx.x == 0) {
    // The block's pixels (ordered before this by the barrier; the fence is cumulative) at
    // device scope before its arrival: one fence per block, not one per thread.
    __threadfence();
    last = atomicAdd(&sh->done, 1U) == gridDim.x - 1;
  }
  resident::device::sync_block();
  if (!last || threadIdx.x != 0) return;
  __threadfence();  // every block's pixels (seen through the counter) before the flip
  if (ok) {
    commit_frame(v, target, loop);
  } else {
    count_refused(sh, *integrity);
  }
  // Ready for the next frame (the next launch starts after this kernel ends).
  reset_target_choice(sh);
  sh->done = 0;
}

}  // namespace

void launch_display_engine(const display_view& view, const display_config& c,
                           display_host_words* host, void* scanout_ring, void* photodiode_ring,
                           cudaStream_t s) {
  engine_params p{};
  p.period_ns = static_cast<std::uint64_t>(1e9 / c.refresh_hz + 0.5);
  p.max_period_ns = static_cast<std::uint64_t>(1e9 / c.min_refresh_hz + 0.5);
  p.variable = c.sync == display_sync::variable;
  p.flip_mode = c.mode == present_mode::flip;
  p.probe = c.probe;
  p.threshold = c.probe_threshold;
  p.event_capacity = static_cast<std::uint32_t>(c.event_capacity);
  display_engine_kernel<<<1, engine_threads, 0, s>>>(
      view, p, host, static_cast<scanout_event*>(scanout_ring),
      static_cast<photodiode_event*>(photodiode_ring));
  RESIDENT_CUDA_CHECK_LAUNCH("display_engine_kernel");
}

unsigned display_tx_blocks(const display_view& view) {
  const std::size_t units = (std::size_t{view.width} * view.height + 3) / 4;
  // A few blocks per SM, each looping over its share: every block is resident at once (the
  // first block's buffer choice is waited on by the others), and fewer blocks mean fewer
  // arrivals on the shared counters.
  int device = 0;
  int sms = 0;
  RESIDENT_CUDA_TRY(cudaGetDevice(&device));
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(
      std::clamp<std::size_t>((units + egress_threads - 1) / egress_threads, 1,
                              std::size_t(std::max(sms, 1)) * egress_blocks_per_sm));
}

void launch_display_tx(const display_view& view, const void* rgb, bool rgba16,
                       const std::uint8_t* lut, const frame_integrity* integrity, loop_state* loop,
                       unsigned blocks, cudaStream_t s) {
  if (rgba16) {
    display_tx_kernel<true><<<blocks, egress_threads, 0, s>>>(view, rgb, lut, integrity, loop);
    RESIDENT_CUDA_CHECK_LAUNCH("display_tx_kernel<rgba16>");
  } else {
    display_tx_kernel<false><<<blocks, egress_threads, 0, s>>>(view, rgb, lut, integrity, loop);
    RESIDENT_CUDA_CHECK_LAUNCH("display_tx_kernel<rgba8>");
  }
}

}  // namespace resident::io::detail

namespace resident::io {

std::optional<device_form> display_tx::persistent_form() const {
  if (lut() == nullptr) {
    throw composition_error("operator '" + name() +
                            "': persistent mode found it not initialized (no encoding table)");
  }
  detail::display_tx_args a{_display->device_view(), bound_memory("rgb"), lut(),
                            bound<const frame_integrity>("integrity"), _rgba16};
  return device_form::of<display_tx_form>(a, nullptr).with_phases(detail::display_form_phases);
}

}  // namespace resident::io
