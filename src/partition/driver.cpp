#include "partition/driver.hpp"

#include <cuda_runtime_api.h>

#include <cassert>
#include <stdexcept>
#include <string>

#include "resident/cuda/error.hpp"
#include "resident/partition/green_context.hpp"

namespace resident::partition::detail {

namespace {

// `version`: the CUDA version whose signature of `symbol` the pointer type declares.
template <class F>
void resolve(F*& out, const char* symbol, unsigned version = CUDA_VERSION) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  RESIDENT_CUDA_TRY(
      cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    throw partition_error(std::string("the CUDA driver has no ") + symbol +
                          " (SM partitions need a driver for CUDA 12.5 or newer)");
  }
  out = reinterpret_cast<F*>(fn);
}

driver_api load() {
  driver_api d{};
  resolve(d.device_get, "cuDeviceGet");
  resolve(d.device_get_dev_resource, "cuDeviceGetDevResource");
  resolve(d.dev_sm_resource_split_by_count, "cuDevSmResourceSplitByCount");
  resolve(d.dev_resource_generate_desc, "cuDevResourceGenerateDesc");
  resolve(d.green_ctx_create, "cuGreenCtxCreate");
  resolve(d.green_ctx_destroy, "cuGreenCtxDestroy");
  resolve(d.ctx_from_green_ctx, "cuCtxFromGreenCtx");
  resolve(d.green_ctx_stream_create, "cuGreenCtxStreamCreate");
  resolve(d.ctx_get_current, "cuCtxGetCurrent");
  resolve(d.ctx_set_current, "cuCtxSetCurrent");
  resolve(d.graph_conditional_handle_create, "cuGraphConditionalHandleCreate");
  resolve(d.get_error_string, "cuGetErrorString");
  resolve(d.graph_add_node, "cuGraphAddNode");
  resolve(d.device_get_exec_affinity_support, "cuDeviceGetExecAffinitySupport");
  // cuCtxCreate has changed signature (v3 in 11.4, v4 in 12.5): ask for the one declared.
  resolve(d.ctx_create, "cuCtxCreate", 12050);
  resolve(d.ctx_destroy, "cuCtxDestroy");
  resolve(d.ctx_push_current, "cuCtxPushCurrent");
  resolve(d.ctx_pop_current, "cuCtxPopCurrent");
  resolve(d.ctx_get_exec_affinity, "cuCtxGetExecAffinity");
  resolve(d.stream_create_with_priority, "cuStreamCreateWithPriority");
  return d;
}

}  // namespace

const driver_api& driver() {
  static const driver_api d = load();
  return d;
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (driver().get_error_string(r, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown";
  throw partition_error(std::string(call) + " failed: " + text + " (CUresult " +
                        std::to_string(static_cast<int>(r)) + ")");
}

CUdevice device_handle(int ordinal) {
  RESIDENT_CUDA_TRY(cudaSetDevice(ordinal));
  RESIDENT_CUDA_TRY(cudaFree(nullptr));
  CUdevice dev{};
  RESIDENT_CU_TRY(driver().device_get(&dev, ordinal));
  return dev;
}

pushed_context::pushed_context(CUcontext ctx) { RESIDENT_CU_TRY(driver().ctx_push_current(ctx)); }

pushed_context::~pushed_context() {
  CUcontext popped{};
  const CUresult r = driver().ctx_pop_current(&popped);
  assert(r == CUDA_SUCCESS);
  (void)r;
}

}  // namespace resident::partition::detail
