#pragma once
// Keeping a real-time loop's working set in L2 while best-effort work streams through it.
//
// A latency-bound RT kernel (few blocks, each walking its weights) runs much longer when its
// weights were evicted by BE kernels between iterations. CUDA can set part of L2 aside for
// "persisting" lines and mark the accesses of chosen kernels to one address range as
// persisting: an access-policy window on the kernel (a launch, stream or graph-node attribute).

#include <cuda_runtime_api.h>

#include <cstddef>

namespace resident {

/// Sets aside up to `bytes` of L2 for persisting lines (cudaLimitPersistingL2CacheSize) for the
/// object's lifetime, clamped to what the device allows; the destructor restores the previous
/// set-aside and returns the persisting lines to normal. A per-context limit: it changes no
/// device setting that outlives the process. Move-only.
class l2_set_aside {
 public:
  explicit l2_set_aside(std::size_t bytes);
  l2_set_aside(l2_set_aside&& other) noexcept;
  l2_set_aside& operator=(l2_set_aside&& other) noexcept;
  l2_set_aside(const l2_set_aside&) = delete;
  l2_set_aside& operator=(const l2_set_aside&) = delete;
  ~l2_set_aside();

  /// Bytes the runtime reports as set aside (0 where the device has no persisting L2).
  [[nodiscard]] std::size_t granted() const noexcept { return _granted; }

 private:
  void release() noexcept;

  bool _active{false};
  std::size_t _previous{};
  std::size_t _granted{};
};

/// A window that makes accesses to [base, base + bytes) persisting (hit ratio 1) and the rest
/// of the kernel's accesses normal. invalid_argument for a null base or zero bytes, or bytes
/// over the device's cudaDevAttrMaxAccessPolicyWindowSize.
[[nodiscard]] cudaAccessPolicyWindow persisting_window(const void* base, std::size_t bytes);

/// While `capturing` is in stream capture: puts `window` on the kernel nodes the capture added
/// last (its current dependencies, i.e. the launch just made), and returns how many it marked
/// (0 when the last node was not a kernel, e.g. a memcpy). logic_error when the stream is not
/// capturing; cuda_error naming the call when the runtime refuses.
int mark_captured_kernels(cudaStream_t capturing, const cudaAccessPolicyWindow& window);

}  // namespace resident
