#pragma once
// The lab pipeline's operators on fp32 vectors of `elements` values:
//   copy (in -> out), affine (out = scale * in + offset; 2x+1 by default), square (out = in^2),
//   sum_reduce (out[0] = sum of in, accumulated in fp64 in a fixed order: deterministic).

#include <cstdint>

#include "resident/app/operator.hpp"
#include "resident/cuda/kernel_node.hpp"

namespace resident::ops {

/// Device-to-device copy of `elements` floats. Parameter `method`: "memcpy" (default; a
/// cudaMemcpyAsync, captured as a memcpy node) or "kernel" (a copy kernel, captured as a kernel
/// node; on some GPUs a small copy starts sooner on the SMs than on a copy engine).
class copy final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  /// Values per sample (after setup()).
  [[nodiscard]] std::int64_t elements() const noexcept { return _elements; }

 private:
  std::int64_t _elements{};
  bool _kernel{false};
};

class affine final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  /// Values per sample (after setup()).
  [[nodiscard]] std::int64_t elements() const noexcept { return _elements; }
  /// The values setup() resolved (from code or configuration), for CPU references.
  [[nodiscard]] float scale() const noexcept { return _scale; }
  [[nodiscard]] float offset() const noexcept { return _offset; }

 private:
  std::int64_t _elements{};
  float _scale{};
  float _offset{};
};

class square final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  /// Values per sample (after setup()).
  [[nodiscard]] std::int64_t elements() const noexcept { return _elements; }

 private:
  std::int64_t _elements{};
};

class sum_reduce final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  [[nodiscard]] std::optional<device_form> persistent_form() const override;
  /// Values per sample (after setup()).
  [[nodiscard]] std::int64_t elements() const noexcept { return _elements; }

 private:
  std::int64_t _elements{};
};

/// A source with no inputs whose output "out" is memory the caller owns (e.g. a retained input
/// buffer that new data is copied into before each launch). Enqueues nothing.
class external_source final : public Operator {
 public:
  external_source(void* memory, std::size_t bytes) : _memory(memory), _bytes(bytes) {}
  void setup(OperatorSpec& spec) override { spec.device_output("out", _bytes, _memory); }
  void compute(CaptureContext&) override {}

 private:
  void* _memory;
  std::size_t _bytes;
};

/// A sink whose input "in" is memory the caller owns, so its producer writes straight there.
class external_sink final : public Operator {
 public:
  external_sink(void* memory, std::size_t bytes) : _memory(memory), _bytes(bytes) {}
  void setup(OperatorSpec& spec) override { spec.device_input("in", _bytes, _memory); }
  void compute(CaptureContext&) override {}

 private:
  void* _memory;
  std::size_t _bytes;
};

namespace detail {
// `programmatic`: launch as a programmatic dependent of the stream's previous kernel (see
// CaptureContext::programmatic_launch); the kernels wait on the device for their inputs.
void launch_affine(const float* in, float* out, std::int64_t n, float scale, float offset,
                   cudaStream_t s, bool programmatic = false);
void launch_square(const float* in, float* out, std::int64_t n, cudaStream_t s,
                   bool programmatic = false);
void launch_copy(const float* in, float* out, std::int64_t n, cudaStream_t s,
                 bool programmatic = false);
void launch_sum_reduce(const float* in, float* out, std::int64_t n, cudaStream_t s,
                       bool programmatic = false);
/// Sums in[0, min(*valid, n)): the count is read on the device when the kernel runs, so one
/// captured launch serves every count up to n (padded slots beyond it never reach the sum).
void launch_masked_sum_reduce(const float* in, float* out, std::int64_t n,
                              const std::int64_t* valid, cudaStream_t s);

// The same kernels as graph kernel-node parameters, for retargeting a captured graph in place
// (graph_exec::set_kernel_node_params) without capturing again.
using affine_node = kernel_node_params<const float*, float*, std::int64_t, float, float>;
using square_node = kernel_node_params<const float*, float*, std::int64_t>;
using sum_reduce_node = kernel_node_params<const float*, float*, std::int64_t>;
[[nodiscard]] affine_node make_affine_node(const float* in, float* out, std::int64_t n, float scale,
                                           float offset);
[[nodiscard]] square_node make_square_node(const float* in, float* out, std::int64_t n);
[[nodiscard]] sum_reduce_node make_sum_reduce_node(const float* in, float* out, std::int64_t n);
}  // namespace detail

}  // namespace resident::ops
