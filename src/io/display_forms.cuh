#pragma once
// display_tx's device code: the buffer choice, the gamma encoding and the frame's commit (tag,
// flip request, commit record), run by the egress kernel (the first block to arrive chooses,
// the last one commits) and by the persistent mode's device form (block 0 chooses, a grid
// barrier, every block encodes, a grid barrier, block 0 commits). Include only from .cu files.

#include <cuda/atomic>

#include "io/forms.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/app/persistent_kernel.cuh"
#include "resident/io/display.hpp"

namespace resident::io::detail {

namespace display_form {

using resident::device::globaltimer_ns;
using flip_ref = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;

// Which buffer this frame writes (one thread of the first block to arrive). Flip mode: the
// back buffer; when a flip we requested is still pending, withdraw it (the engine did not take
// it yet) and overwrite that buffer with the newer frame. Front-buffer mode: the front.
__device__ inline std::uint32_t choose_target(const display_view& v) {
  flip_ref flip(v.shared->flip);
  unsigned long long w = flip.load(cuda::memory_order_acquire);
  if (v.mode == present_mode::front_buffer) return flip_front(w);
  for (;;) {
    if (!flip_pending(w)) return 1U - flip_front(w);
    if (flip.compare_exchange_weak(w, flip_word(flip_front(w), false, 0),
                                   cuda::memory_order_acq_rel, cuda::memory_order_acquire)) {
      ++v.shared->flips_replaced;
      return flip_target(w);
    }
  }
}

// The buffer a frame written by a grid of blocks goes to, chosen once: the first block to
// arrive chooses (it is running, so the others' wait on it is bounded). Thread 0 of every block
// calls it; after the grid's last block, reset_target_choice makes it ready for the next frame.
__device__ inline std::uint32_t choose_target_once(const display_view& v) {
  using word = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;
  display_shared* sh = v.shared;
  if (atomicAdd(&sh->arrived, 1U) == 0U) {
    sh->target = choose_target(v);
    word(sh->ready).store(1U, cuda::memory_order_release);
  } else {
    while (word(sh->ready).load(cuda::memory_order_acquire) == 0U) {
    }
  }
  return *const_cast<volatile std::uint32_t*>(&sh->target);
}

__device__ inline void reset_target_choice(display_shared* sh) {
  sh->arrived = 0;
  sh->ready = 0;
}

// A frame whose integrity verdict is not ok: nothing written, nothing stamped, never displayed;
// counted, and apart when the bridge rewrote its slot while it was read. One thread.
__device__ inline void count_refused(display_shared* sh, const frame_integrity& verdict) {
  ++sh->corrupt_frames;
  if (verdict.overwritten != 0) ++sh->rewritten_frames;
}

// The frame's control step, by one thread after every block wrote its pixels: tag the buffer,
// request the flip (release: the pixels and the tag before it), record the commit.
__device__ inline void commit_frame(const display_view& v, std::uint32_t target, loop_state* loop) {
  display_shared* sh = v.shared;
  const std::uint64_t frame = loop != nullptr ? resident::device::current_sample(loop) : 0;
  sh->tag[target] = frame;
  sh->request_ns[target] = globaltimer_ns();
  ++sh->frames_written;
  flip_ref flip(sh->flip);
  unsigned long long w = flip.load(cuda::memory_order_relaxed);
  while (!flip.compare_exchange_weak(w, flip_word(flip_front(w), true, target),
                                     cuda::memory_order_release, cuda::memory_order_relaxed)) {
  }
  std::uint64_t now = 0;
  if (loop != nullptr) {
    resident::device::stamp(loop, stage::commit);
    now = loop->stamp_ns[static_cast<std::size_t>(stage::commit)];  // one time for both
  } else {
    now = globaltimer_ns();
  }
  const std::uint64_t n = sh->commits;
  v.commit_ring[n % v.commit_capacity] = display_commit{frame, now};
  __threadfence();  // the entry before the count the host reads first
  sh->commits = n + 1;
}

__device__ __forceinline__ unsigned encode3(unsigned r, unsigned g, unsigned b,
                                            const std::uint8_t* lut) {
  return unsigned{__ldg(lut + r)} | unsigned{__ldg(lut + g)} << 8 | unsigned{__ldg(lut + b)} << 16 |
         0xFF000000U;
}

// Gamma-encodes pixels [4 * unit, 4 * unit + 4) (and a tail of single pixels) into `out`, the
// grid's threads taking units in turn.
template <bool Rgba16>
__device__ void encode_pixels(const void* rgb, std::uint8_t* out, std::size_t pixels,
                              const std::uint8_t* lut) {
  const std::size_t units = pixels / 4;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  auto* out4 = reinterpret_cast<uint4*>(out);
  for (std::size_t u = first; u < units; u += stride) {
    uint4 o;
    if constexpr (Rgba16) {
      // Four RGBA16 pixels: two 16-byte loads; each 32-bit word holds two channels.
      const uint4 a = __ldcg(reinterpret_cast<const uint4*>(rgb) + 2 * u);
      const uint4 b = __ldcg(reinterpret_cast<const uint4*>(rgb) + 2 * u + 1);
      o.x = encode3(a.x & 0xFFFFU, a.x >> 16, a.y & 0xFFFFU, lut);
      o.y = encode3(a.z & 0xFFFFU, a.z >> 16, a.w & 0xFFFFU, lut);
      o.z = encode3(b.x & 0xFFFFU, b.x >> 16, b.y & 0xFFFFU, lut);
      o.w = encode3(b.z & 0xFFFFU, b.z >> 16, b.w & 0xFFFFU, lut);
    } else {
      const uint4 a = __ldcg(reinterpret_cast<const uint4*>(rgb) + u);
      o.x = encode3(a.x & 0xFFU, (a.x >> 8) & 0xFFU, (a.x >> 16) & 0xFFU, lut);
      o.y = encode3(a.y & 0xFFU, (a.y >> 8) & 0xFFU, (a.y >> 16) & 0xFFU, lut);
      o.z = encode3(a.z & 0xFFU, (a.z >> 8) & 0xFFU, (a.z >> 16) & 0xFFU, lut);
      o.w = encode3(a.w & 0xFFU, (a.w >> 8) & 0xFFU, (a.w >> 16) & 0xFFU, lut);
    }
    out4[u] = o;
  }
  for (std::size_t i = units * 4 + first; i < pixels; i += stride) {
    unsigned r, g, b;
    if constexpr (Rgba16) {
      const auto* px = static_cast<const std::uint16_t*>(rgb) + 4 * i;
      r = px[0], g = px[1], b = px[2];
    } else {
      const auto* px = static_cast<const std::uint8_t*>(rgb) + 4 * i;
      r = px[0], g = px[1], b = px[2];
    }
    reinterpret_cast<unsigned*>(out)[i] = encode3(r, g, b, lut);
  }
}

/// The persistent mode's form. Phase 0, thread 0 of block 0: the buffer (when the frame is
/// whole). Phase 1, every thread: the pixels. Phase 2, thread 0 of block 0: the commit, or
/// the count of a corrupt frame.
__device__ inline void run(const display_tx_args& a, unsigned phase, loop_state* loop) {
  display_shared* sh = a.view.shared;
  const bool ok = a.integrity->ok();
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  if (phase == 0) {
    if (leader && ok) sh->target = choose_target(a.view);
  } else if (phase == 1) {
    if (!ok) return;
    const std::uint32_t target = *const_cast<volatile std::uint32_t*>(&sh->target);
    const std::size_t pixels = std::size_t{a.view.width} * a.view.height;
    if (a.rgba16) {
      encode_pixels<true>(a.rgb, a.view.buffers[target], pixels, a.lut);
    } else {
      encode_pixels<false>(a.rgb, a.view.buffers[target], pixels, a.lut);
    }
  } else if (leader) {
    if (ok) {
      commit_frame(a.view, *const_cast<volatile std::uint32_t*>(&sh->target), loop);
    } else {
      count_refused(sh, *a.integrity);
    }
  }
}

}  // namespace display_form

}  // namespace resident::io::detail

namespace resident::io {

/// io.display_tx's device form (detail::display_form::run): three phases.
struct display_tx_form {
  static constexpr const char* name = "io.display_tx";
  using args = detail::display_tx_args;
  __device__ static void run(const args& a, const form_context& ctx) {
    detail::display_form::run(a, ctx.phase, ctx.loop);
  }
};

}  // namespace resident::io
