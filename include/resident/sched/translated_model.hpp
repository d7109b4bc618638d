#pragma once
// A translated CNN (resident.translate's plan) as best-effort work: its weights and one buffer
// per tensor in device memory, and the preemptible kernel calls of one inference, in order, for
// a be_runner (preemption.hpp) or any stream.
//
// The plan's layers map onto the kernels of be_kernels.hpp and be_layers.hpp:
//   conv2d          conv2d_layer, or depthwise_conv2d when every group holds one input channel
//   scale_shift, act, add, channel_scale   pointwise
//   max_pool, avg_pool                     pool2d
//   global_avg_pool                        global_avg_pool
//   concat                                 channel_copy, once per input
//   linear                                 gemm_bias_act (the weight transposed when loaded)
// Windows, strides and paddings must be square (torchvision's are); anything the kernels do not
// run is refused by the layer's name before anything is allocated.

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/sched/be_kernels.hpp"

namespace resident::sched {

enum class layer_kind : std::int32_t {
  conv2d,
  scale_shift,
  act,
  max_pool,
  avg_pool,
  global_avg_pool,
  add,
  concat,
  channel_scale,
  linear
};

/// The kind named as resident.translate names it ("conv2d", "scale_shift", ...), or nullopt.
[[nodiscard]] std::optional<layer_kind> parse_layer_kind(std::string_view name);
[[nodiscard]] std::string_view to_string(layer_kind kind);
/// The activation named as resident.translate names it ("none", "relu", ...), or nullopt.
[[nodiscard]] std::optional<activation> parse_activation(std::string_view name);

/// One layer of a plan. Tensor 0 is the model's input; every other tensor is one layer's output.
/// Weights, by kind: conv2d `weight` [k, c / groups, r, s] and `bias` [k]; scale_shift `scale`
/// and `shift` [c]; linear `weight` [out, in] (PyTorch's layout) and `bias` [out].
struct plan_layer {
  layer_kind kind{layer_kind::act};
  std::string name;
  std::vector<std::int32_t> inputs;
  std::int32_t output{};
  std::vector<std::int32_t> shape;  // the output's: [n, c, h, w], or [n, features]
  std::array<std::int32_t, 2> kernel{1, 1};
  std::array<std::int32_t, 2> stride{1, 1};
  std::array<std::int32_t, 2> padding{0, 0};
  std::int32_t groups{1};
  activation act{activation::none};
  bool count_include_pad{true};
  std::vector<float> weight;
  std::vector<float> bias;
  std::vector<float> scale;
  std::vector<float> shift;
};

class translated_model {
 public:
  /// Checks the whole plan (invalid_argument naming the layer and what is wrong: a tensor read
  /// before it is written, shapes that do not chain, weights of the wrong size, a rectangular
  /// stride), then allocates and uploads. `input_shape` is [n, c, h, w].
  translated_model(std::vector<std::int32_t> input_shape, std::vector<plan_layer> layers,
                   std::int32_t output);

  /// One inference, in order; each call reads only the input and earlier calls' outputs, so the
  /// sequence can run again and again.
  [[nodiscard]] const std::vector<be_call>& calls() const noexcept { return _calls; }
  [[nodiscard]] const std::vector<std::int32_t>& input_shape() const noexcept {
    return _input_shape;
  }
  [[nodiscard]] const std::vector<std::int32_t>& output_shape() const noexcept {
    return _shapes[static_cast<std::size_t>(_output)];
  }
  [[nodiscard]] std::size_t input_elements() const noexcept;
  [[nodiscard]] std::size_t output_elements() const noexcept;
  /// Weights and biases held on the device, in floats.
  [[nodiscard]] std::size_t parameters() const noexcept { return _parameters; }
  /// Bytes of device memory the model holds (weights and tensors).
  [[nodiscard]] std::size_t device_bytes() const noexcept { return _device_bytes; }

  /// Synchronous copy into the input tensor (the streams that run the calls are drained).
  /// invalid_argument when x does not hold input_elements() values.
  void set_input(std::span<const float> x);
  /// Synchronous copy of the output tensor.
  [[nodiscard]] std::vector<float> read_output() const;
  /// Runs every call once on `s`, none preemptible, and waits: an inference outside any
  /// scheduler (tests, a reference for the preempted runs).
  void run_unpreempted(cudaStream_t s);
  /// The same without the wait: one inference enqueued on `s`.
  void launch_unpreempted(cudaStream_t s);

  /// The plan evaluated on the CPU in fp64 from the same weights (slow: small models only).
  [[nodiscard]] std::vector<double> reference(std::span<const float> x) const;

 private:
  void check_and_shape(const std::vector<plan_layer>& layers);
  void add_layer_calls(const plan_layer& layer);
  [[nodiscard]] float* tensor(std::int32_t id) const;
  [[nodiscard]] float* upload(const std::vector<float>& host);

  std::vector<std::int32_t> _input_shape;
  std::vector<plan_layer> _layers;
  std::int32_t _output{};
  std::vector<std::vector<std::int32_t>> _shapes;  // by tensor id
  std::vector<device_buffer> _tensors;             // by tensor id
  std::vector<device_buffer> _weights;
  std::vector<be_call> _calls;
  std::size_t _parameters{0};
  std::size_t _device_bytes{0};
  device_buffer _done;  // run_unpreempted's done words
};

}  // namespace resident::sched
