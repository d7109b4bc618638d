#include "resident/sched/be_models.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "resident/cuda/error.hpp"

namespace resident::sched {

namespace {

std::int32_t checked_batch(const char* model, std::int32_t batch) {
  if (batch <= 0) {
    throw std::invalid_argument(std::string(model) + ": batch must be > 0, got " +
                                std::to_string(batch));
  }
  return batch;
}

std::size_t mlp_input_elements(std::int32_t batch, const std::vector<std::int32_t>& widths) {
  if (widths.size() < 2) {
    throw std::invalid_argument("mlp_model: widths needs an input and an output width, got " +
                                std::to_string(widths.size()) + " entries");
  }
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] <= 0) {
      throw std::invalid_argument("mlp_model: widths[" + std::to_string(i) + "] must be > 0, got " +
                                  std::to_string(widths[i]));
    }
  }
  return static_cast<std::size_t>(checked_batch("mlp_model", batch)) *
         static_cast<std::size_t>(widths[0]);
}

// The CNN's layers: [b,3,32,32] -conv1-> [b,16,32,32] -pool-> [b,16,16,16] -conv2->
// [b,32,16,16] -pool-> [b,32,8,8] = [b,2048] -fc-> [b,10].
constexpr std::int32_t conv1_out = 16;
constexpr std::int32_t conv2_out = 32;
constexpr std::int32_t pooled1 = cnn_model::side / 2;
constexpr std::int32_t pooled2 = pooled1 / 2;
constexpr std::int32_t features = conv2_out * pooled2 * pooled2;

constexpr conv2d_shape conv1_shape(std::int32_t batch) {
  return {batch, cnn_model::channels, cnn_model::side, cnn_model::side, conv1_out, 3, 3, 1, 1};
}

constexpr conv2d_shape conv2_shape(std::int32_t batch) {
  return {batch, conv1_out, pooled1, pooled1, conv2_out, 3, 3, 1, 1};
}

std::size_t count(std::int64_t elements) { return static_cast<std::size_t>(elements); }

}  // namespace

// ---- be_model
// ------------------------------------------------------------------------------------

be_model::be_model(std::int32_t batch, std::size_t input_elements)
    : _batch(batch), _input_elements(input_elements) {
  if (batch <= 0 || input_elements == 0) {
    throw std::invalid_argument("be_model: batch and input must not be empty");
  }
  _buffers.emplace_back(input_elements * sizeof(float));
  _buffers.emplace_back(static_cast<std::size_t>(batch) * sizeof(float));
}

float* be_model::allocate(std::size_t elements) {
  return _buffers.emplace_back(elements * sizeof(float)).data_as<float>();
}

