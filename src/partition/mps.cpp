// The MPS backend: partitions as contexts with an SM-count execution affinity, and whether this
// process can make them.

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "partition/driver.hpp"
#include "resident/cuda/error.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::partition {

namespace {

std::string how_to_start_mps() {
  const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  return std::string(
             "MPS partitions need the MPS control daemon running before this process "
             "first uses CUDA, on a Volta or newer GPU: start it with "
             "`nvidia-cuda-mps-control -d` (stop it with `echo quit | "
             "nvidia-cuda-mps-control`), with CUDA_MPS_PIPE_DIRECTORY the same for "
             "the daemon and this process (here: ") +
         (pipe != nullptr ? std::string(pipe) : std::string("unset, so /tmp/nvidia-mps")) +
         "); or use the green backend";
}

// The budget the driver granted a context: the ask rounded up to its granularity.
int granted_sms(CUcontext ctx) {
  const detail::pushed_context current(ctx);
  CUexecAffinityParam got{};
  RESIDENT_CU_TRY(detail::driver().ctx_get_exec_affinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT));
  return static_cast<int>(got.param.smCount.val);
}

}  // namespace

mps_support mps_available(int device) {
  mps_support out;
  try {
    const CUdevice dev = detail::device_handle(device);
    int supported = 0;
    RESIDENT_CU_TRY(detail::driver().device_get_exec_affinity_support(
        &supported, CU_EXEC_AFFINITY_TYPE_SM_COUNT, dev));
    out.available = supported != 0;
    if (!out.available) {
      out.reason = "device " + std::to_string(device) +
                   " offers this process no SM-count execution affinity. " + how_to_start_mps();
    }
  } catch (const std::exception& e) {
    out.available = false;
    out.reason = std::string("cannot ask device ") + std::to_string(device) +
                 " about execution affinity: " + e.what();
  }
  return out;
}

std::shared_ptr<partition_set> partition_set::split_mps(const std::vector<int>& sm_counts,
                                                        const split_options& o) {
  if (const mps_support mps = mps_available(o.device); !mps) {
    throw partition_error("split: the mps backend is not available: " + mps.reason);
  }
  const CUdevice dev = detail::device_handle(o.device);
  auto set = std::shared_ptr<partition_set>(new partition_set());
  set->_self = set;
  set->_backend = partition_backend::mps;
  set->_info.device = o.device;
  RESIDENT_CUDA_TRY(
      cudaDeviceGetAttribute(&set->_info.sm_count, cudaDevAttrMultiProcessorCount, o.device));
  int granted = 0;
  for (std::size_t i = 0; i < sm_counts.size(); ++i) {
    const int count = sm_counts[i];
    if (count > set->_info.sm_count) {
      throw partition_error("split: partition " + std::to_string(i) + " asks for " +
                            std::to_string(count) + " SMs; the device has " +
                            std::to_string(set->_info.sm_count));
    }
    // Owned from the start: whatever throws below, the destructor destroys the context.
    auto part = std::unique_ptr<green_context>(new green_context(o.device, static_cast<int>(i)));
    CUexecAffinityParam affinity{};
    affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
    affinity.param.smCount.val = static_cast<unsigned>(count);
    CUctxCreateParams params{};
    params.execAffinityParams = &affinity;
    params.numExecAffinityParams = 1;
    RESIDENT_CU_TRY(detail::driver().ctx_create(&part->_context, &params, 0, dev));
    // cuCtxCreate made the new context current to this thread; give the thread its old one back.
    CUcontext popped{};
    RESIDENT_CU_TRY(detail::driver().ctx_pop_current(&popped));
    part->_sm_count = granted_sms(part->_context);
    granted += part->_sm_count;
    set->_parts.push_back(std::move(part));
  }
  set->_remaining = std::max(0, set->_info.sm_count - granted);
  return set;
}

}  // namespace resident::partition
