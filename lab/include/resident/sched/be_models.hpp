#pragma once
// Two small best-effort models for the preemption experiments, each a fixed sequence of library
// BE kernels (be_kernels.hpp) over device buffers it owns, and the fp64 CPU references that
// check them.
//
// calls() is one inference: each call reads only the input and what earlier calls wrote, and
// the first call zeroes the scores the last one accumulates into, so the sequence can be run
// again and again. Weights are seeded and deterministic.

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "resident/cuda/buffers.hpp"
#include "resident/sched/be_kernels.hpp"

namespace resident::sched {

// ---- fp64 CPU references (host only: lab/src/sched/be_reference.cpp) ----------------------------
// Same layouts as the kernels. invalid_argument, naming the function, when a span's size does
// not match the shape.

[[nodiscard]] std::vector<double> to_double(std::span<const float> x);
/// C[m x n] = A[m x k] * B[k x n].
[[nodiscard]] std::vector<double> gemm_reference(std::span<const double> a,
                                                 std::span<const double> b, std::int32_t m,
                                                 std::int32_t n, std::int32_t k);
/// NCHW input, KCRS filter, zero padding: NKPQ output.
[[nodiscard]] std::vector<double> conv2d_reference(std::span<const double> input,
                                                   std::span<const double> filter,
                                                   const conv2d_shape& shape);
/// In place: x[i] = act(x[i] + bias[(i / inner) % bias.size()]).
void bias_act_reference(std::span<double> x, std::span<const double> bias, std::int64_t inner,
                        activation act);
/// 2x2, stride 2: [n, c, h, w] to [n, c, h/2, w/2].
[[nodiscard]] std::vector<double> maxpool2d_reference(std::span<const double> input, std::int32_t n,
                                                      std::int32_t c, std::int32_t h,
                                                      std::int32_t w);
/// out[r] = sum of row r of x [rows x cols].
[[nodiscard]] std::vector<double> row_sum_reference(std::span<const double> x, std::int32_t rows,
                                                    std::int32_t cols);

// ---- models ------------------------------------------------------------------------------------

/// What the two models share: an input [batch, ...], scores [batch], the calls of one
/// inference. Buffers are allocated in the constructor, never later. Move-only.
class be_model {
 public:
  virtual ~be_model() = default;

  /// "mlp" or "cnn": the prefix of every call's name.
  [[nodiscard]] virtual std::string name() const = 0;
  /// One inference, in order.
  [[nodiscard]] const std::vector<be_call>& calls() const noexcept { return _calls; }
  [[nodiscard]] std::int32_t batch() const noexcept { return _batch; }
  [[nodiscard]] std::size_t input_elements() const noexcept { return _input_elements; }
  /// One score per sample: the sum of its outputs (logits).
  [[nodiscard]] std::size_t output_elements() const noexcept {
    return static_cast<std::size_t>(_batch);
  }

  /// Synchronous copy into the input buffer; the caller has drained the streams that run the
  /// calls. invalid_argument when x does not hold input_elements() values.
  void set_input(std::span<const float> x);
  /// Synchronous copy of the scores, under the same rule.
  [[nodiscard]] std::vector<float> read_output() const;
  /// The scores the calls compute for input x, in fp64 from the same (host) weights.
  [[nodiscard]] virtual std::vector<double> reference(std::span<const float> x) const = 0;

 protected:
  /// Allocates the input and the scores.
  be_model(std::int32_t batch, std::size_t input_elements);
  be_model(be_model&&) noexcept = default;
  be_model& operator=(be_model&&) noexcept = default;

  [[nodiscard]] float* input() const noexcept { return _buffers[0].data_as<float>(); }
  [[nodiscard]] float* scores() const noexcept { return _buffers[1].data_as<float>(); }
  /// A device buffer of `elements` floats the model owns.
  [[nodiscard]] float* allocate(std::size_t elements);
  /// A device copy of `host` the model owns.
  [[nodiscard]] float* upload(const std::vector<float>& host);
  void add_call(be_call call) { _calls.push_back(std::move(call)); }
  /// The check reference() and set_input() share.
  void check_input(std::span<const float> x, const char* caller) const;
  /// Seeded weights or biases, uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)] (PyTorch's default
  /// for Linear and Conv2d layers): activations stay O(1) through a few layers.
  [[nodiscard]] static std::vector<float> uniform_weights(std::mt19937_64& rng, std::size_t count,
                                                          std::int64_t fan_in);

 private:
  std::int32_t _batch;
  std::size_t _input_elements;
  std::vector<device_buffer> _buffers;  // [0] input, [1] scores, then the rest
  std::vector<be_call> _calls;
};

/// Where an MLP layer adds its bias and applies its activation. `kernel`: a bias_act kernel
/// after the gemm. `fused`: in the gemm's own epilogue (gemm_bias_act), one kernel per layer and
/// one pass over the layer's output fewer. The same values either way, to fp32 rounding.
enum class mlp_bias { kernel, fused };

/// A multi-layer perceptron: input [batch, widths[0]]; layer i is gemm to widths[i + 1], then
/// bias + relu (no activation after the last layer); the scores sum the last layer's outputs.
/// calls(): mlp.scores.fill, mlp.fc1.gemm, mlp.fc1.bias_relu, ..., mlp.fcL.bias,
/// mlp.scores.row_sum; with mlp_bias::fused: mlp.scores.fill, mlp.fc1.gemm_bias_relu, ...,
/// mlp.fcL.gemm_bias, mlp.scores.row_sum.
class mlp_model final : public be_model {
 public:
  /// invalid_argument (before any allocation) when batch <= 0, widths has fewer than 2
  /// entries or one is <= 0.
  mlp_model(std::int32_t batch, std::vector<std::int32_t> widths, std::uint64_t seed,
            mlp_bias bias = mlp_bias::kernel);

  [[nodiscard]] std::string name() const override { return "mlp"; }
  [[nodiscard]] std::vector<double> reference(std::span<const float> x) const override;
  [[nodiscard]] const std::vector<std::int32_t>& widths() const noexcept { return _widths; }

 private:
  std::vector<std::int32_t> _widths;
  std::vector<std::vector<float>> _weights;  // layer i: [widths[i] x widths[i + 1]]
  std::vector<std::vector<float>> _biases;   // layer i: [widths[i + 1]]
};

/// A small CNN on [batch, 3, 32, 32]: conv 3->16 3x3 pad 1, bias relu, maxpool, conv 16->32
/// 3x3 pad 1, bias relu, maxpool, flatten [batch, 2048], fully connected to 10 logits, bias;
/// the scores sum the logits. calls(): cnn.scores.fill, cnn.conv1.conv2d, cnn.conv1.bias_relu,
/// cnn.pool1.maxpool2d, cnn.conv2.conv2d, cnn.conv2.bias_relu, cnn.pool2.maxpool2d,
/// cnn.fc.gemm, cnn.fc.bias, cnn.scores.row_sum.
class cnn_model final : public be_model {
 public:
  static constexpr std::int32_t channels = 3;
  static constexpr std::int32_t side = 32;
  static constexpr std::int32_t classes = 10;

  /// invalid_argument (before any allocation) when batch <= 0.
  cnn_model(std::int32_t batch, std::uint64_t seed);

  [[nodiscard]] std::string name() const override { return "cnn"; }
  [[nodiscard]] std::vector<double> reference(std::span<const float> x) const override;

 private:
  std::vector<float> _conv1_w, _conv1_b, _conv2_w, _conv2_b, _fc_w, _fc_b;
};

}  // namespace resident::sched