float* be_model::upload(const std::vector<float>& host) {
  float* device = allocate(host.size());
  RESIDENT_CUDA_TRY(
      cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

void be_model::check_input(std::span<const float> x, const char* caller) const {
  if (x.size() != _input_elements) {
    throw std::invalid_argument(name() + "_model::" + caller + ": the input has " +
                                std::to_string(x.size()) + " values, the model takes " +
                                std::to_string(_input_elements));
  }
}

std::vector<float> be_model::uniform_weights(std::mt19937_64& rng, std::size_t count,
                                             std::int64_t fan_in) {
  const float bound = 1.0F / std::sqrt(static_cast<float>(fan_in));
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> w(count);
  for (auto& x : w) x = dist(rng);
  return w;
}

// Synchronous copies: cudaMemcpy does not wait for the (non-blocking) streams that run the
// calls, which is why the caller drains them first.
void be_model::set_input(std::span<const float> x) {
  check_input(x, "set_input");
  RESIDENT_CUDA_TRY(cudaMemcpy(input(), x.data(), x.size_bytes(), cudaMemcpyHostToDevice));
}

std::vector<float> be_model::read_output() const {
  std::vector<float> out(output_elements());
  RESIDENT_CUDA_TRY(
      cudaMemcpy(out.data(), scores(), out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

// ---- mlp_model
// -----------------------------------------------------------------------------------

mlp_model::mlp_model(std::int32_t batch, std::vector<std::int32_t> widths, std::uint64_t seed,
                     mlp_bias bias)
    : be_model(batch, mlp_input_elements(batch, widths)), _widths(std::move(widths)) {
  std::mt19937_64 rng(seed);
  const std::size_t layers = _widths.size() - 1;
  add_call(make_call("mlp.scores.fill", fill_args{scores(), batch, 0.0F}));
  const float* x = input();
  for (std::size_t i = 0; i < layers; ++i) {
    const std::int32_t in = _widths[i];
    const std::int32_t out = _widths[i + 1];
    const bool last = i + 1 == layers;
    _weights.push_back(uniform_weights(rng, count(std::int64_t{in} * out), in));
    _biases.push_back(uniform_weights(rng, count(out), in));
    const float* w = upload(_weights.back());
    const float* b = upload(_biases.back());
    float* y = allocate(count(std::int64_t{batch} * out));
    const std::string layer = "mlp.fc" + std::to_string(i + 1);
    const activation act = last ? activation::none : activation::relu;
    const gemm_args gemm{x, w, y, batch, out, in};
    if (bias == mlp_bias::fused) {
      add_call(make_call(layer + (last ? ".gemm_bias" : ".gemm_bias_relu"),
                         gemm_bias_act_args{gemm, b, act}));
    } else {
      add_call(make_call(layer + ".gemm", gemm));
      add_call(make_call(layer + (last ? ".bias" : ".bias_relu"),
                         bias_act_args{y, b, std::int64_t{batch} * out, 1, out, act}));
    }
    x = y;
  }
  add_call(make_call("mlp.scores.row_sum", row_sum_args{x, scores(), batch, _widths.back()}));
}

std::vector<double> mlp_model::reference(std::span<const float> x) const {
  check_input(x, "reference");
  const std::size_t layers = _widths.size() - 1;
  std::vector<double> act = to_double(x);
  for (std::size_t i = 0; i < layers; ++i) {
    act = gemm_reference(act, to_double(_weights[i]), batch(), _widths[i + 1], _widths[i]);
    bias_act_reference(act, to_double(_biases[i]), 1,
                       i + 1 == layers ? activation::none : activation::relu);
  }
  return row_sum_reference(act, batch(), _widths.back());
}

// ---- cnn_model
// -----------------------------------------------------------------------------------

cnn_model::cnn_model(std::int32_t batch, std::uint64_t seed)
    : be_model(checked_batch("cnn_model", batch),
               count(std::int64_t{batch} * channels * side * side)) {
  std::mt19937_64 rng(seed);
  const conv2d_shape c1 = conv1_shape(batch);
  const conv2d_shape c2 = conv2_shape(batch);
  const std::int32_t fan1 = c1.c * c1.r * c1.s;
  const std::int32_t fan2 = c2.c * c2.r * c2.s;
  _conv1_w = uniform_weights(rng, count(std::int64_t{c1.k} * fan1), fan1);
  _conv1_b = uniform_weights(rng, count(c1.k), fan1);
  _conv2_w = uniform_weights(rng, count(std::int64_t{c2.k} * fan2), fan2);
  _conv2_b = uniform_weights(rng, count(c2.k), fan2);
  _fc_w = uniform_weights(rng, count(std::int64_t{features} * classes), features);
  _fc_b = uniform_weights(rng, count(classes), features);

  const std::int64_t b = batch;
  float* conv1 = allocate(count(b * conv1_out * side * side));
  float* pool1 = allocate(count(b * conv1_out * pooled1 * pooled1));
  float* conv2 = allocate(count(b * conv2_out * pooled1 * pooled1));
  float* pool2 = allocate(count(b * features));
  float* logits = allocate(count(b * classes));

  add_call(make_call("cnn.scores.fill", fill_args{scores(), b, 0.0F}));
  add_call(make_call("cnn.conv1.conv2d", conv2d_args{input(), upload(_conv1_w), conv1, c1}));
  add_call(make_call("cnn.conv1.bias_relu",
                     bias_act_args{conv1, upload(_conv1_b), b * conv1_out * side * side,
                                   side * side, conv1_out, activation::relu}));
  add_call(
      make_call("cnn.pool1.maxpool2d", maxpool2d_args{conv1, pool1, batch, conv1_out, side, side}));
  add_call(make_call("cnn.conv2.conv2d", conv2d_args{pool1, upload(_conv2_w), conv2, c2}));
  add_call(make_call("cnn.conv2.bias_relu",
                     bias_act_args{conv2, upload(_conv2_b), b * conv2_out * pooled1 * pooled1,
                                   pooled1 * pooled1, conv2_out, activation::relu}));
  add_call(make_call("cnn.pool2.maxpool2d",
                     maxpool2d_args{conv2, pool2, batch, conv2_out, pooled1, pooled1}));
  add_call(
      make_call("cnn.fc.gemm", gemm_args{pool2, upload(_fc_w), logits, batch, classes, features}));
  add_call(make_call("cnn.fc.bias", bias_act_args{logits, upload(_fc_b), b * classes, 1, classes,
                                                  activation::none}));
  add_call(make_call("cnn.scores.row_sum", row_sum_args{logits, scores(), batch, classes}));
}

std::vector<double> cnn_model::reference(std::span<const float> x) const {
  check_input(x, "reference");
  const std::int32_t b = batch();
  std::vector<double> y = conv2d_reference(to_double(x), to_double(_conv1_w), conv1_shape(b));
  bias_act_reference(y, to_double(_conv1_b), side * side, activation::relu);
  y = maxpool2d_reference(y, b, conv1_out, side, side);
  y = conv2d_reference(y, to_double(_conv2_w), conv2_shape(b));
  bias_act_reference(y, to_double(_conv2_b), pooled1 * pooled1, activation::relu);
  y = maxpool2d_reference(y, b, conv2_out, pooled1, pooled1);
  y = gemm_reference(y, to_double(_fc_w), b, classes, features);
  bias_act_reference(y, to_double(_fc_b), 1, activation::none);
  return row_sum_reference(y, b, classes);
}

}  // namespace resident::sched
