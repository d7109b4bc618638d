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

}  // namespace resident::device
