#pragma once
// A block-wide barrier that is valid after code only some threads ran.

namespace resident::device {

/// __syncthreads() compiles to an aligned barrier (bar.sync, that is barrier.sync.aligned): the
/// threads of a warp must execute it together, converged. After a region only some threads ran
/// (thread 0 polling a word, a loop whose trip count differs by thread) nothing promises that
/// the warp has reconverged, not even a __syncwarp() before it: the behaviour is undefined, and
/// compute-sanitizer's synccheck reports "divergent thread(s) in warp" and kills the kernel.
/// The non-aligned form (barrier.sync 0) waits per thread, as cooperative groups' own block and
/// grid barriers do; it orders memory as __syncthreads() does. Every thread of the block calls
/// it, as with __syncthreads().
__device__ __forceinline__ void sync_block() { __barrier_sync(0); }

/// Lane 0's `value`, returned to every lane of the calling warp (all 32 lanes call it together).
/// A wait that one thread would do alone (polling a word, then a barrier) is better done by its
/// whole warp, each poll's word handed out with this: the warp leaves the loop together and
/// reaches the barrier converged. A warp that arrives split (one lane still polling while its
/// other lanes wait) is what compute-sanitizer's synccheck reports as "divergent thread(s) in
/// warp", and nothing in CUDA promises that it reconverges before the barrier.
template <class T>
__device__ __forceinline__ T from_lane_0(T value) {
  return __shfl_sync(0xFFFFFFFFU, value, 0);
}

}  // namespace resident::device
