#pragma once
// The CUDA driver calls green contexts need, resolved at run time through the runtime's
// cudaGetDriverEntryPointByVersion: resident never links libcuda, so every binary still starts
// (and the GPU tests skip) on machines without a driver.

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
};

/// Resolved once; throws resident::cuda_error naming the symbol that could not be found.
[[nodiscard]] const driver_api& driver();

/// Throws partition_error naming `call` and the driver's message.
void check(CUresult r, const char* call);

}  // namespace resident::partition::detail

#define RESIDENT_CU_TRY(call) ::resident::partition::detail::check((call), #call)
