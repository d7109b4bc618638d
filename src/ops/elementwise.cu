#include <string>

#include "app/checked_bytes.hpp"
#include "ops/launch.cuh"
#include "resident/ops/vector_forms.cuh"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"
#include "resident/ops/vector_ops.hpp"

namespace resident::ops {

namespace {

constexpr int threads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 ? b : 65535);  // grid-stride loops cover the rest
}

__device__ std::int64_t first_thread() { return blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; }
__device__ std::int64_t all_threads() { return std::int64_t{gridDim.x} * blockDim.x; }

__global__ void affine_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n,
                              float scale, float offset) {
  detail::begin_dependent_kernel();
  detail::affine_range(in, out, n, scale, offset, first_thread(), all_threads());
}

__global__ void square_kernel(const float* __restrict__ in, float* __restrict__ out,
                              std::int64_t n) {
  detail::begin_dependent_kernel();
  detail::square_range(in, out, n, first_thread(), all_threads());
}

__global__ void copy_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n) {
  detail::begin_dependent_kernel();
  detail::copy_range(in, out, n, first_thread(), all_threads());
}

std::int64_t elements_param(OperatorSpec& spec) {
  return spec.param<std::int64_t>("elements", 4096, "number of fp32 values per sample");
}

/// The bytes of `elements` fp32 values; a count that is not positive, or whose byte count would
/// pass detail::max_buffer_bytes (or wrap around), is an error naming the parameter.
std::size_t element_bytes(const OperatorSpec& spec, std::int64_t elements) {
  return ::resident::detail::checked_bytes(
      elements, sizeof(float), "operator '" + spec.operator_name() + "': parameter 'elements'");
}

}  // namespace

namespace detail {

void launch_affine(const float* in, float* out, std::int64_t n, float scale, float offset,
                   cudaStream_t s, bool programmatic) {
  launch_kernel("affine_kernel", affine_kernel, dim3(blocks_for(n)), dim3(threads), s, programmatic,
                in, out, n, scale, offset);
}

void launch_square(const float* in, float* out, std::int64_t n, cudaStream_t s, bool programmatic) {
  launch_kernel("square_kernel", square_kernel, dim3(blocks_for(n)), dim3(threads), s, programmatic,
                in, out, n);
}

void launch_copy(const float* in, float* out, std::int64_t n, cudaStream_t s, bool programmatic) {
  launch_kernel("copy_kernel", copy_kernel, dim3(blocks_for(n)), dim3(threads), s, programmatic, in,
                out, n);
}

// Same grid as the launches above, so a retargeted node matches what a fresh capture would hold.
affine_node make_affine_node(const float* in, float* out, std::int64_t n, float scale,
                             float offset) {
  return affine_node(affine_kernel, dim3(blocks_for(n)), dim3(threads), 0, in, out, n, scale,
                     offset);
}

square_node make_square_node(const float* in, float* out, std::int64_t n) {
  return square_node(square_kernel, dim3(blocks_for(n)), dim3(threads), 0, in, out, n);
}

}  // namespace detail

void copy::setup(OperatorSpec& spec) {
  _elements = elements_param(spec);
  const auto bytes = element_bytes(spec, _elements);
  const std::string method =
      spec.param<std::string>("method", "memcpy", "memcpy (a memcpy node) or kernel");
  if (method != "memcpy" && method != "kernel") {
    throw composition_error("operator '" + spec.operator_name() +
                            "': parameter 'method' must be memcpy or kernel, got '" + method + "'");
  }
  _kernel = method == "kernel";
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void copy::compute(CaptureContext& ctx) {
  if (_kernel) {
    detail::launch_copy(ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"),
                        _elements, ctx.stream(), ctx.programmatic_launch());
    return;
  }
  RESIDENT_CUDA_TRY(cudaMemcpyAsync(ctx.device_memory<float>("out"),
                                    ctx.device_memory<const float>("in"), ctx.port_bytes("out"),
                                    cudaMemcpyDeviceToDevice, ctx.stream()));
}

void affine::setup(OperatorSpec& spec) {
  _elements = elements_param(spec);
  const auto bytes = element_bytes(spec, _elements);
  _scale = spec.param<float>("scale", 2.0F, "multiplier a in a*x + b");
  _offset = spec.param<float>("offset", 1.0F, "offset b in a*x + b");
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void affine::compute(CaptureContext& ctx) {
  detail::launch_affine(ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"),
                        _elements, _scale, _offset, ctx.stream(), ctx.programmatic_launch());
}

void square::setup(OperatorSpec& spec) {
  _elements = elements_param(spec);
  const auto bytes = element_bytes(spec, _elements);
  spec.device_input("in", bytes);
  spec.device_output("out", bytes);
}

void square::compute(CaptureContext& ctx) {
  detail::launch_square(ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"),
                        _elements, ctx.stream(), ctx.programmatic_launch());
}

void sum_reduce::setup(OperatorSpec& spec) {
  _elements = elements_param(spec);
  spec.device_input("in", element_bytes(spec, _elements));
  spec.device_output("out", sizeof(float));
}

void sum_reduce::compute(CaptureContext& ctx) {
  detail::launch_sum_reduce(ctx.device_memory<const float>("in"), ctx.device_memory<float>("out"),
                            _elements, ctx.stream(), ctx.programmatic_launch());
}

}  // namespace resident::ops
