// green_context::sm_mask: which SMs a partition runs on, found by looking.

#include "resident/cuda/buffers.hpp"
#include "resident/cuda/error.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::partition {

namespace {

__global__ void sm_probe_kernel(std::uint32_t* mask) {
  if (threadIdx.x != 0) return;
  std::uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  atomicOr(mask + ((sm >> 5) & 7U), 1U << (sm & 31U));
  // Stay a moment, so the next blocks spread over the partition's other SMs.
  std::uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    std::uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > 20'000) break;
  }
}

}  // namespace

std::array<std::uint32_t, 8> green_context::sm_mask() const {
  std::array<std::uint32_t, 8> out{};
  // Runtime calls on the partition's stream are made with the partition current, and the
  // probe's buffer is made (and freed) there too: an MPS partition is a context of its own.
  current_scope scope(this);
  device_buffer words(sizeof(out));
  stream s = make_stream();
  RESIDENT_CUDA_TRY(cudaMemsetAsync(words.data(), 0, words.size(), s.get()));
  sm_probe_kernel<<<static_cast<unsigned>(_sm_count * 8), 32, 0, s.get()>>>(
      words.data_as<std::uint32_t>());
  RESIDENT_CUDA_CHECK_LAUNCH("sm_probe_kernel");
  RESIDENT_CUDA_TRY(
      cudaMemcpyAsync(out.data(), words.data(), sizeof(out), cudaMemcpyDeviceToHost, s.get()));
  s.synchronize();
  return out;
}

}  // namespace resident::partition
