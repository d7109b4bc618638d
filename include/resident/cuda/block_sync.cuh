#pragma once
// The block-wide barrier of the runtime's kernels, in one place.

namespace resident::device {

/// Every thread of the block waits here; memory is ordered as by __syncthreads(), which it is.
/// It follows regions only some threads ran (thread 0 polling a word): the barrier itself is not
/// in conditional code, every thread reaches it, which is what __syncthreads() asks.
///
/// compute-sanitizer's synccheck reports "divergent thread(s) in warp" at any block barrier of
/// a kernel that runs in the body of a conditional graph node, with __syncthreads() and with the
/// non-aligned barrier.sync alike, even in a kernel with no divergent branch at all (see
/// docs/findings.md, "compute-sanitizer"); the runtime's `host-graph` and `while` modes run
/// their kernels in such bodies. The non-aligned form was tried here for that report and
/// changed nothing, so the barrier is the ordinary one.
__device__ __forceinline__ void sync_block() { __syncthreads(); }

}  // namespace resident::device
