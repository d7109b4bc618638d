#pragma once
// The CUDA driver calls SM partitions need (green contexts and MPS execution affinity), resolved at
// run time through the runtime's cudaGetDriverEntryPointByVersion: resident never links libcuda, so
// every binary still starts (and the GPU tests skip) on machines without a driver.

#include <cuda.h>

namespace resident::partition::detail {

struct driver_api {
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*device_get_dev_resource)(CUdevice, CUdevResource*, CUdevResourceType);
  CUresult (*dev_sm_resource_split_by_count)(CUdevResource*, unsigned int*, const CUdevResource*,
                                             CUdevResource*, unsigned int, unsigned int);
  CUresult (*dev_resource_generate_desc)(CUdevResourceDesc*, CUdevResource*, unsigned int);
  CUresult (*green_ctx_create)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned int);
  CUresult (*green_ctx_destroy)(CUgreenCtx);
  CUresult (*ctx_from_green_ctx)(CUcontext*, CUgreenCtx);
  CUresult (*green_ctx_stream_create)(CUstream*, CUgreenCtx, unsigned int, int);
  CUresult (*ctx_get_current)(CUcontext*);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*graph_conditional_handle_create)(CUgraphConditionalHandle*, CUgraph, CUcontext,
                                              unsigned int, unsigned int);
  CUresult (*get_error_string)(CUresult, const char**);
  CUresult (*graph_add_node)(CUgraphNode*, CUgraph, const CUgraphNode*, const CUgraphEdgeData*,
                             size_t, CUgraphNodeParams*);
  // MPS partitions: contexts with an SM-count execution affinity.
  CUresult (*device_get_exec_affinity_support)(int*, CUexecAffinityType, CUdevice);
  CUresult (*ctx_create)(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice);  // v4 (12.5)
  CUresult (*ctx_destroy)(CUcontext);
  CUresult (*ctx_push_current)(CUcontext);
  CUresult (*ctx_pop_current)(CUcontext*);
  CUresult (*ctx_get_exec_affinity)(CUexecAffinityParam*, CUexecAffinityType);
  CUresult (*stream_create_with_priority)(CUstream*, unsigned int, int);
};

/// Resolved once; throws resident::cuda_error naming the symbol that could not be found.
[[nodiscard]] const driver_api& driver();

/// Throws partition_error naming `call` and the driver's message.
void check(CUresult r, const char* call);

/// The driver's handle for a device ordinal, after the runtime has made its primary context
/// (green contexts retain it; making it once here keeps that cost out of every partition).
[[nodiscard]] CUdevice device_handle(int ordinal);

/// Pushes a context onto the calling thread's stack for one scope (driver calls that act on the
/// current context: stream creation, execution-affinity queries).
class pushed_context {
 public:
  explicit pushed_context(CUcontext ctx);
  pushed_context(const pushed_context&) = delete;
  pushed_context& operator=(const pushed_context&) = delete;
  ~pushed_context();  // pops, never throws
};

}  // namespace resident::partition::detail

#define RESIDENT_CU_TRY(call) ::resident::partition::detail::check((call), #call)
